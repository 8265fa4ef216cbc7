/* dataset_cmd.h -- the subcommands of `aegis dataset`, one file each
 * (dataset_cmd.c dispatches; its help lists them). */
#ifndef AEGIS_DATASET_CMD_H
#define AEGIS_DATASET_CMD_H

int cli_dataset_add(int argc, char **argv);
int cli_dataset_rm(int argc, char **argv);
int cli_dataset_ls(int argc, char **argv);
int cli_dataset_show(int argc, char **argv);
int cli_dataset_watch(int argc, char **argv);
int cli_dataset_share(int argc, char **argv);
int cli_dataset_unshare(int argc, char **argv);
int cli_dataset_gen(int argc, char **argv);

#include <stddef.h>

/* Dataset name of state, its folder into dsdir: CLI_OK; CLI_USAGE after
 * saying so (as `aegis dataset cmd`) where name is no dataset's name or
 * names no dataset: bad input, as an unknown job or pipeline is; CLI_FAIL
 * after saying why where its folder cannot be looked at. */
int dataset_known(const char *cmd, const char *state, const char *name,
                  char *dsdir, size_t size);

#endif
