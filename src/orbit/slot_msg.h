/* slot_msg.h -- a slot write as it travels on the parameter port (port
 * 10): 'P', seq (2), kind (1: pipeline, 2: module configuration), slot
 * (1), version (4, big endian), the ground's Ed25519 signature (64), then
 * the encoded definition (at most 188 bytes).
 *
 * The signature is made with the key that signs uploads, over "DSW1",
 * kind, slot, version and definition: a write cannot be forged, nor moved
 * to another slot or kind. The board keeps each slot's version and takes
 * only a higher one, so an old write sent again cannot undo a newer. */
#ifndef DIPP_SLOT_MSG_H
#define DIPP_SLOT_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "slots.h"
#include "upload_msg.h"

#define SLOT_MSG_HEAD (9 + UP_SIG_BYTES) /* the bytes before the definition */
#define SLOT_MSG_MAX (SLOT_MSG_HEAD + SLOT_MAX_BYTES)

typedef struct slot_msg {
    uint16_t seq;
    slot_kind kind;
    uint8_t slot;
    uint32_t version;
    const uint8_t *def; /* the definition's bytes, in the message */
    size_t len;
} slot_msg;

/* Encodes m into out (SLOT_MSG_MAX bytes), signed with sk: its length. */
size_t slot_msg_build(const slot_msg *m, const uint8_t sk[UP_SK_BYTES], uint8_t *out);
/* Reads msg into m (its def pointing into msg) and checks its signature
 * with pk: 0, or DIPP_E_UP_MESSAGE (malformed) or DIPP_E_UP_SIGNATURE,
 * with why in detail. */
int slot_msg_check(const uint8_t *msg, size_t len, const uint8_t pk[UP_PK_BYTES],
                   slot_msg *m, char *detail, size_t cap);

#endif
