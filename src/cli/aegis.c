/* aegis.c -- the `aegis` command: finds the subcommand and runs it.
 *
 * Subcommands live in one table; adding one (the daemon's submit, ls, ...)
 * is one line here and one file beside this one.
 */
#include "cli.h"
#include "client.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct cli_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} cli_command;

static const cli_command commands[] = {
    {"sim", cli_sim, "replay a job trace under scheduling policies"},
    {"gen-trace", cli_gen_trace, "write a synthetic job trace (CSV)"},
    {"submit", cli_submit, "queue jobs on aegisd"},
    {"ls", cli_ls, "list aegisd's jobs"},
    {"show", cli_show, "everything about one job"},
    {"cancel", cli_cancel, "cancel jobs"},
    {"hold", cli_hold, "keep queued jobs from starting"},
    {"release", cli_release, "let held jobs start"},
    {"update", cli_update, "change a queued job's limit, nice, memory, name"},
    {"priority", cli_priority, "queued jobs' priorities and their parts"},
    {"fairshare", cli_fairshare, "each user's GPU time and fair share"},
    {"clear", cli_clear, "take your finished jobs out of ls (tsp -C)"},
    {"log", cli_log, "print a job's output"},
    {"wait", cli_wait, "wait for jobs to finish"},
    {"gpus", cli_gpus, "the GPUs aegisd manages"},
    {"top", cli_top, "watch the GPUs, their jobs and the queue"},
    {"drain", cli_drain, "take a GPU out of placement"},
    {"resume", cli_resume, "put a drained GPU back"},
    {"shutdown", cli_shutdown, "stop aegisd"},
    {"db", cli_db, "back up aegisd's database (db backup FILE)"},
    {"feed", cli_feed, "list, clean up or start the shared data feeds"},
    {"pipeline", cli_pipeline, "continuous training: retrain as data grows"},
    {"report", cli_report, "energy, CO2 and GPU-hours of aegisd's jobs"},
    {"estimate", cli_estimate, "GPU memory a training job will need"},
    {"dataset", cli_dataset, "datasets that grow, and synthetic streams"},
};

#define NCOMMANDS (sizeof(commands) / sizeof(*commands))

static void usage(FILE *out) {
    fputs("usage: aegis [--socket PATH] COMMAND [OPTIONS]\n"
          "       aegis --help | --version\n\n"
          "aegis lets deep-learning training jobs share the GPUs of a server\n"
          "safely. Commands:\n\n", out);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fputs("\n--socket PATH names aegisd's socket for the commands that talk to\n"
          "it (as $AEGIS_SOCKET does; default " CLIENT_DEFAULT_SOCKET ").\n"
          "A command waits $AEGIS_TIMEOUT_S seconds (default 60; 0: no limit)\n"
          "for aegisd to take its connection and answer, then exits 1: aegisd is\n"
          "stopped or stuck, and may still act on the request later. aegis wait,\n"
          "cancel, db backup and shutdown --drain wait as long as it takes;\n"
          "aegis log -f asks again, as when aegisd restarts.\n"
          "Run 'aegis COMMAND --help' for a command's options.\n"
          "Exit status: 0 success, 1 failure, 2 bad usage or bad input (a request\n"
          "aegisd refused included). aegis cancel is the exception: it names\n"
          "each job it could not cancel (unknown, another user's, finished) and\n"
          "exits 1.\n",
          out);
}

/* The aegis of a build tree reads the source tree's catalog, so an edit
 * there shows at once; an installed aegis reads its installed copy, even
 * on the machine it was built on (the package's build tree is no part of
 * the package). */
const char *cli_default_catalog(void) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    size_t len = strlen(AEGIS_BUILD_DIR);
    bool in_build = n > (ssize_t)len &&
                    strncmp(exe, AEGIS_BUILD_DIR "/", len + 1) == 0;
    return in_build ? AEGIS_CATALOG_SRC : AEGIS_CATALOG_INSTALLED;
}

int cli_output_apart(const char *cmd, const char *opt, const char *path,
                     const char *const *inputs) {
    struct stat out, in;
    if (!path || stat(path, &out) != 0 || !S_ISREG(out.st_mode)) return 0;
    for (; inputs[0]; inputs += 2) {
        if (!inputs[1] || stat(inputs[1], &in) != 0) continue;
        if (in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
            fprintf(stderr, "aegis %s: --%s: %s is the --%s file: an output "
                    "may not overwrite an input\n", cmd, opt, path, inputs[0]);
            return -1;
        }
    }
    return 0;
}

/* The global --socket PATH, taken off argv: every client subcommand
 * looks in $AEGIS_SOCKET when it has no --socket of its own. 0, or
 * CLI_USAGE or CLI_FAIL after saying why. An empty path is refused: in
 * $AEGIS_SOCKET it means the default socket, not the one the user meant
 * to name. */
static int global_socket(int *argc, char ***argv) {
    if (*argc < 2 || strcmp((*argv)[1], "--socket") != 0) return 0;
    if (*argc < 3) {
        fprintf(stderr, "aegis: --socket needs a path (try 'aegis --help')\n");
        return CLI_USAGE;
    }
    if (!(*argv)[2][0]) {
        fprintf(stderr, "aegis: --socket: the path is empty (leave --socket "
                "out for $AEGIS_SOCKET or " CLIENT_DEFAULT_SOCKET ")\n");
        return CLI_USAGE;
    }
    if (setenv("AEGIS_SOCKET", (*argv)[2], 1) != 0) {
        perror("aegis: --socket");
        return CLI_FAIL;
    }
    *argc -= 2;
    *argv += 2;
    return 0;
}

/* Whether --help or --version (argv[1]) comes alone: a word after it is
 * a slip the user should hear of, not a request to ignore. */
static bool alone(int argc, char **argv) {
    if (argc == 2) return true;
    fprintf(stderr, "aegis: %s takes nothing after it ('%s')\n", argv[1],
            argv[2]);
    return false;
}

int main(int argc, char **argv) {
    int rc = global_socket(&argc, &argv);
    if (rc) return rc;
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        if (!alone(argc, argv)) return CLI_USAGE;
        usage(stdout);
        return CLI_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        if (!alone(argc, argv)) return CLI_USAGE;
        printf("aegis %s\n", AEGIS_VERSION);
        return CLI_OK;
    }
    static char prog[64];
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(argv[1], commands[i].name) == 0) {
            /* getopt names argv[0] in its messages ("unrecognized
             * option"): the subcommand, as aegis's own messages name it */
            snprintf(prog, sizeof(prog), "aegis %s", commands[i].name);
            argv[1] = prog;
            return commands[i].run(argc - 1, argv + 1);
        }
    fprintf(stderr, "aegis: unknown command '%s' (try 'aegis --help')\n",
            argv[1]);
    return CLI_USAGE;
}
