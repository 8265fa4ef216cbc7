/* fuzz_link.c -- fuzz target (fuzz.h) of the DIPP link's readers of bytes
 * from the radio (docs/orbit.md, "The link"), which fuzz_proto (aegisd's
 * JSON requests) does not reach. The input's first byte picks the reader,
 * the rest is the message:
 *   0 a CSP frame (csp_parse): what it accepts frames again to itself;
 *   1 an update manifest (up_manifest_decode): accepted fields in range,
 *     encoding and decoding again gives the same manifest;
 *   2 a status reply, on the ground (proto_status_parse): its code an int,
 *     its bitmap and printable sentence within their arrays;
 *   3 a slot write (slot_msg_check): an unsigned one refused with a
 *     message; the same fields signed with the board's key accepted as
 *     they are;
 *   4 the procedure port (sat_dish_handle, a board with no procedures):
 *     an answer 'A' to the message's sequence number, within its frame;
 *     a first byte with its top bit set is the rest signed with the
 *     board's key and the next counter (cmd_sig.h), its top bit cleared,
 *     so that a run, stop or delete reaches what the signature guards.
 * Seeds: seeds/link/, one message of each kind.
 */
#include "fuzz.h"

#include <limits.h>
#include <sodium.h>
#include <string.h>
#include <unistd.h>

#include "cmd_sig.h"
#include "csp.h"
#include "errors.h"
#include "proto.h"
#include "sat_dish.h"
#include "slot_msg.h"
#include "upload_msg.h"

FUZZ_TOKENS("\x00\x01\x02\x03\x04\x0a\x14\x16\x18\xa2\xc8\xff"
            "DUP1DSW1SPQTLXESIAK");

static void link_csp(const uint8_t *data, size_t size) {
    csp_id id, again;
    const uint8_t *body, *body2;
    size_t len, len2;
    static uint8_t frame[CSP_HEADER_BYTES + CSP_MTU];
    if (csp_parse(data, size, &id, &body, &len) != 0)
        return;
    size_t crc = id.flags & CSP_F_CRC32 ? 4 : 0;
    FUZZ_CHECK(body == data + CSP_HEADER_BYTES && len + CSP_HEADER_BYTES + crc == size,
               "a frame's data outside the frame");
    int n = csp_frame(&id, body, len, frame, sizeof frame);
    if (len + crc > CSP_MTU) {
        FUZZ_CHECK(n < 0, "a frame over the MTU framed");
        return;
    }
    FUZZ_CHECK(n > 0 && csp_parse(frame, (size_t)n, &again, &body2, &len2) == 0 &&
                   !memcmp(&id, &again, sizeof id) && len2 == len &&
                   !memcmp(body, body2, len),
               "a frame accepted that does not frame again to itself");
}

static void link_manifest(const uint8_t *data, size_t size) {
    up_manifest m, again;
    uint8_t wire[UP_MANIFEST_BYTES];
    char err[256] = "";
    if (up_manifest_decode(data, size, &m, err, sizeof err) != 0) {
        FUZZ_CHECK(err[0], "a manifest refused without a message");
        return;
    }
    FUZZ_CHECK(up_name_ok(m.name), "a manifest's name against its rule");
    FUZZ_CHECK(m.chunk_size >= UP_CHUNK_MIN && m.chunk_size <= UP_CHUNK_MAX &&
                   up_chunk_count(&m) <= UP_MAX_CHUNKS,
               "a manifest's chunks out of range");
    FUZZ_CHECK(m.size >= 1 && m.size <= UP_MAX_SIZE && m.payload_size >= 1 &&
                   m.payload_size <= UP_MAX_SIZE,
               "a manifest's sizes out of range");
    up_manifest_encode(&m, wire);
    FUZZ_CHECK(up_manifest_decode(wire, sizeof wire, &again, err, sizeof err) == 0,
               "a manifest that does not decode once encoded");
    /* the name's bytes past its NUL are not the manifest's */
    memset(m.name + strlen(m.name), 0, UP_NAME_MAX - strlen(m.name));
    FUZZ_CHECK(!memcmp(&m, &again, sizeof m), "a manifest that encodes otherwise");
}

static void link_status(const uint8_t *data, size_t size) {
    static proto_status st;
    if (proto_status_parse(data, size, &st) != 0)
        return;
    FUZZ_CHECK(st.nbits <= PROTO_BITMAP_BITS && st.nbits % 8 == 0, "a bitmap out of range");
    FUZZ_CHECK(st.code <= INT_MAX, "a code that is no int (ground_upload returns it)");
    size_t n = strnlen(st.detail, PROTO_DETAIL);
    FUZZ_CHECK(n < PROTO_DETAIL, "a status sentence without its end");
    for (size_t k = 0; k < n; k++)
        FUZZ_CHECK((unsigned char)st.detail[k] >= 32 && st.detail[k] != 127,
                   "a control byte in a status sentence");
}

/* The board's key pair, the same for every input. */
static void board_keys(uint8_t pk[UP_PK_BYTES], uint8_t sk[UP_SK_BYTES]) {
    static const uint8_t seed[crypto_sign_SEEDBYTES] = {42};
    FUZZ_CHECK(sodium_init() >= 0, "sodium_init");
    crypto_sign_seed_keypair(pk, sk, seed);
}

static void link_slot(const uint8_t *data, size_t size) {
    uint8_t pk[UP_PK_BYTES], sk[UP_SK_BYTES];
    static uint8_t msg[SLOT_MSG_MAX];
    slot_msg m, again;
    char detail[256] = "";
    board_keys(pk, sk);
    int code = slot_msg_check(data, size, pk, &m, detail, sizeof detail);
    FUZZ_CHECK(code != 0 && detail[0], "an unsigned slot write taken, or refused silently");
    if (code == DIPP_E_UP_MESSAGE) /* m is filled only past the layout's checks */
        return;
    size_t n = slot_msg_build(&m, sk, msg);
    FUZZ_CHECK(n == size, "a slot write that builds to another length");
    FUZZ_CHECK(slot_msg_check(msg, n, pk, &again, detail, sizeof detail) == 0 &&
                   again.seq == m.seq && again.kind == m.kind && again.slot == m.slot &&
                   again.version == m.version && again.len == m.len &&
                   !memcmp(again.def, m.def, m.len),
               "a signed slot write refused, or read otherwise");
}

/* The procedure store's folder: empty, the same for every input (no
 * message here adds to it), removed at exit. */
static char store_dir[128];

/* The folder and what a signed command writes there: its counter's
 * record (slots.h), replaced through a temporary file a crash may
 * leave. */
static void remove_store(void) {
    char path[160];
    snprintf(path, sizeof path, "%s/commands", store_dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/.commands.tmp", store_dir);
    unlink(path);
    rmdir(store_dir);
}

static void link_procs(const uint8_t *data, size_t size) {
    static sat_dish d;
    static uint8_t pk[UP_PK_BYTES], sk[UP_SK_BYTES];
    static uint64_t counter;
    uint8_t out[CSP_MTU], msg[CMD_SIG_BODY_MAX + CMD_SIG_TRAILER];
    if (!store_dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(store_dir, sizeof store_dir, "%s/aegis-fuzz-link-XXXXXX",
                 tmp && *tmp ? tmp : "/tmp");
        FUZZ_CHECK(mkdtemp(store_dir) != NULL, "mkdtemp");
        atexit(remove_store);
        board_keys(pk, sk);
    }
    const char *dir = store_dir;
    sat_dish_open(&d, dir, 0);
    d.pk = pk;
    if (size > 0 && size <= CMD_SIG_BODY_MAX && data[0] & 0x80) {
        memcpy(msg, data, size);
        msg[0] &= 0x7f;
        data = msg, size = cmd_sig_append(DIPP_PORT_PROCS, msg, size, ++counter, sk);
    }
    size_t n = sat_dish_handle(&d, data, size, out, sizeof out);
    if (size < 3) {
        FUZZ_CHECK(n == 0, "an answer to a message without a sequence number");
        return;
    }
    FUZZ_CHECK(n >= 7 && n <= sizeof out && out[0] == 'A' && !memcmp(out + 1, data + 1, 2),
               "a procedure port answer malformed");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    switch (data[0] % 5) {
    case 0: link_csp(data + 1, size - 1); break;
    case 1: link_manifest(data + 1, size - 1); break;
    case 2: link_status(data + 1, size - 1); break;
    case 3: link_slot(data + 1, size - 1); break;
    default: link_procs(data + 1, size - 1); break;
    }
    return 0;
}
