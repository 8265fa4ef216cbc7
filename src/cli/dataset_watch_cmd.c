/* dataset_watch_cmd.c -- `aegis dataset watch`: the dataset's watcher in
 * the foreground (src/pipeline/watch.h), until SIGTERM or SIGINT; or,
 * with --detach, run by aegisd as a job of the pipelines' kind
 * (supervise.h), restarted if it dies.
 */
#include "cli.h"
#include "client.h"
#include "dataset_cmd.h"
#include "supervise.h"

#include "dataset.h"
#include "watch.h"

#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char help[] =
"usage: aegis dataset watch NAME [--interval-s X] [--once | --detach] [--quiet]\n"
"\n"
"Registers the samples of dataset NAME's files as they arrive: a file\n"
"counts once it is closed after writing or moved into the folder, and a\n"
"scan every X seconds (default 5) catches what events missed, and the\n"
"whole records of binary files still growing. Prints a line after each\n"
"pass that registered samples; exits 0 on SIGTERM or SIGINT. Restarted\n"
"after a crash (even kill -9), it resumes each file where its key log\n"
"says it stopped: nothing is registered twice or lost. One watcher per\n"
"dataset at a time.\n"
"\n"
"  --interval-s X  seconds between scans (default 5)\n"
"  --once          scan once, print the totals and exit\n"
"  --detach        have aegisd run the watcher as your job (shown by\n"
"                  `aegis ls` as pipeline dataset.NAME, restarted with a\n"
"                  back-off if it dies) and print its id; stop it with\n"
"                  `aegis pipeline stop dataset.NAME`. A pipeline's\n"
"                  supervisor runs its dataset's watcher itself when none\n"
"                  runs\n"
"  --quiet         no progress lines\n"
"\n"
"Exit status: 0 stopped by a signal (or --once done), 1 failure (the\n"
"folder or the key log), 2 bad usage, or NAME is no dataset of yours.\n";

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig) {
    (void)sig;
    stop_requested = 1;
}

/* SIGTERM and SIGINT set the flag and interrupt the wait (no SA_RESTART). */
static void catch_stop(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

/* The caller's state folder into state (4096 bytes), once it holds the
 * dataset: CLI_OK, or the exit status after saying why not. */
static int watched_state(const char *name, char *state) {
    char dsdir[4200];
    if (!pl_state_dir(state, 4096)) {
        fputs("aegis dataset watch: no state folder ($AEGIS_STATE_HOME, "
              "$XDG_STATE_HOME or $HOME)\n", stderr);
        return CLI_FAIL;
    }
    return dataset_known("watch", state, name, dsdir, sizeof(dsdir));
}

/* --detach: this command, without --detach, as a job aegisd keeps
 * running as the caller (the caller's environment names the state
 * folder). */
static int detach_watch(const char *name, double interval) {
    char self[PATH_MAX], job_name[128], secs[32], state[4096] = "", err[512];
    pl_dataset *ds;
    int rc = watched_state(name, state);
    if (rc != CLI_OK)
        return rc;
    /* the job finds the state folder through its environment, which
     * holds only UTF-8 (AEGIS_STATE_HOME, XDG_STATE_HOME, HOME): another
     * path would be left out, and the job watch another folder's dataset */
    if (!client_request_path("dataset watch", "the state folder", state,
                             "watch without --detach, or keep the state in "
                             "a folder whose path is UTF-8 (AEGIS_STATE_HOME)"))
        return CLI_USAGE;
    if (pl_dataset_open(state, name, &ds, err, sizeof(err)) != 0) {
        fprintf(stderr, "aegis dataset watch: %s\n", err);
        return CLI_FAIL;
    }
    pl_dataset_close(ds);
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (len <= 0) {
        perror("aegis dataset watch: /proc/self/exe");
        return CLI_FAIL;
    }
    self[len] = '\0';
    if (!client_request_path("dataset watch", "aegis's own path", self,
                             "install aegis where the path is UTF-8"))
        return CLI_USAGE;
    snprintf(job_name, sizeof(job_name), "dataset.%s", name);
    snprintf(secs, sizeof(secs), "%g", interval);
    json_t *cmd = json_pack("[s, s, s, s, s, s]", self, "dataset", "watch",
                            name, "--interval-s", secs);
    json_int_t id = supervise(client_socket(NULL), job_name, cmd, &rc);
    if (id <= 0) return rc;
    printf("dataset %s: watcher job %" JSON_INTEGER_FORMAT "\n", name, id);
    return CLI_OK;
}

static int run_watch(const char *name, double interval, int once, int quiet) {
    char state[4096], err[512];
    pl_watch *w;
    int known = watched_state(name, state);
    if (known != CLI_OK)
        return known;
    if (pl_watch_open(state, name, &w, err, sizeof(err)) < 0) {
        fprintf(stderr, "aegis dataset watch: %s\n", err);
        return CLI_FAIL;
    }
    catch_stop();
    int rc = once ? (pl_watch_scan(w, err, sizeof(err)) < 0 ? -1 : 0)
                  : pl_watch_run(w, interval, &stop_requested,
                                 quiet ? NULL : stdout, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "aegis dataset watch: %s\n", err);
    else if (!quiet)
        printf("%s: %llu samples, %u files, %llu bad%s\n", name,
               (unsigned long long)pl_watch_samples(w), pl_watch_files(w),
               (unsigned long long)pl_watch_bad(w), once ? "" : " (stopped)");
    pl_watch_close(w);
    return rc < 0 ? CLI_FAIL : CLI_OK;
}

int cli_dataset_watch(int argc, char **argv) {
    static const struct option longopts[] = {
        {"interval-s", required_argument, 0, 'i'},
        {"once", no_argument, 0, 'o'},
        {"detach", no_argument, 0, 'd'},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    double interval = 5.0;
    int once = 0, quiet = 0, detach = 0, opt;
    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (opt == 'h') {
            fputs(help, stdout);
            return CLI_OK;
        }
        if (opt == 'i' && cli_parse_double("dataset watch", "interval-s",
                                           optarg, 0.01, 86400, &interval) == 0)
            continue;
        if (opt == 'o' || opt == 'q' || opt == 'd') {
            *(opt == 'o' ? &once : opt == 'q' ? &quiet : &detach) = 1;
            continue;
        }
        return CLI_USAGE;
    }
    if (optind != argc - 1 || (once && detach)) {
        fputs(help, stderr);
        return CLI_USAGE;
    }
    if (detach) return detach_watch(argv[optind], interval);
    return run_watch(argv[optind], interval, once, quiet);
}
