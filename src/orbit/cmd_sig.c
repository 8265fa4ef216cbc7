/* cmd_sig.c -- signed commands (cmd_sig.h): the bytes the signature
 * covers, appending counter and signature on the ground, checking them
 * and the counter on board, and a port's serving of them: done once,
 * the answer kept for a resend. */
#include "cmd_sig.h"

#include <assert.h>
#include <sodium.h>
#include <string.h>

#include "errors.h"
#include "proto.h"
#include "slots.h"

#define COVERED_MAX (5 + CMD_SIG_BODY_MAX + 8)

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
    assert(len <= CMD_SIG_BODY_MAX);
    proto_put64(msg + len, counter);
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
    assert(len >= 1);
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
    unsigned long long c = proto_get64(counter);
    if (sodium_init() < 0 || crypto_sign_verify_detached(sig, covered, n, pk) != 0)
        return dipp_say(detail, cap, DIPP_E_UP_SIGNATURE,
                        "'%c' #%llu: the signature does not verify with the key on board",
                        what, c);
    uint64_t floor;
    char err[300];
    int rc = slot_take_counter(dir, c, &floor, err, sizeof err);
    if (rc < 0)
        return dipp_say(detail, cap, DIPP_E_UP_STORE, "%s", err);
    if (rc > 0)
        return dipp_say(detail, cap, DIPP_E_UP_REPLAY,
                        "'%c' #%llu: the command counter is not above %llu on board",
                        what, c, (unsigned long long)floor);
    *body_len = body;
    return 0;
}

/* The answer kept for msg when it is the command taken last, copied into
 * out (cap bytes at most): its length, or 0 when msg is another. */
static size_t kept_answer(const cmd_port *p, const uint8_t *msg, size_t len, uint8_t *out,
                          size_t cap) {
    if (!p->req_len || len != p->req_len || memcmp(msg, p->req, len))
        return 0;
    size_t n = p->reply_len < cap ? p->reply_len : cap;
    memcpy(out, p->reply, n);
    return n;
}

size_t cmd_serve(cmd_port *p, const char *dir, const uint8_t pk[UP_PK_BYTES],
                 const uint8_t *msg, size_t len, cmd_do_fn fn, void *ctx, uint8_t *out,
                 size_t cap) {
    char why[256];
    size_t body = 0, n = kept_answer(p, msg, len, out, cap);
    assert(len >= 3 && pk);
    if (n)
        return n;
    int code = cmd_sig_take(dir, pk, p->port, msg, len, &body, why, sizeof why);
    if (code)
        p->refused++; /* not kept: anyone's message must not displace the answer */
    else
        code = fn(ctx, msg, body, why, sizeof why);
    n = proto_answer(msg, code, why, out, cap);
    if (body) {
        assert(len <= sizeof p->req && n <= sizeof p->reply);
        memcpy(p->req, msg, len), p->req_len = len;
        memcpy(p->reply, out, n), p->reply_len = n;
    }
    return n;
}
