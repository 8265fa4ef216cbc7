/* fuzz_ground_upload.c -- fuzz target (fuzz.h) of the ground's upload
 * client (ground_upload, proto.h) against whatever comes back on port 20:
 * the replies are the input's, through the ground_io the link gives it
 * (`dipp ground upload`'s io_recv hands over each frame for port 20 as it
 * came). The satellite here never tires: its replies come round again and
 * again, so the client must end by its own bounds. It must:
 *   - end: with the satellite's code only when a status of the question it
 *     asked last said so (0 only when installed); -1 only when its last
 *     max_asks questions got no status of theirs; PROTO_STALLED only after
 *     answers with chunks missing (or none missing and nothing installed)
 *     and within the rounds proto.h allows; never a crash or a hang;
 *   - ask at most as often as its bounds allow (PROTO_STALL_ROUNDS rounds
 *     without progress, PROTO_STALL_RESTARTS restarts, max_asks silences);
 *   - send only chunks of the upload, whole, that the last status marked.
 *
 * The input: a byte of settings (bits 0-2 the upload's chunks less one,
 * 3-4 max_asks less one, 5-6 the wait: 1000 ms, 0 or for ever), then
 * records, each a flags byte, two bytes of length (little endian) and the
 * reply: flag 1 puts the last question's sequence number into it (bytes
 * 1-2), flag 2 makes the record a wait that ends with nothing heard. A
 * wait ends after REPLIES_PER_WAIT replies too (the time a stream of
 * replies takes). Seeds: seeds/ground_upload/.
 */
#include "fuzz.h"

#include <string.h>

#include "proto.h"
#include "upload_msg.h"

FUZZ_TOKENS("\x00\x01\x02\x03\x04\x08\x10\x12\x20\x40\x80\xff" "S");

#define RECORDS_MAX 64
#define REPLIES_PER_WAIT 8

typedef struct reply {
    uint8_t flags;
    const uint8_t *bytes;
    size_t len;
} reply;

/* The satellite: its replies, the next one; and what the client did. */
static struct {
    reply r[RECORDS_MAX];
    size_t n, next;
    up_manifest m;
    const uint8_t *payload;
    uint8_t question[3];      /* the last question's type and number */
    unsigned asks, heard;     /* questions; replies in this wait */
    unsigned silent;          /* questions in a row without a status of theirs */
    unsigned long recvs;
    int answered;             /* the last question got its status */
    proto_status last;        /* the last status of a question */
    uint64_t chunks;
} sat;

static unsigned long asks_max(unsigned max_asks, uint32_t chunks) {
    /* rounds between restarts: PROTO_STALL_ROUNDS after each of at most
     * chunks + 1 falls; max_asks - 1 silences before each answer */
    return (unsigned long)(PROTO_STALL_RESTARTS + 1) * (chunks + 1) * PROTO_STALL_ROUNDS *
               max_asks + max_asks;
}

static int io_send(void *ctx, const uint8_t *msg, size_t len) {
    FUZZ_CHECK(len >= 1, "an empty message");
    if (msg[0] == 'C') { /* a chunk the last status marked, whole */
        static uint8_t want[UP_CHUNK_HDR + UP_CHUNK_MAX];
        FUZZ_CHECK(sat.answered && len >= 1 + UP_CHUNK_HDR, "a chunk sent unasked");
        uint32_t k = msg[5] | msg[6] << 8 | msg[7] << 16 | (uint32_t)msg[8] << 24;
        uint32_t b = k - sat.last.first;
        FUZZ_CHECK(k < up_chunk_count(&sat.m) && b < sat.last.nbits &&
                       sat.last.bitmap[b / 8] & (1u << (b % 8)),
                   "a chunk sent that the status did not mark");
        size_t n = up_chunk_build(&sat.m, sat.payload, k, want);
        FUZZ_CHECK(len == 1 + n && !memcmp(msg + 1, want, n), "a chunk sent otherwise");
        sat.chunks++;
        return 0;
    }
    FUZZ_CHECK((msg[0] == 'M' && len == 3 + UP_MANIFEST_BYTES) || (msg[0] == 'Q' && len == 3),
               "a question malformed");
    if (sat.asks && !sat.answered)
        sat.silent++;
    else
        sat.silent = 0;
    memcpy(sat.question, msg, 3);
    sat.asks++, sat.heard = 0, sat.answered = 0;
    return 0;
}

static int io_recv(void *ctx, int timeout_ms, uint8_t *msg, size_t cap, size_t *len) {
    FUZZ_CHECK(++sat.recvs <= (sat.asks + 1) * (unsigned long)(REPLIES_PER_WAIT + 1),
               "the client waits for ever");
    if (!sat.n || sat.heard++ == REPLIES_PER_WAIT)
        return 0;
    const reply *r = &sat.r[sat.next++ % sat.n];
    if (r->flags & 2 || r->len > cap) /* nothing; over cap, csp_node_recv drops it */
        return 0;
    memcpy(msg, r->bytes, r->len);
    if (r->flags & 1 && r->len >= 3)
        memcpy(msg + 1, sat.question + 1, 2);
    *len = r->len;
    /* what the client may take it for: a status of its question */
    static proto_status st;
    if (proto_status_parse(msg, r->len, &st) == 0 && !memcmp(msg + 1, sat.question + 1, 2)) {
        sat.answered = 1;
        sat.last = st;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static uint8_t module[8 * UP_CHUNK_MIN];
    static const uint8_t sk[UP_SK_BYTES];
    if (size < 1)
        return 0;
    memset(&sat, 0, sizeof sat);
    uint32_t chunks = (data[0] & 7) + 1;
    unsigned max_asks = (data[0] >> 3 & 3) + 1;
    int wait = (int[]){1000, 0, -1, 1000}[data[0] >> 5 & 3];
    for (data++, size--; sat.n < RECORDS_MAX && size >= 3;) {
        size_t len = (size_t)(data[1] | data[2] << 8);
        sat.r[sat.n].flags = data[0];
        data += 3, size -= 3;
        len = len < size ? len : size;
        sat.r[sat.n].bytes = data, sat.r[sat.n].len = len;
        sat.n++;
        data += len, size -= len;
    }
    /* an upload of `chunks` chunks of 64 bytes, the last one short */
    for (size_t k = 0; k < sizeof module; k++)
        module[k] = (uint8_t)(k * 13 + 1);
    up_manifest m = {.kind = UP_KIND_PROCS, .chunk_size = UP_CHUNK_MIN, .version = 3,
                     .key_serial = 1, .name = "plan"};
    uint8_t *payload;
    char err[256];
    FUZZ_CHECK(up_prepare(&m, module, chunks * UP_CHUNK_MIN - 10, NULL, 0, 0, sk, &payload,
                          err, sizeof err) == 0 && up_chunk_count(&m) == chunks,
               "the upload cannot be prepared");
    sat.m = m, sat.payload = payload;
    ground_io io = {io_send, io_recv, NULL, wait, max_asks, 0xfff0};
    uint64_t sent;
    proto_status last;
    int code = ground_upload(&io, &m, payload, &sent, &last);
    free(payload);
    FUZZ_CHECK(sat.asks <= asks_max(max_asks, chunks), "the client asked past its bounds");
    FUZZ_CHECK(sent == sat.chunks, "chunks sent miscounted");
    if (code == -1) {
        FUZZ_CHECK(!sat.answered && sat.silent + 1 >= max_asks,
                   "no answer said after a status of the question");
    } else {
        FUZZ_CHECK(sat.answered, "an outcome said without a status of the question");
        FUZZ_CHECK(last.seq == sat.last.seq && last.code == sat.last.code &&
                       last.installed == sat.last.installed &&
                       last.missing == sat.last.missing && last.first == sat.last.first &&
                       last.nbits == sat.last.nbits &&
                       !memcmp(last.bitmap, sat.last.bitmap, last.nbits / 8u) &&
                       !strcmp(last.detail, sat.last.detail),
                   "an outcome of another status");
        if (code < 0 && code != PROTO_STALLED)
            fprintf(stderr, "ground_upload: %d after a status of code %u\n", code,
                    (unsigned)last.code);
        if (code == PROTO_STALLED)
            FUZZ_CHECK(!last.code && !last.installed, "stalled said of an outcome");
        else
            FUZZ_CHECK(code >= 0 && (uint32_t)code == last.code &&
                           (code || last.installed),
                       "the satellite's code said otherwise");
    }
    return 0;
}
