/* ground.h -- the ground station's commands (`dipp ground`), apart from
 * option parsing: each opens node 10 on the hub and asks node 162. */
#ifndef DIPP_GROUND_H
#define DIPP_GROUND_H

#include <stddef.h>
#include <stdint.h>

#include "cmd_sig.h"
#include "csp_zmq.h"
#include "upload_msg.h"

typedef struct ground {
    unsigned hub;
    int timeout_ms; /* the whole wait: nothing heard for this long is "no answer" */
    int retry_ms;   /* the most between two asks of one question, <= timeout_ms */
    csp_node node;
} ground;

/* Runs argv[0] (keygen, upload, rotate, slot, telemetry, images, ping):
 * an exit status. */
int ground_command(ground *g, int argc, char **argv);

/* A request's sequence number, for every port: random at start, so that
 * an answer to an earlier ground run's request, late on the link, is
 * never taken for this run's. */
uint16_t ground_seq(void);

/* How often a question is asked within the whole wait, and how long each
 * ask waits for its answer (ground_ask.c): the wait shared evenly. */
unsigned ground_asks(const ground *g);
int ground_ask_ms(const ground *g);

/* Sends msg to port and waits for a reply of type want answering seq
 * (bytes 1-2), asking again within g's whole wait: its length, or -1. */
long ground_ask(ground *g, uint8_t port, const uint8_t *msg, size_t len,
                uint8_t want, uint8_t *reply, size_t cap);

/* Prints "WHAT: no answer from node 162 in N ms (asked K times...)". */
void ground_no_answer(const ground *g, const char *what);

/* Uploads m and its payload over port 20 until installed or refused,
 * and prints the outcome, its number and the satellite's sentence: an
 * exit status; the satellite's code (0 installed, -1 no answer) in
 * *code when code is not NULL. */
int ground_send_update(ground *g, const up_manifest *m, const uint8_t *payload,
                       int *code);

/* When argv (argv[0] a command's name) asks for --help: prints that
 * command's own help on stdout and returns 1 (ground_help.c). */
int ground_help(int argc, char **argv);
/* `dipp ground proc`'s help, its usage too. */
extern const char ground_proc_help[];

/* The commands, argv[0] their name. */
int ground_keygen(int argc, char **argv);
int ground_upload_cmd(ground *g, int argc, char **argv);
int ground_rotate(ground *g, int argc, char **argv);
/* proc upload|list|run|delete|log (ground_procs.c). */
int ground_procs(ground *g, int argc, char **argv);
/* The key and counter that sign commands changing the board (cmd_sig.h;
 * ground_sign.c). */
typedef struct ground_signer {
    uint8_t *sk;   /* the key that signs uploads */
    uint64_t next; /* the counter the next signed message takes */
} ground_signer;

/* Reads --counter's text, a whole number from 1 to 2^64 - 1 (the board
 * takes any above its own, so there is always one above a typo): 0, or
 * -1 said on stderr. */
int ground_counter_arg(const char *text, uint64_t *counter);
/* Reads the key file (--key) and sets the first counter: counter, or
 * when it is 0 the ground's clock in microseconds. 0, or -1 when the key
 * cannot be read (said on stderr). */
int ground_signer_open(ground_signer *s, const char *key, uint64_t counter);
/* Appends the next counter and the signature to msg (room for
 * CMD_SIG_TRAILER more bytes): the new length. */
size_t ground_sign(ground_signer *s, uint8_t port, uint8_t *msg, size_t len);
void ground_signer_close(ground_signer *s);

/* Asks msg on port (its seq filled in here, then signed with sg unless
 * it is NULL: msg has room for the signature) for an answer 'A' seq code
 * text: 0 with the text, made printable, in *text (within reply, CSP_MTU
 * + 1 bytes), or EXIT_BAD said as WHAT's: no answer, a malformed answer,
 * or refused (with the number). */
int ground_ask_text(ground *g, uint8_t port, ground_signer *sg, uint8_t *msg, size_t len,
                    const char *what, uint8_t *reply, char **text);

/* Reads the whole file at path, of want bytes when want is not 0; prints
 * why not and returns -1. */
int ground_read_file(const char *path, uint8_t **data, size_t *len, size_t want);

#endif
