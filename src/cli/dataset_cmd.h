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

#endif
