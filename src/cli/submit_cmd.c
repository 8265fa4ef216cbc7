/* submit_cmd.c -- `aegis submit`: one command, a YAML job spec, or an
 * array of commands (a file of them, or one command over a range of
 * indices), sent to aegisd as one request (so one transaction: all the
 * jobs are accepted or none).
 *
 * Nothing given is dropped or altered on the way: a number out of range
 * or not whole where a whole one is needed, text that is not UTF-8 (the
 * request is JSON) or that holds a NUL byte (a C string would end there)
 * is refused, naming the option or FILE:LINE and key, with exit 2. The
 * values themselves are read by submit_args.c, the specs by spec.c.
 */
#include "cli.h"
#include "client.h"
#include "spec_read.h"
#include "submit.h"
#include "timelimit.h"

#include "core.h"
#include "proto.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static const char help[] =
"NAME\n"
"    aegis submit - queue training jobs on aegisd\n"
"\n"
"SYNOPSIS\n"
"    aegis submit [OPTIONS] [--] COMMAND [ARG...]\n"
"    aegis submit [OPTIONS] 'SHELL COMMAND LINE'\n"
"    aegis submit [OPTIONS] SPEC.yaml [OPTIONS]\n"
"    aegis submit [OPTIONS] --array FILE\n"
"    aegis submit [OPTIONS] --array RANGE [--] COMMAND [ARG...]\n"
"\n"
"DESCRIPTION\n"
"    Queues jobs and prints their ids, one per line, once aegisd has\n"
"    committed them to its database (a job whose id was printed survives\n"
"    a crash of aegisd). Each job runs as you, in the current directory,\n"
"    with the current environment, on GPUs aegisd chooses (given to it in\n"
"    CUDA_VISIBLE_DEVICES).\n"
"\n"
"    A command given as one word that holds shell syntax (spaces, quotes,\n"
"    &&, |, ;, redirections, $VARIABLES, globs) runs with /bin/sh -c, as\n"
"    spec and array lines do: aegis submit 'python a.py && python b.py'.\n"
"    Several words run as they are, without a shell.\n"
"\n"
"    A command run without a shell is checked first, as you: one that is\n"
"    not on your PATH (or, with a '/', not there) or that you may not\n"
"    execute is not queued, and the reason is said (exit 2). A job that\n"
"    runs --after others (which may build it) is queued with a warning;\n"
"    shell strings and conda environments find their program later.\n"
"\n"
"    With --array FILE, each non-empty line of FILE not starting with '#'\n"
"    is a shell command (run with /bin/sh -c). With --array RANGE and a\n"
"    command, the command is queued once per index of RANGE (0-99, 2-8:3\n"
"    for every third, 1,4,10-12), each with AEGIS_ARRAY_INDEX set to its\n"
"    index (through env(1), so the command shows it):\n"
"        aegis submit --array 0-9 'python sweep.py --run $AEGIS_ARRAY_INDEX'\n"
"    Either way all the jobs are queued in one transaction, up to 100000\n"
"    of them (a RANGE's command is sent once, with its indices).\n"
"\n"
"    A SPEC.yaml (a file ending in .yaml or .yml, or in .json: JSON is\n"
"    read as YAML) holds one job as a mapping, or several under the key\n"
"    jobs; options may also follow it (aegis submit x.yaml --gpus 2):\n"
"\n"
"        jobs:\n"
"          - name: bert\n"
"            command: python train.py --bs 32   # string: run by /bin/sh -c\n"
"            gpus: 1\n"
"            mem: 20g                           # or mem_mib: 20480\n"
"          - command: [python, eval.py]         # list: run as is\n"
"            after: bert                        # a job of this file, by name\n"
"            mps_threads_pct: 50                # see --mps-threads\n"
"            time: 2:00:00                      # see --time\n"
"          - command: python train_resnet.py\n"
"            model: resnet50_bs32.json          # mem_mib from the model\n"
"            after: [afterany:bert, 41]         # 41: an existing job\n"
"\n"
"    The keys of a job, command the only one it must give:\n"
"\n"
"    command         a string, run by /bin/sh -c, or a list of words, run\n"
"                    as they are; not empty\n"
"    name            as --name\n"
"    feed            as --feed\n"
"    feed_producer   true or false, as --feed-producer\n"
"    gpus            as --gpus\n"
"    mem             as --gpu-mem: 20g, 4000m\n"
"    mem_mib         the same as a number of MiB (a job gives mem or\n"
"                    mem_mib, not both)\n"
"    model           as --model\n"
"    after           as --after, one item or a list of them\n"
"    mps_threads_pct as --mps-threads\n"
"    time            as --time\n"
"    nice            as --nice\n"
"    notify          as --notify\n"
"    cpus            as --cpus\n"
"    host_mem        as --host-mem\n"
"\n"
"    Numbers are written as the options take them, unquoted (a quoted\n"
"    one is text), a whole one as digits: gpus: 2, not 2.0 or \"2\". A\n"
"    spec with jobs: holds no other key beside it.\n"
"\n"
"    after: takes what --after takes, and the names of the file's jobs: a\n"
"    name is an earlier job of the same file (its id is known once the\n"
"    file is queued), a number always an existing job. model: names a\n"
"    model description (see aegis estimate; a relative path is taken from\n"
"    the spec's folder); aegis's memory estimate of it becomes the job's\n"
"    memory unless the job also gives mem or mem_mib. A null value (null,\n"
"    ~, or none) is as if the key were not there. A spec may hold 16 MiB,\n"
"    its lists and mappings nested 64 deep; a larger or deeper one is\n"
"    refused, naming the file (and the line), before it is parsed. A\n"
"    UTF-8 byte order mark at the start of a spec or an --array FILE is\n"
"    skipped.\n"
"\n"
"    A spec in AEGIS's own format (version: 1, as AEGIS's repository\n"
"    writes them) is taken as it is:\n"
"\n"
"        version: 1\n"
"        job:\n"
"          conda_env: tf                        # run in this conda env\n"
"          command: python train.py --batch_size 32\n"
"        resources:\n"
"          num_gpus: 1                          # --gpus\n"
"          gpu_memory_requirement_mib: 3352     # --mem\n"
"        estimates: {horus_mib: 93617.07}       # kept with the job\n"
"        profile: {peak_memory_mib: 2816}       # kept with the job\n"
"\n"
"    The estimates and profile sections are kept with the job as they\n"
"    are (aegis show --json prints them under meta); other sections are\n"
"    ignored with a warning. With job.conda_env the command runs as\n"
"    `conda run -n ENV --no-capture-output`, with the conda found on your\n"
"    PATH (an error names the key when there is none). The job is named\n"
"    after the file unless --name is given (each byte of the file's name\n"
"    that is not UTF-8, and each control character, as '?').\n"
"\n"
"    The options apply to every job that does not say otherwise.\n"
"\n"
"OPTIONS\n"
"    --gpus N        GPUs per job (default 1)\n"
"    --gpu-mem SIZE  the job's expected peak GPU memory on each of its\n"
"                    GPUs (per GPU, not host RAM): 4g, 4GiB, 4000m\n"
"                    (binary units; a plain number is MiB), from 1 MiB to\n"
"                    1 TiB. aegis admits it where SIZE + 2048 MiB fit; a\n"
"                    SIZE larger than the server's largest GPU is refused.\n"
"                    Without it, 5120 MiB are assumed and an out-of-memory\n"
"                    exit climbs the recovery ladder\n"
"    -o, --output PATTERN\n"
"                    also write the job's stdout to this file (appended),\n"
"                    as Slurm's -o: %j is the job's id, %x its name, %u\n"
"                    its user, %a its array index, %% a %; relative to its\n"
"                    directory. The job's own process opens it, as you;\n"
"                    aegis log still has the output\n"
"    -e, --error PATTERN\n"
"                    the same for its stderr\n"
"    --cpus N        the CPUs the job may use (its cgroup's CPU quota;\n"
"                    default: aegisd's cpus_per_gpu times its GPUs, or\n"
"                    none)\n"
"    --host-mem SIZE the host RAM the job may hold (its cgroup's memory\n"
"                    limit): over it, the kernel kills it, and it fails as\n"
"                    over its host memory, not as a GPU OOM (default:\n"
"                    aegisd's host_mem_per_gpu_mib times its GPUs, or none)\n"
"    --mem SIZE      the older name of --gpu-mem (GPU memory per GPU; not\n"
"                    Slurm's --mem, which is host RAM)\n"
"    --model FILE    a model description (aegis-model/1 JSON): the job's\n"
"                    memory is aegis's estimate of it (as printed by\n"
"                    `aegis estimate FILE`); --mem, if also given, wins\n"
"    --name S        a name shown by `aegis ls`: UTF-8 text without\n"
"                    control characters (C0, DEL, C1) or bidirectional\n"
"                    overrides, isolates and marks (U+202A-U+202E,\n"
"                    U+2066-U+2069, U+200E, U+200F), which would act on\n"
"                    the terminals of those who list it\n"
"    --feed NAME     the job reads the shared data feed NAME (see the\n"
"                    aegis_feed Python module): it starts after your\n"
"                    managed producer of NAME if you have one (aegis feed\n"
"                    start; it runs while jobs of the feed are queued or\n"
"                    running), else after another user's where each of\n"
"                    you names the other in AEGIS_FEED_TRUST (see aegis\n"
"                    feed --help), and on the GPU of the feed's running\n"
"                    jobs where its gates allow (feed_colocate in\n"
"                    aegis.yaml)\n"
"    --feed-producer the job is the managed producer of --feed NAME: it\n"
"                    waits for the feed's first job, and stops after its\n"
"                    last (what aegis feed start submits)\n"
"    --after DEPS    run once these existing jobs have ended as asked;\n"
"                    repeatable, and DEPS is comma-separated: ID (its\n"
"                    success), afterok:ID[:ID...], afterany:ID[:ID...]\n"
"                    (its end, however it ended), afternotok:ID[:ID...]\n"
"                    (its failure or cancellation). The job waits for all\n"
"                    of them, and is cancelled once one can no longer be\n"
"                    met\n"
"    --time LIMIT    stop the job once an attempt has run LIMIT, as aegis\n"
"                    cancel stops it (SIGTERM, SIGKILL 10 s later); it\n"
"                    ends in the state timeout (\"over its LIMIT limit\").\n"
"                    Slurm's forms: MINUTES, MM:SS, HH:MM:SS, D-HH,\n"
"                    D-HH:MM, D-HH:MM:SS; or 90s, 30m, 1.5h, 2d. The\n"
"                    limit counts from each attempt's start (a retry\n"
"                    after running out of memory gets it anew) and holds\n"
"                    across restarts of aegisd. Without it the job gets\n"
"                    aegisd's default_time, if set. A short limit lets\n"
"                    the job start on GPUs kept for a wide job ahead of\n"
"                    it, when it ends before that job's expected start\n"
"    --mps-threads PCT  on a GPU aegisd shares through MPS, the job may use\n"
"                    at most PCT% (1..100) of the GPU's SMs\n"
"                    (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE); elsewhere ignored\n"
"    --nice N        lower the job among the queue by N (0..10000): under\n"
"                    aegis-plus a job's priority is its user's fair share\n"
"                    (10000 for a user who used no GPU lately, less the\n"
"                    more they used) minus its nice, so 10000 puts it\n"
"                    behind every job of everyone not niced\n"
"    --notify CMD    run the shell command CMD (/bin/sh -c) when the job\n"
"                    ends (done, failed, cancelled, timeout), as you, with\n"
"                    AEGIS_JOB_ID, AEGIS_JOB_NAME, AEGIS_JOB_USER,\n"
"                    AEGIS_JOB_STATE, AEGIS_JOB_REASON,\n"
"                    AEGIS_JOB_EXIT_STATUS and AEGIS_JOB_DURATION_S in its\n"
"                    environment; killed after notify_timeout_s (config,\n"
"                    30 s) with every process it started, even one that\n"
"                    left its session (setsid), never retried. '' runs\n"
"                    none, not even the config's notify. E.g. --notify\n"
"                    'echo \"$AEGIS_JOB_ID $AEGIS_JOB_STATE\" | mail -s\n"
"                    aegis me@example.org'\n"
"    --array FILE    one command per line, as above\n"
"    --array RANGE   the command once per index, as above\n"
"    --json          print {\"ids\": [...]} instead\n"
"    --socket PATH   aegisd's socket (default $AEGIS_SOCKET, else\n"
"                    " CLIENT_DEFAULT_SOCKET ")\n"
"\n"
"EXIT STATUS\n"
"    0 queued, 1 aegisd unreachable, busy or failing, 2 bad usage or bad\n"
"    input (aegisd's refusals too: more GPUs or memory than it has, more\n"
"    GPUs than max_gpus_per_user, no --after job). An exit 1 after aegisd\n"
"    took the request (no answer in $AEGIS_TIMEOUT_S seconds, default 60,\n"
"    or the connection closed) may still have queued the jobs: aegis ls\n"
"    tells, before a submit is tried again.\n";

/* What the command line gives besides the command. */
typedef struct submit_opts {
    submit_defaults def;
    json_t *after;          /* --after's dependencies (def.after) */
    double model_mem;       /* --model's estimate; < 0: none */
    bool has_mem;           /* --mem given */
    const char *array, *socket;
    request_words typed;    /* how the jobs were given: said in aegisd's
                               refusals and the program check's */
    bool json;
} submit_opts;

/* cmd run through env(1) with AEGIS_ARRAY_INDEX=index, as aegisd runs a
 * range's (proto.c): the job's environment and its -o/-e %a have it. */
static json_t *submit_indexed(json_t *cmd, int index) {
    char var[48];
    snprintf(var, sizeof(var), "AEGIS_ARRAY_INDEX=%d", index);
    json_t *line = json_pack("[s, s]", "/usr/bin/env", var);
    json_array_extend(line, cmd);
    json_decref(cmd);
    return line;
}

/* The UTF-8 byte order mark some editors (Notepad) write first: no part
 * of the first command (which it made fail with exit 127). */
static const char utf8_bom[] = "\xef\xbb\xbf";

/* Reads a file of commands: one job per command line, its index the
 * line's number. */
static int submit_array(const char *path, const submit_defaults *def,
                        json_t *jobs, json_t *lines) {
    unsigned char *text;
    size_t len;
    if (spec_read_bytes(path, &text, &len) != 0) return -1;
    char *line = (char *)text, *end = line + len;
    size_t bom = sizeof(utf8_bom) - 1;
    if (len >= bom && memcmp(line, utf8_bom, bom) == 0) line += bom;
    int lineno = 0, rc = 0;
    while (rc == 0 && line < end) {
        char *nl = memchr(line, '\n', (size_t)(end - line));
        size_t n = (size_t)((nl ? nl : end) - line);
        lineno++;
        if (memchr(line, '\0', n)) {
            fprintf(stderr, "aegis submit: %s:%d: holds a NUL byte\n", path,
                    lineno);
            rc = -1;
            break;
        }
        while (n > 0 && line[n - 1] == '\r') n--;
        line[n] = '\0';
        const char *p = line + strspn(line, " \t");
        line = nl ? nl + 1 : end;
        if (*p == '\0' || *p == '#') continue;
        json_t *cmd = submit_shell(p);
        if (!cmd) {
            fprintf(stderr, "aegis submit: %s:%d: not UTF-8 text\n", path,
                    lineno);
            rc = -1;
            break;
        }
        json_array_append_new(jobs, submit_job(submit_indexed(cmd, lineno), def));
        json_array_append_new(lines, json_integer(lineno));
    }
    free(text);
    if (rc == 0 && json_array_size(jobs) == 0) {
        fprintf(stderr, "aegis submit: %s: no commands\n", path);
        rc = -1;
    }
    return rc;
}

/* The command of the words given: one word with shell syntax runs with
 * /bin/sh -c, as a spec's or an array file's line does; NULL after saying
 * why. */
static json_t *submit_words(int n, char **words) {
    /* refused here, not found missing on PATH as a program named "" (or
     * queued, a shell string of spaces, to run nothing) */
    if ((n == 1 && submit_blank(words[0])) || !words[0][0]) {
        fprintf(stderr, "aegis submit: %s\n", n == 1 ? "the command is empty"
                : "the command's first word, its program, is empty");
        return NULL;
    }
    if (n == 1 && submit_is_shell(words[0])) {
        json_t *cmd = submit_shell(words[0]);
        if (!cmd) fprintf(stderr, "aegis submit: the command is not UTF-8\n");
        return cmd;
    }
    json_t *cmd = json_array();
    for (int i = 0; i < n; i++) {
        json_t *w = json_string(words[i]);
        if (!w) {
            fprintf(stderr, "aegis submit: argument %d is not UTF-8\n", i + 1);
            json_decref(cmd);
            return NULL;
        }
        json_array_append_new(cmd, w);
    }
    return cmd;
}

/* The command once per index of range, with AEGIS_ARRAY_INDEX set by
 * env(1): sent once, with the indices ("array"), for aegisd to repeat,
 * so that 100,000 of them fit in one request. */
static int submit_range(const char *range, json_t *cmd,
                        const submit_defaults *def, json_t *jobs) {
    char err[256];
    json_t *indices = submit_parse_range(range, err, sizeof(err));
    if (!indices) {
        fprintf(stderr, "aegis submit: --array: %s\n", err);
        return -1;
    }
    json_t *job = submit_job(json_incref(cmd), def);
    json_object_set_new(job, "array", indices);
    json_array_append_new(jobs, job);
    return 0;
}

/* Whether arg names a spec: by its suffix, JSON's too (a JSON document
 * is YAML in flow style, and the YAML reader reads it). */
static bool submit_is_spec(const char *arg) {
    static const char *const suffixes[] = {".yaml", ".yml", ".json"};
    size_t n = strlen(arg);
    for (size_t i = 0; i < sizeof(suffixes) / sizeof(*suffixes); i++) {
        size_t k = strlen(suffixes[i]);
        if (n > k && !strcmp(arg + n - k, suffixes[i])) return true;
    }
    return false;
}

/* Option opt's value when it is UTF-8 text; NULL after saying not. */
static const char *submit_text_option(const char *opt, const char *value) {
    return client_text_option("submit", opt, value) ? value : NULL;
}

/* Reads options from optind up to the first operand (the command, whose
 * own options are its own) or "--". Returns 0, -1 after --help, or
 * CLI_USAGE after saying why. */
static int submit_options(int argc, char **argv, submit_opts *o) {
    static const struct option opts[] = {
        {"gpus", required_argument, NULL, 'g'},
        {"mem", required_argument, NULL, 'm'},
        {"gpu-mem", required_argument, NULL, 'm'},
        {"cpus", required_argument, NULL, 'C'},
        {"output", required_argument, NULL, 'o'},
        {"error", required_argument, NULL, 'e'},
        {"host-mem", required_argument, NULL, 'R'},
        {"model", required_argument, NULL, 'M'},
        {"name", required_argument, NULL, 'n'},
        {"feed", required_argument, NULL, 'F'},
        {"feed-producer", no_argument, NULL, 'P'},
        {"after", required_argument, NULL, 'a'},
        {"mps-threads", required_argument, NULL, 'T'},
        {"time", required_argument, NULL, 't'},
        {"nice", required_argument, NULL, 'N'},
        {"notify", required_argument, NULL, 'O'},
        {"array", required_argument, NULL, 'A'},
        {"json", no_argument, NULL, 'j'},
        {"socket", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    char err[256];
    int ch;
    while ((ch = getopt_long(argc, argv, "+ho:e:", opts, NULL)) != -1) {
        switch (ch) {
        case 'g':
            if (cli_parse_long("submit", "gpus", optarg, 1, 64, &o->def.gpus))
                return CLI_USAGE;
            break;
        case 'm':
            if (submit_parse_mem(optarg, &o->def.mem)) {
                fprintf(stderr, "aegis submit: --gpu-mem, --mem: '%s' is not "
                        SUBMIT_MEM_FORMS "\n", optarg);
                return CLI_USAGE;
            }
            o->has_mem = true;
            break;
        case 'M':
            if (submit_model_mem(optarg, &o->model_mem) < 0) return CLI_USAGE;
            break;
        case 'o':
            if (!(o->def.stdout_path = submit_text_option("output", optarg)))
                return CLI_USAGE;
            break;
        case 'e':
            if (!(o->def.stderr_path = submit_text_option("error", optarg)))
                return CLI_USAGE;
            break;
        case 'C':
            if (cli_parse_long("submit", "cpus", optarg, 1, PROTO_MAX_CPUS,
                               &o->def.cpus))
                return CLI_USAGE;
            break;
        case 'R':
            if (submit_parse_mem(optarg, &o->def.host_mem)) {
                fprintf(stderr, "aegis submit: --host-mem: '%s' is not "
                        SUBMIT_MEM_FORMS "\n", optarg);
                return CLI_USAGE;
            }
            break;
        case 'n':
            if (!(o->def.name = submit_text_option("name", optarg)))
                return CLI_USAGE;
            break;
        case 'F':
            if (!(o->def.feed = submit_text_option("feed", optarg)))
                return CLI_USAGE;
            if (!optarg[0]) { /* aegisd takes "" as no feed at all */
                fprintf(stderr, "aegis submit: --feed: the name is empty\n");
                return CLI_USAGE;
            }
            break;
        case 'P':
            o->def.feed_producer = true;
            break;
        case 'a':
            if (submit_parse_after(optarg, false, o->after, err,
                                   sizeof(err))) {
                fprintf(stderr, "aegis submit: --after: %s\n", err);
                return CLI_USAGE;
            }
            break;
        case 'T':
            if (cli_parse_long("submit", "mps-threads", optarg, 1, 100,
                               &o->def.mps_threads))
                return CLI_USAGE;
            break;
        case 't':
            if (timelimit_parse(optarg, &o->def.time_limit)) {
                fprintf(stderr, "aegis submit: --time: '%s' is not a time "
                        "limit: MINUTES, MM:SS, HH:MM:SS, D-HH:MM:SS, or 90s, "
                        "30m, 2h, 1d (from 1 s to 365 days)\n", optarg);
                return CLI_USAGE;
            }
            break;
        case 'N':
            if (cli_parse_long("submit", "nice", optarg, 0, CORE_NICE_MAX,
                               &o->def.nice))
                return CLI_USAGE;
            break;
        case 'O':
            if (!(o->def.notify = submit_text_option("notify", optarg)))
                return CLI_USAGE;
            if (strlen(optarg) > PROTO_MAX_NOTIFY) {
                fprintf(stderr, "aegis submit: --notify: longer than %d "
                        "bytes\n", PROTO_MAX_NOTIFY);
                return CLI_USAGE;
            }
            break;
        case 'A': o->array = optarg; break;
        case 'j': o->json = true; break;
        case 's': o->socket = optarg; break;
        case 'h': fputs(help, stdout); return -1;
        default: fputs("Run 'aegis submit --help' for usage.\n", stderr);
                 return CLI_USAGE;
        }
    }
    return 0;
}

/* The jobs the command line asks for, into jobs: -1 after saying why. */
static int submit_jobs(int argc, char **argv, submit_opts *o, json_t *jobs) {
    bool dashes = optind > 1 && !strcmp(argv[optind - 1], "--");
    if (!o->array && !dashes && optind < argc && submit_is_spec(argv[optind])) {
        /* a spec may come first, its options after it */
        const char *spec = o->typed.file = argv[optind++];
        int rc = submit_options(argc, argv, o);
        if (rc) return rc < 0 ? 1 : -1;
        if (optind < argc) {
            fprintf(stderr, "aegis submit: %s: a SPEC.yaml takes no command "
                    "words ('%s')\n", spec, argv[optind]);
            return -1;
        }
        if (o->model_mem >= 0 && !o->has_mem) o->def.mem = o->model_mem;
        o->typed.also = request_words_submit_options;
        return submit_spec(spec, &o->def, jobs, &o->typed);
    }
    if (o->model_mem >= 0 && !o->has_mem) o->def.mem = o->model_mem;
    if (o->array && optind == argc) {
        o->typed.file = o->array;
        return submit_array(o->array, &o->def, jobs, o->typed.lines);
    }
    if (optind == argc) {
        fprintf(stderr, "aegis submit: give a command, a SPEC.yaml or "
                "--array FILE\nRun 'aegis submit --help' for usage.\n");
        return -1;
    }
    json_t *cmd = submit_words(argc - optind, argv + optind);
    if (!cmd) return -1;
    int rc = 0;
    if (o->array) {
        rc = submit_range(o->array, cmd, &o->def, jobs);
        json_decref(cmd);
    } else {
        json_array_append_new(jobs, submit_job(cmd, &o->def));
    }
    return rc;
}

/* Sends the jobs (taken) and prints their ids. */
static int submit_send(json_t *jobs, const submit_opts *o) {
    json_t *req = submit_request(jobs);
    if (!req) return CLI_USAGE;
    int rc;
    json_t *ans = client_call_words("submit", client_socket(o->socket), req,
                                    &o->typed, &rc);
    if (!ans) return rc;
    json_t *ids = json_object_get(ans, "ids");
    if (o->json) {
        json_t *out = json_pack("{s:O}", "ids", ids);
        json_dumpf(out, stdout, JSON_COMPACT);
        putchar('\n');
        json_decref(out);
    } else {
        size_t i;
        json_t *id;
        json_array_foreach(ids, i, id)
            printf("%lld\n", (long long)json_integer_value(id));
    }
    json_decref(ans);
    return CLI_OK;
}

int cli_submit(int argc, char **argv) {
    submit_opts o = {.def = {.gpus = 1, .mem = -1}, .model_mem = -1,
                     .after = json_array(),
                     .typed = {.object = "jobs",
                               .words = request_words_submit_options,
                               .lines = json_array(),
                               .given = json_array()}};
    o.def.after = o.after;
    json_t *jobs = json_array();
    int rc = submit_options(argc, argv, &o);
    if (rc == 0) {
        int got = submit_jobs(argc, argv, &o, jobs);
        rc = got < 0 ? CLI_USAGE : got > 0 ? -1 : 0;
    }
    json_decref(o.after);
    o.typed.several = json_array_size(jobs) > 1;
    if (rc == 0 && submit_check_programs(jobs, &o.typed) != 0) rc = CLI_USAGE;
    if (rc == 0) rc = submit_send(jobs, &o);
    else json_decref(jobs);
    json_decref(o.typed.lines);
    json_decref(o.typed.given);
    return rc < 0 ? CLI_OK : rc;
}
