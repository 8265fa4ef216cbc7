/* cli.h -- the subcommands of the `aegis` command and what they share.
 *
 * Each subcommand is a function taking its own argc/argv (argv[0] is the
 * subcommand's name) and returning the process exit status.
 */
#ifndef AEGIS_CLI_H
#define AEGIS_CLI_H

#include <stdbool.h>
#include <stddef.h>

/* Exit statuses of every aegis command (STYLE.md). */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

int cli_sim(int argc, char **argv);
int cli_gen_trace(int argc, char **argv);
int cli_feed(int argc, char **argv);
int cli_pipeline(int argc, char **argv);
int cli_estimate(int argc, char **argv);
int cli_dataset(int argc, char **argv);

/* The catalog used when --catalog is not given: the source tree's
 * data/catalog.csv when it is there, else the installed copy. */
const char *cli_default_catalog(void);

/* Parses text as a whole number in [lo, hi] or a finite number in
 * [lo, hi], written as a plain decimal number (cli_is_decimal()); on
 * failure prints "aegis CMD: --OPT: ..." (-O for a one-letter OPT) and
 * returns -1. OPT is an option's name without its dashes, or an operand's
 * name in upper case ("ID"), which is printed as it is (cli_number.c). */
int cli_parse_long(const char *cmd, const char *opt, const char *text,
                   long lo, long hi, long *out);
int cli_parse_double(const char *cmd, const char *opt, const char *text,
                     double lo, double hi, double *out);

/* Whether text is a plain decimal number: an optional '-' and digits,
 * and where `real`, a fraction (.5, 2.5) and an exponent (1e3, 2.5E-2)
 * too; no space, '+', hex, inf or nan. */
bool cli_is_decimal(const char *text, bool real);

/* v as a user would type it, into buf: a whole number in full (1048576,
 * not %g's 1.04858e+06), any other as %g. */
void cli_number_text(double v, char *buf, size_t len);

/* Whether output file `path` (given by option opt, NULL: none) lies
 * apart from every input: inputs are pairs of an option's name and its
 * path (NULL: not given), ending with NULL. When path is one of them,
 * writing it would destroy that input: prints "aegis CMD: --OPT: PATH is
 * the --INPUT file" and returns -1; else 0. */
int cli_output_apart(const char *cmd, const char *opt, const char *path,
                     const char *const *inputs);

#endif
