/* proto.h -- what ground and satellite say over CSP (docs/orbit.md, "The
 * link"), the first byte of each message its type, integers big endian:
 *   port 20 (updates)  ground: 'M' seq manifest | 'C' chunk | 'R' seq rotation
 *                              | 'Q' seq (status?)
 *                      sat:    'S' seq code installed missing first nbits bitmap
 *                              [detail: a sentence, to the end of the message]
 *                      (a manifest of kind 2 carries an image of DISH
 *                      procedures: the same chunks, status and resume)
 *   port 10 (params)   ground: 'T' seq [from] (telemetry?, with the DISH run
 *                              records from index `from` when given)
 *                              | 'P' seq kind slot bytes
 *                      sat:    'V' seq text | 'A' seq code
 *   port 22 (images)   ground: 'D' seq id from (image id, or the best when 0,
 *                              PROTO_PARTS_PER_ASK of its parts from `from`
 *                              on) | 'K' seq id C (got it: drop it)
 *                      sat:    'I' id part parts priority bytes
 *                              | 'A' seq code text (to 'K')
 *   port 24 (procs)    ground: 'L' seq [from] (list?, from slot `from` on;
 *                              a listing longer than a frame ends with the
 *                              line "more from slot K") | 'X' seq slot nargs
 *                              arg... C (run; each argument 4 bytes, signed)
 *                              | 'E' seq slot C (delete) | 'S' seq slot C
 *                              (stop its runs)
 *                      sat:    'A' seq code text (the listing, or what was
 *                              done, or why not)
 *   C: a command's counter and signature (cmd_sig.h), 72 bytes
 * A status's bitmap marks the chunks still missing, from chunk `first` on,
 * so one reply tells the ground what to resend for up to 8192 chunks. */
#ifndef DIPP_PROTO_H
#define DIPP_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "upload.h"

#define PROTO_BITMAP_BITS 8192
/* An image's parts a 'D' asks for at most: one short request must not
 * send the whole 64 MiB ring down (37,283 parts, within the 16 bits that
 * number them); the ground asks again from its first missing part. */
#define PROTO_PARTS_PER_ASK 64
#define PROTO_DETAIL 256 /* the status's closing sentence, NUL included */
/* The longest status: its fields, a full bitmap, the sentence. */
#define PROTO_STATUS_MAX (18 + PROTO_BITMAP_BITS / 8 + PROTO_DETAIL)

typedef struct proto_status {
    uint16_t seq;
    uint32_t code;
    uint8_t installed;
    uint32_t missing, first;
    uint16_t nbits;
    uint8_t bitmap[PROTO_BITMAP_BITS / 8];
    char detail[PROTO_DETAIL]; /* why refused, or what was installed; may be empty */
} proto_status;

/* The store's status after r, answering seq, with r's detail when it ends
 * an upload: its encoded length in out (PROTO_STATUS_MAX bytes). */
size_t proto_status_build(const up_store *s, const up_result *r, uint16_t seq,
                          uint8_t *out);
/* Reads a status: 0, or -1 when it is none (short, not 'S', its code
 * above INT_MAX, its bitmap or sentence out of range). */
int proto_status_parse(const uint8_t *msg, size_t len, proto_status *st);
/* Makes n bytes of text from the link safe to print: control bytes (but
 * newlines, when lines) and DEL become '?', so no escape sequence reaches
 * the ground's terminal. */
void proto_printable(char *text, size_t n, int lines);

void proto_put16(uint8_t *p, uint32_t v);
void proto_put32(uint8_t *p, uint32_t v);
uint32_t proto_get16(const uint8_t *p);
uint32_t proto_get32(const uint8_t *p);
void proto_put64(uint8_t *p, uint64_t v);
uint64_t proto_get64(const uint8_t *p);
/* The answer 'A' seq code text to msg (its seq in bytes 1-2), the text cut
 * to fit cap (at least 8) bytes: its length. */
size_t proto_answer(const uint8_t *msg, int code, const char *text, uint8_t *out,
                    size_t cap);

/* The ground's side of an upload over any transport: send puts one message
 * on port 20, recv waits up to timeout_ms for the satellite's reply
 * (1 got, 0 none). */
typedef struct ground_io {
    int (*send)(void *ctx, const uint8_t *msg, size_t len);
    int (*recv)(void *ctx, int timeout_ms, uint8_t *msg, size_t cap, size_t *len);
    void *ctx;
    int timeout_ms;  /* a reply's wait before asking again */
    unsigned max_asks; /* unanswered questions in a row before giving up */
    uint16_t first_seq; /* the first question's number: drawn at random
                           by each run, so that a late answer to another
                           run's question is not taken for this one's */
} ground_io;

/* Answered rounds in a row in which the chunks missing on board did not
 * fall, before ground_upload gives up: a satellite that answers but
 * keeps nothing must not be resent to for ever, and 32 rounds of a
 * chunk all lost is past any link that answers at all. */
#define PROTO_STALL_ROUNDS 32
/* Times the board may answer "nothing missing" without installing (a
 * restart finished it, or its store was stale: the manifest is sent
 * again and the upload may start over) before ground_upload gives up:
 * each such answer began the count of rounds anew, so a board that kept
 * answering so, or so by turns with chunks missing, held it for ever. */
#define PROTO_STALL_RESTARTS 4
#define PROTO_STALLED (-2)

/* Sends m and its payload until the satellite installs or refuses it:
 * the satellite's code (0 installed), -1 when it stopped answering, or
 * PROTO_STALLED when it answered PROTO_STALL_ROUNDS times in a row with
 * no fewer chunks missing than its fewest, or more than
 * PROTO_STALL_RESTARTS times with none missing and nothing installed
 * (last: its last status). *sent counts the chunk messages sent. */
int ground_upload(const ground_io *io, const up_manifest *m,
                  const uint8_t *payload, uint64_t *sent, proto_status *last);

#endif
