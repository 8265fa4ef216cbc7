/* pipeline_cmd.c -- `aegis pipeline`: continuous-training pipelines
 * (docs/pipelines.md). start and replay check the file, keep a copy in
 * the pipeline's folder and have aegisd run its supervisor
 * (aegis-pipeline, src/pipeline/supervisor.h) as a job of kind pipeline;
 * stop cancels it; ls, show and models read aegisd's rows and the
 * pipeline's trigger log (pipeline_view.c).
 */
#include "cli.h"
#include "client.h"
#include "pipeline_view.h"
#include "supervise.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pl_file.h"
#include "submit.h"
#include "pl_tlog.h"

static const char help[] =
"NAME\n"
"    aegis pipeline - continuous training: retrain a model as its dataset\n"
"    grows\n"
"\n"
"SYNOPSIS\n"
"    aegis pipeline start FILE.yaml\n"
"    aegis pipeline ls [--json]\n"
"    aegis pipeline show NAME [--json] [--eval]\n"
"    aegis pipeline stop NAME [--cancel-training]\n"
"    aegis pipeline log NAME\n"
"    aegis pipeline models NAME [--json]\n"
"    aegis pipeline replay FILE.yaml --from T --to T\n"
"    aegis pipeline compare NAME... [--json] [--svg FILE] [--handler H]\n"
"                           [--metric M]\n"
"    aegis pipeline trace NAME [--start T] [--user U] [--mem MIB]\n"
"                         [--merge TRACE.csv]\n"
"\n"
"DESCRIPTION\n"
"    A pipeline (FILE.yaml, Modyn's section names: pipeline, data,\n"
"    trigger, selection_strategy, training) watches one of your datasets\n"
"    (aegis dataset), fires its trigger on the samples as they arrive,\n"
"    writes each trigger's training set and runs training.command on it\n"
"    as an aegis job named NAME:tN, placed as any job.\n"
"\n"
"    start   checks the file (errors name FILE:LINE and the key), keeps a\n"
"            copy in the pipeline's folder and has aegisd run its\n"
"            supervisor as you, with no GPU (aegis ls shows it, of kind\n"
"            pipeline). A supervisor that dies is restarted after 1 s, 2 s,\n"
"            4 s ... at most 5 times an hour; it carries on where its\n"
"            trigger log says, training no trigger twice.\n"
"    ls      your pipelines running: supervisor job, triggers, trained\n"
"    show    one pipeline's triggers: after which sample, job, state;\n"
"            with --eval, each model's evaluation results instead\n"
"    stop    ends the supervisor; the training running finishes and its\n"
"            model is kept, unless --cancel-training\n"
"    log     the supervisor's output, stdout and stderr (aegis log --both\n"
"            of its job: why it stopped is on stderr)\n"
"    models  each trained trigger's model, its parent, whether kept\n"
"            (model_storage.keep_last removes the oldest), its path (a\n"
"            byte that is not UTF-8 as '?')\n"
"    replay  runs the pipeline over the samples already registered with\n"
"            timestamps in [T, T), in timestamp order, as fast as its\n"
"            trainings go, as pipeline NAME.replay, and waits for it\n"
"    compare pipelines side by side: each one's composite model (every\n"
"            evaluation window judged by the model that served it:\n"
"            active, or in training then), trainings, samples trained\n"
"            on, GPU-hours and energy; --svg draws the composite model\n"
"            over time with each pipeline's trainings marked\n"
"    trace   the pipeline's trainings as jobs of an `aegis sim` trace (on\n"
"            stdout): each submitted when its data ended, running as long\n"
"            as aegisd measured it, on the training's GPUs and memory;\n"
"            --merge adds them to another trace's jobs\n"
"\n"
"OPTIONS\n"
"    Each subcommand takes only its own options (and --socket, --help).\n"
"    --json             ls, show, models, compare: one JSON object per\n"
"                       line\n"
"    --cancel-training  stop: cancel the training job running too\n"
"    --from T, --to T   replay: Unix times, seconds\n"
"    --eval             show: the evaluation results\n"
"    --svg FILE         compare: draw the composite models into FILE\n"
"    --handler H        compare: the evaluation handler of the table and\n"
"                       drawing (default: the first with results)\n"
"    --metric M         compare: its metric, as results name it\n"
"                       (Accuracy, Top-3-Accuracy, F1-macro, RocAuc...)\n"
"    --start T          trace: the sample time (Unix s) at trace time 0\n"
"                       (default: the first training's)\n"
"    --user U           trace: the rows' user (default: the pipeline)\n"
"    --mem MIB          trace: the trainings' memory when the file gives\n"
"                       none (4g, 512m, or MiB)\n"
"    --merge TRACE.csv  trace: print TRACE's jobs and the pipeline's\n"
"    --socket PATH      aegisd's socket ($AEGIS_SOCKET, else\n"
"                       " CLIENT_DEFAULT_SOCKET ")\n"
"    --help             this text\n"
"\n"
"ENVIRONMENT\n"
"    AEGIS_STATE_HOME   your state folder (else $XDG_STATE_HOME/aegis,\n"
"                       else ~/.local/state/aegis): datasets, pipelines\n"
"    AEGIS_PIPELINE_SUPERVISOR  the supervisor program (default: the\n"
"                       aegis-pipeline beside aegis)\n"
"\n"
"EXIT STATUS\n"
"    0 success; 1 aegisd or the state folder failed; 2 bad usage, a bad\n"
"    pipeline file, or a request aegisd refused.\n";

typedef struct pl_opts {
    const char *socket;
    bool json, cancel_training, eval;
    const char *from, *to;
    const char *svg, *handler, *metric;
    const char *start, *user, *mem, *merge;
    int first;          /* argv index of the first operand */
} pl_opts;

/* Whether option ch (its long name name) is one subcommand sub takes
 * (takes: its option letters; --socket and --help go with every one).
 * Each option means something to one or two subcommands only, and one
 * given to another was ignored: `pipeline log X --svg a.svg` drew
 * nothing and exited 0. */
static bool pl_takes(int ch, const char *takes, const char *sub,
                     const char *name) {
    if (ch == 's' || ch == 'h' || strchr(takes, ch)) return true;
    fprintf(stderr, "aegis pipeline %s: --%s is not an option of %s\n", sub,
            name, sub);
    return false;
}

/* Options after the subcommand sub (argv[1]), those it takes (takes, see
 * pl_takes); operands counted into *n. 0, -1 after --help, or CLI_USAGE. */
static int pl_parse(int argc, char **argv, const char *takes, pl_opts *o,
                    int *n) {
    static const struct option opts[] = {
        {"socket", required_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {"cancel-training", no_argument, NULL, 'c'},
        {"from", required_argument, NULL, 'f'},
        {"to", required_argument, NULL, 't'},
        {"eval", no_argument, NULL, 'e'},
        {"svg", required_argument, NULL, 'g'},
        {"handler", required_argument, NULL, 'H'},
        {"metric", required_argument, NULL, 'm'},
        {"start", required_argument, NULL, 'S'},
        {"user", required_argument, NULL, 'u'},
        {"mem", required_argument, NULL, 'M'},
        {"merge", required_argument, NULL, 'G'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    memset(o, 0, sizeof(*o));
    optind = 2;
    int ch, at = -1;
    while ((ch = getopt_long(argc, argv, "h", opts, &at)) != -1) {
        if (ch != '?' && !pl_takes(ch, takes, argv[1],
                                   at >= 0 ? opts[at].name : "help"))
            return CLI_USAGE;
        at = -1;
        switch (ch) {
        case 's': o->socket = optarg; break;
        case 'j': o->json = true; break;
        case 'c': o->cancel_training = true; break;
        case 'f': o->from = optarg; break;
        case 't': o->to = optarg; break;
        case 'e': o->eval = true; break;
        case 'g': o->svg = optarg; break;
        case 'H': o->handler = optarg; break;
        case 'm': o->metric = optarg; break;
        case 'S': o->start = optarg; break;
        case 'u': o->user = optarg; break;
        case 'M': o->mem = optarg; break;
        case 'G': o->merge = optarg; break;
        case 'h': fputs(help, stdout); return -1;
        default: return CLI_USAGE;
        }
    }
    o->first = optind;
    *n = argc - optind;
    o->socket = client_socket(o->socket);
    return 0;
}

/* The supervisor program: $AEGIS_PIPELINE_SUPERVISOR, else aegis-pipeline
 * beside this aegis. */
static int pl_supervisor_path(char *buf, size_t size) {
    const char *env = getenv("AEGIS_PIPELINE_SUPERVISOR");
    if (env && *env) {
        snprintf(buf, size, "%s", env);
        return 0;
    }
    ssize_t n = readlink("/proc/self/exe", buf, size - 32);
    if (n <= 0) return -1;
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    snprintf(slash + 1, size - (size_t)(slash + 1 - buf), "aegis-pipeline");
    return 0;
}

/* Runs `SUPERVISOR check FILE`: its trigger and selection sections built
 * as the supervisor will (their errors told with their lines). */
static int pl_check(const char *supervisor, const char *file) {
    pid_t pid = fork();
    if (pid == 0) {
        execl(supervisor, supervisor, "check", file, (char *)NULL);
        fprintf(stderr, "aegis pipeline: %s: %s\n", supervisor,
                strerror(errno));
        _exit(CLI_FAIL);
    }
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return CLI_FAIL;
    return WIFEXITED(status) ? WEXITSTATUS(status) : CLI_FAIL;
}

/* file, copied whole to path (written aside, then renamed). */
static int pl_copy(const char *file, const char *path) {
    char tmp[4400];
    snprintf(tmp, sizeof(tmp), "%s.new", path);
    FILE *in = fopen(file, "rb"), *out = in ? fopen(tmp, "wb") : NULL;
    char buf[65536];
    size_t n;
    bool ok = in && out;
    while (ok && (n = fread(buf, 1, sizeof(buf), in)) > 0)
        ok = fwrite(buf, 1, n, out) == n;
    ok = ok && !ferror(in);
    if (out && (fflush(out) != 0 || fsync(fileno(out)) != 0)) ok = false;
    if (out && fclose(out) != 0) ok = false;
    if (in) fclose(in);
    if (ok && rename(tmp, path) == 0) return 0;
    fprintf(stderr, "aegis pipeline: cannot copy %s to %s: %s\n", file, path,
            strerror(errno));
    unlink(tmp);
    return -1;
}

/* Whether the supervisor's path and the pipeline's folder (dir), words
 * of its command, can go in a request to aegisd; said when not. */
static bool pl_request_paths(const char *sup, const char *dir) {
    return client_request_path("pipeline", "aegis-pipeline's path", sup,
                               "install aegis where the path is UTF-8") &&
           client_request_path("pipeline", "the pipeline's folder", dir,
                               "set AEGIS_STATE_HOME to a folder whose path "
                               "is UTF-8");
}

/* Checks file (the supervisor's check warns of Modyn's keys it ignores),
 * keeps it in the pipeline's folder (name plus suffix) and
 * has aegisd run the supervisor with args: its job id, or -1 (*rc).
 * The supervisor inherits this directory and environment, as a submit's
 * job does. */
static json_int_t pl_launch(const pl_opts *o, const char *file,
                            const char *suffix, const char *const *args,
                            int *rc) {
    pl_file cfg;
    char err[2048], sup[4096], name[128], dir[4200], copy[4400];
    *rc = CLI_USAGE;
    if (pl_file_load(file, false, &cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "aegis pipeline: %s\n", err);
        return -1;
    }
    snprintf(name, sizeof(name), "%s%s", cfg.name, suffix);
    pl_file_free(&cfg);
    if (pl_supervisor_path(sup, sizeof(sup)) != 0 ||
        (*rc = pl_check(sup, file)) != 0)
        return -1;
    *rc = CLI_FAIL;
    if (!pv_dir(name, dir, sizeof(dir))) return -1;
    if (!pl_request_paths(sup, dir)) {
        *rc = CLI_USAGE;
        return -1;
    }
    if (pl_mkdirs(dir, err, sizeof(err))) {
        fprintf(stderr, "aegis pipeline: %s\n", err);
        return -1;
    }
    snprintf(copy, sizeof(copy), "%s/pipeline.yaml", dir);
    if (pl_copy(file, copy) != 0) return -1;
    json_t *cmd = json_pack("[s, s, s]", sup, args[0], copy);
    for (size_t i = 1; args[i]; i++)
        json_array_append_new(cmd, json_string(args[i]));
    json_int_t id = supervise(o->socket, name, cmd, rc);
    if (id > 0) printf("pipeline %s: supervisor job %" JSON_INTEGER_FORMAT
                       "\n", name, id);
    return id;
}

static int pl_start(const pl_opts *o, char **argv) {
    static const char *const args[] = {"run", NULL};
    int rc;
    return pl_launch(o, argv[o->first], "", args, &rc) > 0 ? CLI_OK : rc;
}

/* A replay: run as a supervisor of NAME.replay, waited for. */
static int pl_replay(const pl_opts *o, char **argv) {
    long from, to;
    if (!o->from || !o->to) {
        fputs("usage: aegis pipeline replay FILE.yaml --from T --to T (try "
              "'aegis pipeline --help')\n", stderr);
        return CLI_USAGE;
    }
    /* Unix seconds up to the end of year 9999: timestamps are 64-bit, and
     * data stamped after 2038 is data */
    const long latest = 253402300799L;
    if (cli_parse_long("pipeline replay", "from", o->from, 0, latest, &from) ||
        cli_parse_long("pipeline replay", "to", o->to, 0, latest, &to))
        return CLI_USAGE;
    if (from >= to) {
        fprintf(stderr, "aegis pipeline replay: --from %ld is not before --to "
                "%ld\n", from, to);
        return CLI_USAGE;
    }
    const char *args[] = {"replay", o->from, o->to, NULL};
    int rc;
    json_int_t id = pl_launch(o, argv[o->first], ".replay", args, &rc);
    if (id <= 0) return rc;
    json_t *ans = client_call("pipeline", o->socket,
                              json_pack("{s:s, s:[I]}", "op", "wait", "ids",
                                        id), &rc);
    json_t *end = json_array_get(json_object_get(ans, "jobs"), 0);
    const char *state = json_string_value(json_object_get(end, "state"));
    if (state) printf("replay: supervisor job %" JSON_INTEGER_FORMAT " %s\n",
                      id, state);
    rc = !ans ? rc : state && strcmp(state, "done") == 0 ? CLI_OK : CLI_FAIL;
    json_decref(ans);
    return rc;
}

/* Cancels jobs ids (a JSON array, taken). */
static int pl_cancel(const pl_opts *o, json_t *ids) {
    int rc;
    json_t *ans = client_call("pipeline", o->socket,
                              json_pack("{s:s, s:o}", "op", "cancel", "ids",
                                        ids), &rc);
    json_decref(ans);
    return ans ? CLI_OK : rc;
}

static int pl_stop(const pl_opts *o, const char *name) {
    int rc;
    json_t *list = pv_supervisors(o->socket, false, &rc);
    if (!list) return rc;
    json_t *row = pv_find(list, name), *ids = json_array();
    if (row) json_array_append(ids, json_object_get(row, "id"));
    json_decref(list);
    pl_tlog log;
    char dir[4200], path[4300], err[512];
    if (o->cancel_training && pv_dir(name, dir, sizeof(dir))) {
        snprintf(path, sizeof(path), "%s/triggers.log", dir);
        if (pl_tlog_open(path, false, &log, err, sizeof(err)) == 0) {
            for (size_t n = 0; n < log.ntrigs; n++)
                if (log.trigs[n].job > 0 && !log.trigs[n].state[0])
                    json_array_append_new(ids,
                                          json_integer(log.trigs[n].job));
            pl_tlog_close(&log);
        }
    }
    if (json_array_size(ids) == 0) {
        fprintf(stderr, "aegis pipeline stop: no pipeline %s of yours runs\n",
                name);
        json_decref(ids);
        return CLI_USAGE;
    }
    rc = pl_cancel(o, ids);
    if (rc == CLI_OK) printf("pipeline %s: stopped\n", name);
    return rc;
}

/* aegis log of the newest supervisor of name. */
static int pl_log(const pl_opts *o, const char *name) {
    int rc;
    json_t *list = pv_supervisors(o->socket, true, &rc);
    if (!list) return rc;
    json_t *row = pv_find(list, name);
    char id[32];
    snprintf(id, sizeof(id), "%" JSON_INTEGER_FORMAT,
             json_integer_value(json_object_get(row, "id")));
    json_decref(list);
    if (!row) {
        fprintf(stderr, "aegis pipeline log: you have no pipeline %s\n", name);
        return CLI_USAGE;
    }
    /* both streams: why a supervisor stopped is on its stderr */
    char *args[] = {"log", "--both", "--socket", (char *)o->socket, id, NULL};
    optind = 1;
    return cli_log(5, args);
}

static int pl_compare(const pl_opts *o, char **names, int n) {
    pv_compare_opts c = {.socket = o->socket, .json = o->json, .svg = o->svg,
                         .handler = o->handler, .metric = o->metric};
    return pv_compare(&c, names, n);
}

static int pl_trace(const pl_opts *o, const char *name) {
    pv_trace_opts t = {.name = name, .start = NAN, .user = o->user,
                       .mem_mib = -1, .merge = o->merge};
    char *end = NULL;
    if (o->start) t.start = strtod(o->start, &end);
    if (o->start && (*end || !isfinite(t.start))) {
        fprintf(stderr, "aegis pipeline trace: --start '%s' is not a Unix "
                "time\n", o->start);
        return CLI_USAGE;
    }
    if (o->mem && submit_parse_mem(o->mem, &t.mem_mib) != 0) {
        fprintf(stderr, "aegis pipeline trace: --mem '%s' is not an amount "
                "of memory (4g, 512m, or MiB)\n", o->mem);
        return CLI_USAGE;
    }
    return pv_trace(&t);
}

/* The usage of subcommand sub, as the help's SYNOPSIS gives it (its
 * line and those continuing it), or of them all when sub is none. */
static void pl_usage(const char *sub, bool known) {
    char head[64];
    snprintf(head, sizeof(head), "\n    aegis pipeline %s ", sub);
    const char *at = known ? strstr(help, head) : NULL;
    if (!at) {
        fputs("usage: aegis pipeline start|ls|show|stop|log|models|replay|"
              "compare|trace ... (try 'aegis pipeline --help')\n", stderr);
        return;
    }
    fputs("usage:\n", stderr);
    do { /* a line, then those indented deeper */
        at++;
        const char *end = strchr(at, '\n');
        fprintf(stderr, "%.*s\n", (int)(end - at), at);
        at = end;
    } while (strncmp(at, "\n          ", 11) == 0);
    fputs("(try 'aegis pipeline --help')\n", stderr);
}

int cli_pipeline(int argc, char **argv) {
    static const struct {
        const char *name;
        int operands;       /* -1: one or more */
        const char *takes;  /* its options' letters (pl_parse's table) */
    } subs[] = {{"start", 1, ""}, {"ls", 0, "j"}, {"show", 1, "je"},
                {"stop", 1, "c"}, {"log", 1, ""}, {"models", 1, "j"},
                {"replay", 1, "ft"}, {"compare", -1, "jgHm"},
                {"trace", 1, "SuMG"}};
    const char *sub = argc >= 2 ? argv[1] : "";
    if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0) {
        fputs(help, stdout);
        return CLI_OK;
    }
    pl_opts o;
    int n, rc;
    size_t k = 0;
    while (k < sizeof(subs) / sizeof(*subs) && strcmp(subs[k].name, sub) != 0)
        k++;
    if (k == sizeof(subs) / sizeof(*subs) ||
        (rc = pl_parse(argc, argv, subs[k].takes, &o, &n)) > 0 ||
        (rc == 0 && (subs[k].operands < 0 ? n < 1 : n != subs[k].operands))) {
        pl_usage(sub, k < sizeof(subs) / sizeof(*subs));
        return CLI_USAGE;
    }
    if (rc < 0) return CLI_OK;
    const char *arg = argv[o.first];
    switch (k) {
    case 0: return pl_start(&o, argv);
    case 1: return pv_ls(o.socket, o.json);
    case 2: return o.eval ? pv_eval(arg, o.json)
                          : pv_show(o.socket, arg, o.json);
    case 3: return pl_stop(&o, arg);
    case 4: return pl_log(&o, arg);
    case 5: return pv_models(arg, o.json);
    case 6: return pl_replay(&o, argv);
    case 7: return pl_compare(&o, argv + o.first, n);
    default: return pl_trace(&o, arg);
    }
}
