/* main.c -- the aegisd command: flags, then d_run(). */
#include "daemon.h"

#include "config.h"

#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

static const char help[] =
"NAME\n"
"    aegisd - the aegis GPU job daemon\n"
"\n"
"SYNOPSIS\n"
"    aegisd --socket PATH --state-dir DIR [--config FILE]\n"
"           [--nvml-library PATH] [--dcgm-library PATH] [--foreground]\n"
"           [--drain-on-stop] [--log-format text|json]\n"
"    aegisd --check-config FILE\n"
"\n"
"DESCRIPTION\n"
"    Runs the deep-learning training jobs submitted with `aegis submit` on\n"
"    the GPUs of this server, several jobs per GPU where memory and load\n"
"    allow, by the same scheduling core `aegis sim` replays traces with.\n"
"    A job whose attempt runs out of GPU memory is requeued with a larger\n"
"    memory floor (the recovery ladder), and run alone as the last rung.\n"
"\n"
"    Clients speak JSON lines on the Unix socket PATH. Every job runs as\n"
"    the user who submitted it (known from the socket's peer credentials)\n"
"    when aegisd runs as root; a non-root aegisd runs jobs as itself and\n"
"    accepts them from its own user only. A job runs in its own session,\n"
"    in the submitter's directory and environment, with\n"
"    CUDA_VISIBLE_DEVICES set to the UUIDs of its GPUs, AEGIS_JOB_ID and\n"
"    AEGIS_ATTEMPT; its command is looked up in its own PATH. Its stdout\n"
"    and stderr go to DIR/logs/ID.out and ID.err (mode 0600, owned by its\n"
"    user), each kept to its last log_max_mib MiB (config; default 1024);\n"
"    read them with `aegis log`.\n"
"\n"
"    Under Slurm, a job step's tasks ask for leases (root only, from the\n"
"    SPANK plugin): each is a job of the queue that aegisd does not start;\n"
"    its grant gives the tasks their GPUs and variables, and it ends when\n"
"    their processes do or at `aegis release --slurm-job ID`. An OOM has\n"
"    Slurm requeue the job (slurm_scontrol; docs/slurm.md).\n"
"\n"
"    At most 512 clients are connected at once, 64 of one user (root is\n"
"    always let in); a client that leaves 1 MiB of answers unread is not\n"
"    read from until it catches up.\n"
"\n"
"    State lives in DIR/aegis.db (SQLite, WAL): a submit is acknowledged\n"
"    only once committed and synced to disk. After a crash or restart, queued\n"
"    jobs resume (retries keep their place and memory floor); running\n"
"    jobs are re-adopted into the scheduler (their exit status is still\n"
"    collected) or, when they are gone, recorded as a lost attempt and\n"
"    requeued at the same floor.\n"
"\n"
"    GPU telemetry (memory, utilization, power, energy and the process\n"
"    list) is read once a second through NVML, loaded at run time; aegisd\n"
"    refuses to start without it. DCGM, when it loads, adds SMACT, SMOCC\n"
"    and DRAMA for the pressure filter (an embedded engine, or the\n"
"    nv-hostengine at $AEGIS_DCGM_HOSTENGINE); without it the filter uses\n"
"    utilization alone. The log says which.\n"
"\n"
"    With the config's metrics_listen (ADDRESS:PORT, e.g. 127.0.0.1:9464;\n"
"    off by default) aegisd serves Prometheus metrics of its GPUs, jobs,\n"
"    users and scheduler at http://ADDRESS:PORT/metrics, rendered at most\n"
"    once per metrics_cache_s (1 s), with series of their own for at most\n"
"    metrics_max_jobs jobs (1000; the others counted by user and state).\n"
"\n"
"SHARING MODES\n"
"    Each GPU has a mode, the config's `sharing:` key (one mode, or\n"
"    `default:` and GPU indexes): naive (default; CUDA time slicing),\n"
"    exclusive, mps, mig or auto. For mps and auto GPUs aegisd starts one\n"
"    MPS control daemon each at start (mps_control -d, default\n"
"    nvidia-cuda-mps-control; pipe and log folders mps_dir/N/pipe and\n"
"    N/log, default DIR/mps, which a root aegisd warns other users' jobs\n"
"    cannot reach) and sends it quit at stop once the GPU's jobs\n"
"    have ended; a daemon found running is kept. A job run under MPS gets\n"
"    CUDA_MPS_PIPE_DIRECTORY, CUDA_MPS_LOG_DIRECTORY and, when it shares\n"
"    the GPU, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT at the floor it was\n"
"    admitted with (mps_pin_memory: 0 turns that off). On mig and auto\n"
"    GPUs a job placed in a MIG instance gets one made for it through NVML\n"
"    (MIG mode turned on as needed), with its MIG UUID as\n"
"    CUDA_VISIBLE_DEVICES; the instance is destroyed when the attempt\n"
"    ends, and recorded in DIR/aegis.db meanwhile so a restart hands it\n"
"    back or cleans it up. Whole-GPU jobs there get MIG mode off first.\n"
"\n"
"OPTIONS\n"
"    --socket PATH        the socket to listen on (at most 107 bytes),\n"
"                         in a folder that exists (created mode 0666,\n"
"                         or 0660 for the config's socket_group;\n"
"                         requests are checked against the peer's uid);\n"
"                         a socket file already there is replaced only\n"
"                         when nothing answers on it; anything else there\n"
"                         makes aegisd refuse to start\n"
"    --state-dir DIR      database, logs and status files (created 0700;\n"
"                         it, logs/ and run/ must be aegisd's user's and\n"
"                         not writable by others). aegisd refuses a new\n"
"                         database beside the logs of an old one\n"
"    --config FILE        YAML configuration; default " CONFIG_DEFAULT_PATH "\n"
"                         when it exists, else built-in defaults. Keys are\n"
"                         the core's parameters, as for `aegis sim --set`\n"
"    --nvml-library PATH  the NVML library (default $AEGIS_NVML_LIBRARY,\n"
"                         else libnvidia-ml.so.1)\n"
"    --dcgm-library PATH  the DCGM library (default $AEGIS_DCGM_LIBRARY,\n"
"                         else libdcgm.so.4, libdcgm.so.3, libdcgm.so)\n"
"    --foreground         stay in the foreground, log to stderr; without\n"
"                         it aegisd returns once it listens (its start-up\n"
"                         lines on stderr too) and logs to DIR/aegisd.log\n"
"    --drain-on-stop      on SIGTERM or aegis shutdown, wait for running\n"
"                         jobs to end\n"
"    --log-format FORMAT  text (default): each line starts with its UTC\n"
"                         time and level (info, warning, error); under\n"
"                         systemd's journal (JOURNAL_STREAM) plain lines\n"
"                         with a <N> priority prefix instead, as journald\n"
"                         stamps the time itself. json: one object a line,\n"
"                         {\"time\", \"level\", \"message\"}, anywhere\n"
"    --check-config FILE  check the configuration FILE and exit: 0 and\n"
"                         \"FILE: ok\" when aegisd would start with it, 2\n"
"                         and every problem, one FILE:LINE: line each,\n"
"                         when not (a name's valid values listed); starts\n"
"                         nothing, and takes no other option\n"
"    --help               this text\n"
"\n"
"    Held jobs (aegis hold), time limits (aegis submit --time) and drained\n"
"    GPUs (aegis drain, with their reasons) are kept in DIR/aegis.db too,\n"
"    and hold across restarts.\n"
"\n"
"HISTORY AND NOTIFICATIONS\n"
"    Every history_period_s seconds (config; default 10) aegisd samples\n"
"    each running job's memory and SM share and its GPUs' used and total\n"
"    memory into DIR/aegis.db, all of a period in one transaction; a job\n"
"    keeps at most 4320 samples (past them every other one is dropped and\n"
"    it is sampled half as often). `aegis show ID --history` shows them.\n"
"    When a job ends, aegisd runs its notifier (aegis submit --notify, else\n"
"    the config's notify) with /bin/sh -c as the job's user, in its\n"
"    directory and environment with AEGIS_JOB_ID, AEGIS_JOB_NAME,\n"
"    AEGIS_JOB_USER, AEGIS_JOB_STATE, AEGIS_JOB_REASON,\n"
"    AEGIS_JOB_EXIT_STATUS and AEGIS_JOB_DURATION_S set, its output\n"
"    discarded. aegisd does not wait for it: at most 32 run at once (the\n"
"    others wait their turn), one still running after notify_timeout_s\n"
"    (default 30) is killed with its session, a failed one is logged once\n"
"    and never retried. A job that ended while aegisd was down is notified\n"
"    when aegisd comes back; a notifier running when aegisd stops finishes\n"
"    on its own.\n"
"\n"
"SIGNALS\n"
"    SIGTERM, SIGINT  stop accepting requests and exit; running jobs keep\n"
"                     running and are re-adopted at the next start\n"
"                     (with --drain-on-stop: exit once they have ended).\n"
"                     `aegis shutdown [--drain]` does the same from a\n"
"                     client, for root or aegisd's user\n"
"    SIGHUP           reload the configuration file; an invalid file is\n"
"                     reported and the old configuration kept\n"
"\n"
"EXIT STATUS\n"
"    0 stopped by a signal or aegis shutdown, 1 failed to start, 2 bad\n"
"    usage (an unknown option or argument, an empty path, a --socket\n"
"    path too long) or (with --check-config) a bad configuration.\n";

/* --check-config: the same loading aegisd does at start, and nothing else
 * (no socket, no state, no GPU), so a package or an admin can check a file
 * on any machine before a restart or a SIGHUP. */
static int check_config(const char *path) {
    core_config cfg;
    acct_params acct;
    sharing_config share;
    config_keys keys = {0};
    char err[16384], group_err[512];
    bool bad = config_load_daemon(path, false, &cfg, &acct, &share, &keys,
                                  err, sizeof(err)) != 0;
    if (bad)
        for (char *line = strtok(err, "\n"); line; line = strtok(NULL, "\n"))
            fprintf(stderr, "aegisd: %s\n", line);
    /* every problem at once: the group too, where the rest is bad */
    if (config_group_check(path, &keys, group_err, sizeof(group_err)) != 0) {
        fprintf(stderr, "aegisd: %s\n", group_err);
        bad = true;
    }
    if (bad) return 2;
    printf("%s: ok\n", path);
    return 0;
}

/* The most bytes of a Unix socket's path: libuv's bind cut a longer
 * --socket to it, and aegisd listened where no client looks. */
#define SOCKET_PATH_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

/* Whether the paths given are paths: 0, or 2 (bad usage) after naming
 * the option. An empty one was tried as a path ("error: : No such file
 * or directory", naming nothing), and an empty --socket bound an
 * abstract socket no client can find. */
static int check_paths(const d_options *opt, const char *check_path) {
    const struct {
        const char *name, *value;
    } paths[] = {
        {"socket", opt->socket_path},      {"state-dir", opt->state_dir},
        {"config", opt->config_path},      {"nvml-library", opt->nvml_path},
        {"dcgm-library", opt->dcgm_path},  {"check-config", check_path},
    };
    for (size_t i = 0; i < sizeof(paths) / sizeof(*paths); i++) {
        if (!paths[i].value || paths[i].value[0]) continue;
        fprintf(stderr, "aegisd: --%s: the path is empty\n", paths[i].name);
        return 2;
    }
    if (opt->socket_path && strlen(opt->socket_path) > SOCKET_PATH_MAX) {
        fprintf(stderr, "aegisd: --socket: '%s' is longer than %zu bytes, "
                "the most a Unix socket's path may be\n", opt->socket_path,
                SOCKET_PATH_MAX);
        return 2;
    }
    return 0;
}

/* Freed heap stays with aegisd, up to D_KEEP_HEAP bytes: many requests
 * make SQLite open a scratch table (an IN list, a sort), whose page cache
 * takes some 85 KB and is freed with it. glibc would hand that top of the
 * heap back to the kernel after each request and fault it in again for
 * the next, at 5 to 12 us a page on a virtual machine: an `aegis ls` took
 * 0.22 to 0.27 ms to answer, 0.10 to 0.12 ms with the heap kept
 * (docs/benchmarks.md, "Submitting jobs"). Allocations under
 * D_KEEP_MMAP (answers of a few hundred KB) come from the heap too, which
 * glibc otherwise decides from what was freed so far (setting the one
 * turns that off). */
#define D_KEEP_HEAP (8 << 20)
#define D_KEEP_MMAP (1 << 20)
static void d_keep_heap(void) {
    mallopt(M_TRIM_THRESHOLD, D_KEEP_HEAP);
    mallopt(M_MMAP_THRESHOLD, D_KEEP_MMAP);
}

int main(int argc, char **argv) {
    static const struct option opts[] = {
        {"socket", required_argument, NULL, 's'},
        {"state-dir", required_argument, NULL, 'd'},
        {"config", required_argument, NULL, 'c'},
        {"nvml-library", required_argument, NULL, 'n'},
        {"dcgm-library", required_argument, NULL, 'g'},
        {"foreground", no_argument, NULL, 'f'},
        {"drain-on-stop", no_argument, NULL, 'D'},
        {"check-config", required_argument, NULL, 'C'},
        {"log-format", required_argument, NULL, 'L'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    d_options opt = {0};
    const char *check_path = NULL;
    const char *other = NULL; /* an option given beside --check-config */
    int ch, at;
    while ((ch = getopt_long(argc, argv, "h", opts, &at)) != -1) {
        if (ch != 'C' && ch != 'h' && ch != '?') other = opts[at].name;
        switch (ch) {
        case 's': opt.socket_path = optarg; break;
        case 'd': opt.state_dir = optarg; break;
        case 'c': opt.config_path = optarg; break;
        case 'n': opt.nvml_path = optarg; break;
        case 'g': opt.dcgm_path = optarg; break;
        case 'f': opt.foreground = true; break;
        case 'D': opt.drain_on_stop = true; break;
        case 'C': check_path = optarg; break;
        case 'L':
            if (dlog_format_parse(optarg, &opt.log_format) == 0) break;
            fprintf(stderr, "aegisd: --log-format: '%s' is not text or json\n",
                    optarg);
            return 2;
        case 'h': fputs(help, stdout); return 0;
        default: fputs("Run 'aegisd --help' for usage.\n", stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "aegisd: unexpected argument '%s'\nRun 'aegisd "
                "--help' for usage.\n", argv[optind]);
        return 2;
    }
    if (check_paths(&opt, check_path) != 0) return 2;
    if (check_path && other) {
        fprintf(stderr, "aegisd: --check-config takes no other option "
                "(--%s was given): it checks FILE and starts nothing\n"
                "Run 'aegisd --help' for usage.\n", other);
        return 2;
    }
    if (check_path) return check_config(check_path);
    if (!opt.socket_path || !opt.state_dir) {
        fprintf(stderr, "aegisd: --socket and --state-dir are required\n"
                "Run 'aegisd --help' for usage.\n");
        return 2;
    }
    d_keep_heap();
    return d_run(&opt);
}
