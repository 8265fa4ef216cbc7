/* cmd_sig.h -- signed commands: a run, stop or delete of a procedure on
 * port 24 ('X', 'S', 'E') and an image's removal on port 22 ('K') change
 * the board, so each ends with a counter and the ground's signature:
 *
 *   command bytes | counter (8, big endian) | Ed25519 signature (64)
 *
 * The signature, by the key that signs uploads, covers "DCM1", the port,
 * the command's bytes and the counter: a command cannot be forged, nor
 * sent to another port. The board keeps the highest counter it has taken
 * (slots.h, the record "commands") and takes only a higher one, raised
 * before the command is done: once a later command has been taken, one
 * heard on the link and sent again is refused, even after a power cut.
 * The ground's counter defaults to its clock in microseconds.
 *
 * Each command is answered 'A' seq code text, and done once: the same
 * bytes again (the answer was lost, and the ground asked again) get the
 * answer kept for them (cmd_serve), until the board restarts. */
#ifndef DIPP_CMD_SIG_H
#define DIPP_CMD_SIG_H

#include <stddef.h>
#include <stdint.h>

#include "upload_msg.h"

#define CMD_SIG_TRAILER (8 + UP_SIG_BYTES) /* counter and signature */
#define CMD_SIG_BODY_MAX 256               /* the most command bytes signed */
/* Any command cmd_sig_take takes, whatever its own length says of it
 * (a malformed one is taken, its counter spent, and refused), so that
 * its resend gets the same answer; and its answer, 'A' seq code and a
 * text of at most 255 bytes. */
#define CMD_ONCE_REQ (CMD_SIG_BODY_MAX + CMD_SIG_TRAILER)
#define CMD_ONCE_REPLY (7 + 256)

/* A port's signed commands: the last one taken and its answer, and how
 * many were refused before they were done. */
typedef struct cmd_port {
    uint8_t port;
    uint8_t req[CMD_ONCE_REQ], reply[CMD_ONCE_REPLY];
    size_t req_len, reply_len;
    uint64_t refused;
} cmd_port;

/* What a port does with a command it took (msg, its own body bytes): 0
 * or an errors.h code, what was done or why not in why. */
typedef int (*cmd_do_fn)(void *ctx, const uint8_t *msg, size_t body, char *why,
                         size_t cap);

/* Serves msg (len >= 3: a type and a seq), a command on p's port: the
 * answer kept when msg is the command taken last (its answer was lost);
 * else msg checked (cmd_sig_take, with dir and pk), done by fn when
 * taken, answered 'A' seq code text into out (cap >= 8), and kept. The
 * answer's length. */
size_t cmd_serve(cmd_port *p, const char *dir, const uint8_t pk[UP_PK_BYTES],
                 const uint8_t *msg, size_t len, cmd_do_fn fn, void *ctx, uint8_t *out,
                 size_t cap);

/* Ground side: appends counter and signature to the len bytes of msg
 * (len at most CMD_SIG_BODY_MAX; msg has CMD_SIG_TRAILER bytes of room
 * after them); the new length. */
size_t cmd_sig_append(uint8_t port, uint8_t *msg, size_t len, uint64_t counter,
                      const uint8_t sk[UP_SK_BYTES]);

/* Board side: whether the command in msg (len >= 1 bytes, trailer
 * included) is to be done. 0 with the command's own length in *body_len, its
 * counter taken (the floor in dir raised to it); or an errors.h code and
 * why in detail: DIPP_E_UP_MESSAGE (unsigned: too short),
 * DIPP_E_UP_SIGNATURE, DIPP_E_UP_REPLAY (a counter not above the
 * floor), DIPP_E_UP_STORE (the floor could not be read or raised). */
int cmd_sig_take(const char *dir, const uint8_t pk[UP_PK_BYTES], uint8_t port,
                 const uint8_t *msg, size_t len, size_t *body_len, char *detail,
                 size_t cap);

#endif
