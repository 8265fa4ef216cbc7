/* dataset_share_cmd.c -- `aegis dataset share|unshare NAME USER...`:
 * named users' read access to a dataset (src/pipeline/share.h). */
#include "cli.h"
#include "dataset_cmd.h"

#include "dataset.h"
#include "share.h"

#include <pwd.h>
#include <stdio.h>
#include <string.h>

static const char help[] =
"usage: aegis dataset share NAME USER...\n"
"       aegis dataset unshare NAME USER...\n"
"\n"
"share lets each USER read dataset NAME: its key log, file table and\n"
"configuration, and the files of its folder, including files written\n"
"later (POSIX ACL entries, and default entries on the two folders). The\n"
"folders above your state folder that you own get a search entry for\n"
"USER, so USER can reach the dataset; each is said. Search lists\n"
"nothing, but USER can then read any file in those folders whose mode\n"
"lets others read it, knowing its name (with the default state folder:\n"
"in your home). A state folder outside your home (AEGIS_STATE_HOME)\n"
"under folders others may search already opens nothing. USER reads the\n"
"dataset by the path of its state folder: aegis dataset show PATH, or\n"
"aegis_pipeline.Dataset(PATH). unshare takes\n"
"the entries back. The file system must support POSIX ACLs.\n"
"\n"
"Exit status: 0 success, 1 failure, 2 bad usage, an unknown user, or\n"
"NAME is no dataset of yours.\n";

static int share_users(const char *cmd, int grant, int argc, char **argv) {
    char state[4096], err[512], dsdir[4200];
    if (!pl_state_dir(state, sizeof(state))) {
        fprintf(stderr, "aegis dataset %s: no state folder\n", cmd);
        return CLI_FAIL;
    }
    int known = dataset_known(cmd, state, argv[1], dsdir, sizeof(dsdir));
    if (known != CLI_OK)
        return known;
    for (int i = 2; i < argc; i++) {
        struct passwd *pw = getpwnam(argv[i]);
        if (!pw) {
            fprintf(stderr, "aegis dataset %s: USER: no user '%s'\n", cmd,
                    argv[i]);
            return CLI_USAGE;
        }
        if (pl_dataset_share(state, argv[1], pw->pw_uid, grant, stdout, err,
                             sizeof(err)) < 0) {
            fprintf(stderr, "aegis dataset %s: %s\n", cmd, err);
            return CLI_FAIL;
        }
    }
    return CLI_OK;
}

static int share_cmd(int argc, char **argv, int grant) {
    if (argc == 2 && strcmp(argv[1], "--help") == 0) {
        fputs(help, stdout);
        return CLI_OK;
    }
    if (argc < 3) {
        fputs(help, stderr);
        return CLI_USAGE;
    }
    return share_users(grant ? "share" : "unshare", grant, argc, argv);
}

int cli_dataset_share(int argc, char **argv) { return share_cmd(argc, argv, 1); }
int cli_dataset_unshare(int argc, char **argv) {
    return share_cmd(argc, argv, 0);
}
