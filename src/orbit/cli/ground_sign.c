/* ground_sign.c -- how the ground signs commands that change the board
 * (cmd_sig.h), for `proc run`, `proc stop`, `proc delete` and `images`:
 * the key, and the counter each signed message takes. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

#include "ground.h"

/* The ground's clock in microseconds: a counter that only rises while it
 * is not set back, and never repeats within one ground run (each message
 * takes the next number, however fast they go). */
static uint64_t clock_us(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
}

int ground_counter_arg(const char *text, uint64_t *counter) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (!isdigit((unsigned char)*text) || *end || errno || v == 0) {
        fprintf(stderr, "dipp ground: --counter %s: not a whole number from 1 to %llu\n",
                text, (unsigned long long)UINT64_MAX);
        return -1;
    }
    *counter = v;
    return 0;
}

int ground_signer_open(ground_signer *s, const char *key, uint64_t counter) {
    size_t len;
    if (ground_read_file(key, &s->sk, &len, UP_SK_BYTES))
        return -1;
    s->next = counter > 0 ? counter : clock_us();
    return 0;
}

size_t ground_sign(ground_signer *s, uint8_t port, uint8_t *msg, size_t len) {
    return cmd_sig_append(port, msg, len, s->next++, s->sk);
}

void ground_signer_close(ground_signer *s) {
    free(s->sk);
    s->sk = NULL;
}
