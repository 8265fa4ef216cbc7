/* cli.h -- the `dipp` command's subcommands and what they share. Exit
 * codes: 0 success, 1 bad input (definition, module folder, store), 2
 * usage, 3 `run` lost at least one batch (each one reported). */
#ifndef DIPP_CLI_H
#define DIPP_CLI_H

#include "pdef.h"

#define EXIT_BAD 1
#define EXIT_USAGE 2
#define EXIT_LOST 3

int cmd_run(int argc, char **argv);
int cmd_encode(int argc, char **argv);
int cmd_decode(int argc, char **argv);
int cmd_store(int argc, char **argv);
int cmd_slots(int argc, char **argv);
int cmd_sat(int argc, char **argv);
int cmd_link(int argc, char **argv);
int cmd_ground(int argc, char **argv);

/* Prints text and returns 1 when argv asks for --help. */
int cli_help(int argc, char **argv, const char *text);
/* Reads the YAML definition at path; prints the error and returns -1. */
int cli_read_def(const char *path, pdef *d);
/* The same, for pipeline slot pipeline (0: any): a definition naming
 * another pipeline is refused, one naming none takes it. */
int cli_read_def_for(const char *path, unsigned pipeline, pdef *d);

#endif
