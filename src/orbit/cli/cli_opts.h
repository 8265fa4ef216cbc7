/* cli_opts.h -- what the link commands (sat, link, ground) share: number
 * options and the hub endpoints. */
#ifndef DIPP_CLI_OPTS_H
#define DIPP_CLI_OPTS_H

#include <stdint.h>

/* Parses s as a number in [lo, hi] into *v; on failure prints
 * "dipp CMD: OPT S: ..." and returns -1. */
int cli_number(const char *cmd, const char *opt, const char *s, double lo,
               double hi, double *v);
/* cli_number, for a whole number (a count, a slot, a version). */
int cli_whole(const char *cmd, const char *opt, const char *s, double lo,
              double hi, double *v);
/* The hub endpoints of base port p: tcp://127.0.0.1:p (the hub takes
 * frames) and :p+1000 (it gives them), libcsp's zmqproxy's 6000/7000. */
void cli_hub(unsigned port, char *sub, char *pub, int cap);
/* Installs SIGINT/SIGTERM handlers that set the flag cli_stop. */
extern volatile int cli_stop;
void cli_on_stop(void);

#endif
