/* dataset_cmd.c -- `aegis dataset`: finds the subcommand (add, rm, ls,
 * show, watch, share, unshare, gen) and runs it. */
#include "cli.h"
#include "dataset_cmd.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dsconf.h"

typedef struct dataset_sub {
    const char *name;
    int (*run)(int argc, char **argv);
} dataset_sub;

static const dataset_sub subs[] = {
    {"add", cli_dataset_add},
    {"rm", cli_dataset_rm},
    {"ls", cli_dataset_ls},
    {"show", cli_dataset_show},
    {"watch", cli_dataset_watch},
    {"share", cli_dataset_share},
    {"unshare", cli_dataset_unshare},
    {"gen", cli_dataset_gen},
};

static const char help[] =
"usage: aegis dataset add NAME --dir DIR --format FORMAT [OPTIONS]\n"
"       aegis dataset rm NAME\n"
"       aegis dataset ls [--json]\n"
"       aegis dataset show NAME [--json]\n"
"       aegis dataset watch NAME [--interval-s X] [--once | --detach] [--quiet]\n"
"       aegis dataset share|unshare NAME USER...\n"
"       aegis dataset gen KIND --out DIR [OPTIONS]\n"
"\n"
"Datasets that grow: a folder whose new files' samples are registered as\n"
"they arrive, each with a dense key, a timestamp and a label, in a key log\n"
"in your state folder ($AEGIS_STATE_HOME, else $XDG_STATE_HOME/aegis,\n"
"else ~/.local/state/aegis). See docs/pipelines.md, Datasets.\n"
"\n"
"  add    register a folder as a dataset\n"
"  rm     forget a dataset (its files stay)\n"
"  ls     your datasets\n"
"  show   one dataset, with its bad records\n"
"  watch  register new files' samples as they arrive\n"
"  share  let named users read a dataset (unshare: no longer)\n"
"  gen    write a synthetic stream with known drift\n"
"\n"
"Run 'aegis dataset SUBCOMMAND --help' for its options.\n";

int dataset_known(const char *cmd, const char *state, const char *name,
                  char *dsdir, size_t size) {
    char conf[4400];
    if (pl_dataset_dir(state, name, dsdir, size) < 0) {
        fprintf(stderr, "aegis dataset %s: '%s' is not a dataset name "
                "(letters, digits, '.', '_', '-', not starting with '.')\n",
                cmd, name);
        return CLI_USAGE;
    }
    snprintf(conf, sizeof(conf), "%s/dataset.json", dsdir);
    if (access(conf, F_OK) == 0)
        return CLI_OK;
    if (errno == ENOENT) {
        fprintf(stderr, "aegis dataset %s: no dataset %s (%s)\n", cmd, name,
                dsdir);
        return CLI_USAGE;
    }
    fprintf(stderr, "aegis dataset %s: %s: %s\n", cmd, conf, strerror(errno));
    return CLI_FAIL;
}

int cli_dataset(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0) {
        fputs(help, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    static char prog[64];
    for (size_t i = 0; i < sizeof(subs) / sizeof(*subs); i++)
        if (strcmp(argv[1], subs[i].name) == 0) {
            /* as aegis.c does: getopt's messages name the subcommand */
            snprintf(prog, sizeof(prog), "aegis dataset %s", subs[i].name);
            argv[1] = prog;
            return subs[i].run(argc - 1, argv + 1);
        }
    fprintf(stderr, "aegis dataset: unknown subcommand '%s' (see --help)\n",
            argv[1]);
    return CLI_USAGE;
}
