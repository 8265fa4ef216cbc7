/* cmd_sig.h -- signed commands: a run, stop or delete of a procedure on
 * port 24 ('X', 'S', 'E') and an image's removal on port 22 ('K') change
 * the board, so each ends with a counter and the ground's signature:
 *
 *   command bytes | counter (8, big endian) | Ed25519 signature (64)
 *
 * The signature, by the key that signs uploads, covers "DCM1", the port,
 * the command's bytes and the counter: a command cannot be forged, nor
 * sent to another port. The board keeps the highest counter it has taken
 * (slots.h, the file "floors") and takes only a higher one, raised before
 * the command is done, so a command heard on the link and sent again is
 * refused, even after a power cut. The ground's counter defaults to its
 * clock in microseconds, which only rises. */
#ifndef DIPP_CMD_SIG_H
#define DIPP_CMD_SIG_H

#include <stddef.h>
#include <stdint.h>

#include "upload_msg.h"

#define CMD_SIG_TRAILER (8 + UP_SIG_BYTES) /* counter and signature */
#define CMD_SIG_BODY_MAX 256               /* the most command bytes signed */

/* Ground side: appends counter and signature to the len bytes of msg
 * (which has CMD_SIG_TRAILER bytes of room after them); the new length. */
size_t cmd_sig_append(uint8_t port, uint8_t *msg, size_t len, uint64_t counter,
                      const uint8_t sk[UP_SK_BYTES]);

/* Board side: whether the command in msg (len bytes, trailer included)
 * is to be done. 0 with the command's own length in *body_len, its
 * counter taken (the floor in dir raised to it); or an errors.h code and
 * why in detail: DIPP_E_UP_MESSAGE (unsigned: too short),
 * DIPP_E_UP_SIGNATURE, DIPP_E_UP_REPLAY (a counter not above the
 * floor), DIPP_E_UP_STORE (the floor could not be read or raised). */
int cmd_sig_take(const char *dir, const uint8_t pk[UP_PK_BYTES], uint8_t port,
                 const uint8_t *msg, size_t len, size_t *body_len, char *detail,
                 size_t cap);

#endif
