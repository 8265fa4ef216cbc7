/* proto.c -- the status reply of the update port and the ground's upload
 * loop (proto.h): ask, resend what the status marks missing, ask again. */
#include "proto.h"

#include <assert.h>
#include <limits.h>
#include <string.h>

#include "platform.h"

void proto_put16(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 8), p[1] = (uint8_t)v;
}

void proto_put32(uint8_t *p, uint32_t v) {
    proto_put16(p, v >> 16), proto_put16(p + 2, v & 0xFFFFu);
}

void proto_put64(uint8_t *p, uint64_t v) {
    proto_put32(p, (uint32_t)(v >> 32)), proto_put32(p + 4, (uint32_t)v);
}

uint32_t proto_get16(const uint8_t *p) {
    return (uint32_t)p[0] << 8 | p[1];
}

uint32_t proto_get32(const uint8_t *p) {
    return proto_get16(p) << 16 | proto_get16(p + 2);
}

uint64_t proto_get64(const uint8_t *p) {
    return (uint64_t)proto_get32(p) << 32 | proto_get32(p + 4);
}

size_t proto_answer(const uint8_t *msg, int code, const char *text, uint8_t *out,
                    size_t cap) {
    assert(cap >= 8);
    size_t n = strlen(text) < cap - 7 ? strlen(text) : cap - 7;
    out[0] = 'A';
    memcpy(out + 1, msg + 1, 2);
    proto_put32(out + 3, (uint32_t)code);
    memcpy(out + 7, text, n);
    return 7 + n;
}

enum { S_SEQ = 1, S_CODE = 3, S_INST = 7, S_MISSING = 8, S_FIRST = 12, S_NBITS = 16,
       S_MAP = 18 };

size_t proto_status_build(const up_store *s, const up_result *r, uint16_t seq,
                          uint8_t *out) {
    uint32_t first = 0, nbits = 0, list[PROTO_BITMAP_BITS];
    uint32_t missing = up_missing(s, list, PROTO_BITMAP_BITS);
    uint32_t listed = missing < PROTO_BITMAP_BITS ? missing : PROTO_BITMAP_BITS;
    if (listed) {
        first = list[0];
        for (uint32_t k = 0; k < listed && list[k] - first < PROTO_BITMAP_BITS; k++)
            nbits = list[k] - first + 1;
    }
    nbits = (nbits + 7) / 8 * 8;
    out[0] = 'S';
    proto_put16(out + S_SEQ, seq), proto_put32(out + S_CODE, (uint32_t)r->code);
    out[S_INST] = (uint8_t)r->installed;
    proto_put32(out + S_MISSING, missing), proto_put32(out + S_FIRST, first);
    proto_put16(out + S_NBITS, nbits);
    memset(out + S_MAP, 0, nbits / 8);
    for (uint32_t k = 0; k < listed && list[k] - first < nbits; k++)
        out[S_MAP + (list[k] - first) / 8] |= (uint8_t)(1u << ((list[k] - first) % 8));
    size_t said = r->code || r->installed ? strnlen(r->detail, PROTO_DETAIL - 1) : 0;
    memcpy(out + S_MAP + nbits / 8, r->detail, said);
    return S_MAP + nbits / 8 + said;
}

int proto_status_parse(const uint8_t *msg, size_t len, proto_status *st) {
    if (len < S_MAP || msg[0] != 'S')
        return -1;
    st->seq = (uint16_t)proto_get16(msg + S_SEQ), st->code = proto_get32(msg + S_CODE);
    st->installed = msg[S_INST];
    st->missing = proto_get32(msg + S_MISSING), st->first = proto_get32(msg + S_FIRST);
    st->nbits = (uint16_t)proto_get16(msg + S_NBITS);
    /* a code is errors.h's, an int: one above INT_MAX was the ground's
     * -1 or PROTO_STALLED once ground_upload returned it, so an answer
     * was said to be none, or a refusal a stall (found by fuzzing) */
    if (st->code > INT_MAX || st->nbits > PROTO_BITMAP_BITS || st->nbits % 8 ||
        len < S_MAP + st->nbits / 8u)
        return -1;
    size_t said = len - S_MAP - st->nbits / 8u; /* the sentence after the bitmap */
    if (said >= PROTO_DETAIL)
        return -1;
    memcpy(st->bitmap, msg + S_MAP, st->nbits / 8u);
    memcpy(st->detail, msg + S_MAP + st->nbits / 8u, said);
    st->detail[said] = 0;
    proto_printable(st->detail, said, 0); /* it is printed */
    return 0;
}

void proto_printable(char *text, size_t n, int lines) {
    for (size_t k = 0; k < n; k++)
        if (((unsigned char)text[k] < 32 && !(lines && text[k] == '\n')) || text[k] == 127)
            text[k] = '?';
}

/* Asks (a manifest until one is answered, then a status query) and
 * waits up to io->timeout_ms for the answer to this very question: an
 * answer to another one does not begin the wait again, or a stream of
 * them held the upload for as long as they came. */
static int ask(const ground_io *io, const up_manifest *m, int answered,
               uint16_t seq, proto_status *st) {
    uint8_t msg[3 + UP_MANIFEST_BYTES], reply[PROTO_STATUS_MAX];
    size_t len;
    uint64_t end = plat_now_ms() + (uint64_t)io->timeout_ms;
    msg[0] = answered ? 'Q' : 'M';
    proto_put16(msg + 1, seq);
    if (!answered)
        up_manifest_encode(m, msg + 3);
    if (io->send(io->ctx, msg, answered ? 3 : sizeof msg))
        return -1;
    int wait = io->timeout_ms;
    while (io->recv(io->ctx, wait, reply, sizeof reply, &len) == 1) {
        if (proto_status_parse(reply, len, st) == 0 && st->seq == seq)
            return 0;
        if (io->timeout_ms >= 0 && (wait = plat_ms_left(end)) == 0)
            return -1; /* < 0: for ever, as csp_node_recv's */
    }
    return -1;
}

/* Sends the chunks st's bitmap marks. Its bits past the upload's last
 * chunk name none: counted against the chunks after `first`, as
 * first + b, 32 bits, wraps past 2^32 to a chunk the status never named
 * (a first of 2^32 - 8 had bits 8 on resend chunks 0 on). */
static int resend(const ground_io *io, const up_manifest *m, const uint8_t *payload,
                  const proto_status *st, uint64_t *sent) {
    uint8_t msg[1 + UP_CHUNK_HDR + UP_CHUNK_MAX];
    uint32_t chunks = up_chunk_count(m);
    uint32_t named = st->first < chunks ? chunks - st->first : 0;
    msg[0] = 'C';
    for (uint32_t b = 0; b < st->nbits && b < named; b++) {
        if (!(st->bitmap[b / 8] & (1u << (b % 8))))
            continue;
        size_t len = up_chunk_build(m, payload, st->first + b, msg + 1);
        if (io->send(io->ctx, msg, 1 + len))
            return -1;
        (*sent)++;
    }
    return 0;
}

/* Whether the chunks missing on board fell below the fewest any answer
 * gave so far (*fewest, then updated): a status that does not say so is
 * no progress, however it is answered. Measured against the last answer
 * only, a count that went down and up by turns began the rounds anew at
 * each fall, and held the upload for ever. A count over the upload's
 * chunks is no progress either, however it falls: from 2^32 - 1 by one
 * an answer it held the upload for 4 billion rounds; within the chunks,
 * falls are as many as the chunks at most. */
static int progressed(const proto_status *st, uint32_t chunks, uint32_t *fewest) {
    if (st->missing > chunks || st->missing >= *fewest)
        return 0;
    *fewest = st->missing;
    return 1;
}

int ground_upload(const ground_io *io, const up_manifest *m,
                  const uint8_t *payload, uint64_t *sent, proto_status *last) {
    uint16_t seq = io->first_seq;
    unsigned unanswered = 0, stalled = 0, restarts = 0;
    uint32_t fewest = UINT32_MAX;
    int answered = 0;
    *sent = 0;
    memset(last, 0, sizeof *last);
    while (unanswered < io->max_asks) {
        if (ask(io, m, answered, seq++, last)) {
            unanswered++;
            continue;
        }
        unanswered = 0, answered = 1;
        if (last->code || last->installed)
            return (int)last->code;
        if (last->missing == 0) { /* a restart finished it, or a stale store */
            if (++restarts > PROTO_STALL_RESTARTS)
                return PROTO_STALLED;
            answered = 0, stalled = 0, fewest = UINT32_MAX; /* counted anew */
            continue;
        }
        stalled = progressed(last, up_chunk_count(m), &fewest) ? 0 : stalled + 1;
        if (stalled >= PROTO_STALL_ROUNDS)
            return PROTO_STALLED;
        if (resend(io, m, payload, last, sent))
            return -1;
    }
    return -1;
}
