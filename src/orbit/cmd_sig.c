/* cmd_sig.c -- signed commands (cmd_sig.h): the bytes the signature
 * covers, appending counter and signature on the ground, and checking
 * them and the counter on board. */
#include "cmd_sig.h"

#include <sodium.h>
#include <string.h>

#include "errors.h"
#include "proto.h"
#include "slots.h"

#define COVERED_MAX (5 + CMD_SIG_BODY_MAX + 8)

/* The counter, big endian as the link's numbers are (proto.h). */
static void put64(uint8_t *p, uint64_t v) {
    proto_put32(p, (uint32_t)(v >> 32)), proto_put32(p + 4, (uint32_t)v);
}

static uint64_t get64(const uint8_t *p) {
    return (uint64_t)proto_get32(p) << 32 | proto_get32(p + 4);
}

/* What the signature covers, into out (COVERED_MAX bytes): "DCM1", the
 * port, the command's len bytes (at most CMD_SIG_BODY_MAX) and the
 * counter's 8 as they travel. Its length. */
static size_t covered_bytes(uint8_t port, const uint8_t *body, size_t len,
                            const uint8_t counter[8], uint8_t *out) {
    memcpy(out, "DCM1", 4);
    out[4] = port;
    memcpy(out + 5, body, len);
    memcpy(out + 5 + len, counter, 8);
    return 5 + len + 8;
}

size_t cmd_sig_append(uint8_t port, uint8_t *msg, size_t len, uint64_t counter,
                      const uint8_t sk[UP_SK_BYTES]) {
    uint8_t covered[COVERED_MAX];
    put64(msg + len, counter);
    size_t n = covered_bytes(port, msg, len, msg + len, covered);
    if (sodium_init() < 0) /* idempotent; picks the implementations */
        memset(msg + len + 8, 0, UP_SIG_BYTES);
    else
        crypto_sign_detached(msg + len + 8, NULL, covered, n, sk);
    return len + CMD_SIG_TRAILER;
}

int cmd_sig_take(const char *dir, const uint8_t pk[UP_PK_BYTES], uint8_t port,
                 const uint8_t *msg, size_t len, size_t *body_len, char *detail,
                 size_t cap) {
    char what = msg[0] >= 32 && msg[0] < 127 ? (char)msg[0] : '?';
    if (len <= CMD_SIG_TRAILER || len - CMD_SIG_TRAILER > CMD_SIG_BODY_MAX)
        return dipp_say(detail, cap, DIPP_E_UP_MESSAGE,
                        "'%c' of %zu bytes: not a signed command (its bytes, then "
                        "a counter and the ground's signature, %d bytes)",
                        what, len, CMD_SIG_TRAILER);
    size_t body = len - CMD_SIG_TRAILER;
    const uint8_t *counter = msg + body, *sig = counter + 8;
    uint8_t covered[COVERED_MAX];
    size_t n = covered_bytes(port, msg, body, counter, covered);
    unsigned long long c = get64(counter);
    if (sodium_init() < 0 || crypto_sign_verify_detached(sig, covered, n, pk) != 0)
        return dipp_say(detail, cap, DIPP_E_UP_SIGNATURE,
                        "'%c' #%llu: the signature does not verify with the key on board",
                        what, c);
    uint64_t floor;
    char err[300];
    if (slot_command_floor(dir, &floor, err, sizeof err))
        return dipp_say(detail, cap, DIPP_E_UP_STORE, "%s", err);
    if (c <= floor)
        return dipp_say(detail, cap, DIPP_E_UP_REPLAY,
                        "'%c' #%llu: the command counter is not above %llu on board",
                        what, c, (unsigned long long)floor);
    if (slot_raise_command_floor(dir, c, err, sizeof err))
        return dipp_say(detail, cap, DIPP_E_UP_STORE, "%s", err);
    *body_len = body;
    return 0;
}
