/* slot_msg.c -- signed slot writes (slot_msg.h): the bytes the signature
 * covers, building a write on the ground and checking it on board. */
#include "slot_msg.h"

#include <sodium.h>
#include <string.h>

#include "errors.h"
#include "proto.h"

#define SIGNED_MAX (10 + SLOT_MAX_BYTES)

/* What the signature covers, into out (SIGNED_MAX bytes): its length. */
static size_t signed_bytes(const slot_msg *m, uint8_t *out) {
    memcpy(out, "DSW1", 4);
    out[4] = m->kind == SLOT_PIPELINE ? 1 : 2;
    out[5] = m->slot;
    proto_put32(out + 6, m->version);
    memcpy(out + 10, m->def, m->len);
    return 10 + m->len;
}

size_t slot_msg_build(const slot_msg *m, const uint8_t sk[UP_SK_BYTES], uint8_t *out) {
    uint8_t covered[SIGNED_MAX];
    size_t n = signed_bytes(m, covered);
    out[0] = 'P';
    proto_put16(out + 1, m->seq);
    memcpy(out + 3, covered + 4, 6); /* kind, slot, version */
    if (sodium_init() < 0) /* idempotent; picks the implementations */
        memset(out + 9, 0, UP_SIG_BYTES);
    else
        crypto_sign_detached(out + 9, NULL, covered, n, sk);
    memcpy(out + SLOT_MSG_HEAD, m->def, m->len);
    return SLOT_MSG_HEAD + m->len;
}

int slot_msg_check(const uint8_t *msg, size_t len, const uint8_t pk[UP_PK_BYTES],
                   slot_msg *m, char *detail, size_t cap) {
    if (len < SLOT_MSG_HEAD || len > SLOT_MSG_MAX || msg[0] != 'P')
        return dipp_say(detail, cap, DIPP_E_UP_MESSAGE,
                        "slot write: %zu bytes, not %d and a definition of at most %d",
                        len, SLOT_MSG_HEAD, SLOT_MAX_BYTES);
    if (msg[3] != 1 && msg[3] != 2)
        return dipp_say(detail, cap, DIPP_E_UP_MESSAGE,
                        "slot write: kind %u, not 1 (pipeline) or 2 (config)", msg[3]);
    slot_kind kind = msg[3] == 1 ? SLOT_PIPELINE : SLOT_CONFIG;
    if (msg[4] < 1 || msg[4] > slot_count(kind))
        return dipp_say(detail, cap, DIPP_E_UP_MESSAGE, "slot write: %s slot %u, not one of 1-%u",
                        slot_kind_name(kind), msg[4], slot_count(kind));
    *m = (slot_msg){.seq = (uint16_t)proto_get16(msg + 1),
                    .kind = kind,
                    .slot = msg[4],
                    .version = proto_get32(msg + 5),
                    .def = msg + SLOT_MSG_HEAD,
                    .len = len - SLOT_MSG_HEAD};
    uint8_t covered[SIGNED_MAX];
    size_t n = signed_bytes(m, covered);
    if (sodium_init() < 0 || crypto_sign_verify_detached(msg + 9, covered, n, pk) != 0)
        return dipp_say(detail, cap, DIPP_E_UP_SIGNATURE,
                        "%s-%u v%u: the signature does not verify with the key on board",
                        slot_kind_name(m->kind), m->slot, (unsigned)m->version);
    return 0;
}
