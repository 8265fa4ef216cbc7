/* sim_cmd.c -- `aegis sim`: replay a trace under policies and compare them.
 *
 * Parses the options into sim_options, loads the catalog and the trace
 * (any fault in them is bad input: exit 2), runs the simulator once per
 * policy and prints a table, or JSON streamed policy by policy.
 */
#include "cli.h"

#include "catalog.h"
#include "chart.h"
#include "engine.h"
#include "loaders.h"
#include "report.h"
#include "share_model.h"
#include "svg.h"
#include "trace.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* More policies than the core has would only repeat some. */
#define MAX_POLICIES 16
/* One run per policy and sharing mode. */
#define MAX_RUNS (MAX_POLICIES * SHARE_NMODES)

static const char help_head[] =
"NAME\n"
"    aegis sim - replay a job trace under scheduling policies\n"
"\n"
"SYNOPSIS\n"
"    aegis sim --trace FILE [--catalog FILE] [--gpus N] [--gpu-mem-mib M]\n"
"              [--server-cpus C] [--servers S] [--dispatch work|slurm]\n"
"              [--threads T]\n"
"              [--policy NAME[,NAME...]|all]\n"
"              [--json] [--timeline FILE.svg] [--estimator COLUMN]\n"
"              [--set NAME=VALUE]...\n"
"              [--model NAME=VALUE]... [--grid-intensity G] [--pue P]\n"
"              [--report-csv FILE] [--quiet] [--check]\n"
"              [--sharing MODE[,MODE...]|all] [--gpu-model NAME]\n"
"              [--chart FILE.svg]\n"
"\n"
"DESCRIPTION\n"
"    Replays the jobs of a trace on modelled GPU servers, driving the very\n"
"    scheduling core the aegis daemon runs, in virtual time: a 60-job trace\n"
"    takes milliseconds. Time jumps from event to event (arrival, first GPU\n"
"    activity, end of observation, completion, OOM crash). A job's work is\n"
"    its catalog solo time; it runs slower when sharing a GPU, by the\n"
"    interference model (--model). When a job starts on a GPU where the\n"
"    true peak memory of its jobs exceeds the GPU's memory, it crashes with\n"
"    an OOM, as long after its launch as the measured failed attempts\n"
"    took (--model oom_crash_s), and the core's recovery ladder requeues it.\n"
"\n"
"    The trace is a CSV with columns submit_time_s and workload (or\n"
"    task_path, whose file stem names the workload); job_index, if present,\n"
"    numbers the jobs, each number once. Submit times lie in [0, 1e12] s.\n"
"    An optional column user names who submitted each job (aegis-plus's\n"
"    fair share and per-user limits read it): 1 to 64 bytes of UTF-8 text\n"
"    without control characters or a space at either end. Equal names are\n"
"    one user, different names different users; an empty cell or \"-\" is\n"
"    the anonymous user \"-\", who submits every job of a trace without\n"
"    the column. Optional columns feed and load_cpus give the data feed a job\n"
"    reads and the CPU cores its data loading keeps busy, time_limit_s its\n"
"    time limit. Lines starting with '#' are comments. A field may be\n"
"    quoted, as spreadsheets save CSV (\"a, b\"; a quote doubled), within\n"
"    its line; a UTF-8 byte order mark at the start is skipped.\n"
"\n"
"    Instead of naming a workload (workload empty, or no such column), a\n"
"    row may give its job's figures: duration_s (its run time alone),\n"
"    mem_mib (the memory it declares per GPU, trusted whole as aegisd\n"
"    trusts submit --mem: never capped at est_cap_mib), peak_mib (the\n"
"    memory it reaches per GPU, which decides an OOM; default mem_mib),\n"
"    num_gpus (default 1) and smact, smocc, drama (default 0.30, 0.17,\n"
"    0.12). A row that names a workload takes the catalog's figure for\n"
"    each of these it leaves empty. docs/simulator.md turns sacct output\n"
"    into such a trace (tools/sacct_trace.py).\n"
"\n"
"OPTIONS\n"
"    --trace FILE         the job trace (required)\n"
"    --catalog FILE       workload catalog; default the bundled\n"
"                         data/catalog.csv (53 AEGIS workloads, A100-40GB)\n"
"    --gpus N             GPUs per server (default 3, at most 64)\n"
"    --gpu-mem-mib M      memory of each GPU in MiB (default 40960)\n"
"    --server-cpus C      CPUs of each server, shared by its jobs' data\n"
"                         loaders (load_cpus): while they want W > C, each\n"
"                         loader gets C/W of the CPUs it wants and its job\n"
"                         goes no faster than C/W of its speed alone;\n"
"                         aegis-plus starts no job whose load_cpus would\n"
"                         take the running jobs' past C (default 12 per\n"
"                         GPU, as cloud A100 40 GB servers have; 0: as\n"
"                         many as wanted)\n"
"    --servers S          identical servers behind a dispatcher that sends\n"
"                         each job to the server whose outstanding work\n"
"                         (GPUs x solo time) runs out first (default 1);\n"
"                         GPU k of server s is number s*N+k\n"
"    --dispatch MODE      how jobs reach the servers: work (the default, as\n"
"                         above) or slurm: Slurm's FIFO over each node's\n"
"                         aegis_mem GRES (its GPU memory), a job asking its\n"
"                         memory estimate and holding it until it ends\n"
"    --threads T          servers replayed at once under --dispatch work\n"
"                         (default: one per CPU); the result is the same\n"
"                         for any T\n"
"    --policy LIST        comma-separated policies, or all (default all):\n"
"                        ";

static const char help_tail[] =
"    --sharing LIST       comma-separated GPU sharing modes, or all:\n"
"                         " SHARE_MODE_LIST ". Every policy runs\n"
"                         under each; every GPU of a run has the mode.\n"
"                         Default naive: the interference\n"
"                         model is fitted to AEGIS runs that collocated\n"
"                         plain processes (CUDA time-slicing). exclusive:\n"
"                         one job per GPU. mps: the naive slowdown above 1\n"
"                         times mps_excess. mig: each job in the smallest\n"
"                         MIG instance holding its demand, no interference,\n"
"                         speed and memory of its slices (see MODEL); a job\n"
"                         whose true peak exceeds its instance OOMs and\n"
"                         climbs to the next profile. auto: MIG or MPS per\n"
"                         job (README, \"Sharing modes\"). Given this\n"
"                         option, rows are named POLICY/MODE\n"
"    --gpu-model NAME     the GPUs' MIG profile table, one of\n"
"                         " SHARE_MODEL_GPU_LIST "\n"
"                         (default A100-40GB, the traces' GPU); also sets\n"
"                         --gpu-mem-mib to its memory unless that is given\n"
"    --chart FILE.svg     draw makespan, mean JCT and energy of every run as\n"
"                         bars relative to the exclusive run (policy or\n"
"                         mode exclusive), else to the first\n"
"    --estimator COLUMN   catalog column given to the core as the memory\n"
"                         estimate (used by aegis-est): horus_mib (default),\n"
"                         faketensor_mib, gpumemnet_mib or aegis_mib (aegis\n"
"                         estimate of data/models/<workload>.json)\n"
"    --set NAME=VALUE     set a core parameter (smact_max=0.5, observe_s=30,\n"
"                         placement=lug, ...); repeatable\n"
"    --model NAME=VALUE   set a model parameter; repeatable (see MODEL)\n"
"    --json               print one JSON object instead of the table:\n"
"                         {\"policies\": [{\"policy\", \"sharing\",\n"
"                         \"dispatch\", \"servers\", \"gpus_per_server\",\n"
"                         \"makespan_s\", \"done\" (jobs finished: the\n"
"                         means and percentiles are over them, 0 when none\n"
"                         did; the table shows -), \"mean_jct_s\",\n"
"                         \"p50_jct_s\", \"p95_jct_s\", \"mean_wait_s\",\n"
"                         \"mean_slowdown\",\n"
"                         \"ooms\", \"stopped\", \"timeouts\" (jobs stopped\n"
"                         at their time limit, not in stopped),\n"
"                         \"unfinished\", \"gpu_util\", \"energy_j\",\n"
"                         \"load_cpu_s\", those OUTPUT adds,\n"
"                         \"total_wait_by_reason_s\": {REASON: s},\n"
"                         \"jobs\": [{\"index\", \"workload\", \"user\" (with\n"
"                         a user column), \"submit_s\", \"status\" (done,\n"
"                         stopped, timeout or unfinished), \"jct_s\",\n"
"                         \"wait_s\", \"slowdown\" (done jobs only),\n"
"                         \"wait_by_reason_s\": {REASON: s},\n"
"                         \"attempts\": [{\"start_s\",\n"
"                         \"active_s\" (null: its time limit came first),\n"
"                         \"end_s\", \"gpus\", \"oom\"}]}]}]};\n"
"                         a job's reasons add up to its wait_s\n"
"    --timeline FILE.svg  draw each GPU's jobs over time for every policy,\n"
"                         and a chart comparing the policies\n"
"    --grid-intensity G   grid carbon intensity, gCO2eq/kWh (default 475,\n"
"                         the world average CodeCarbon falls back to)\n"
"    --pue P              power usage effectiveness (default 1.0)\n"
"    --report-csv FILE    one row per job and policy in the schema of\n"
"                         `aegis report --csv`, plus a policy column: a\n"
"                         job's energy is its SMACT share of its GPUs'\n"
"                         modelled power while it is active on them\n"
"    --quiet              print nothing but errors\n"
"    --check              recount the core's bookkeeping (each GPU's job\n"
"                         count and sums, the running count, the queues)\n"
"                         from its jobs after every event, and fail at the\n"
"                         first count kept wrong; slower (off by default)\n"
"    --help               this text\n"
"\n"
"MODEL\n"
"    A job alone runs at speed 1. On a GPU whose active jobs sum to SMACT L,\n"
"    a job of SMACT u whose co-runners sum to DRAMA D is slowed by\n"
"        1 + beta * max(0, L - threshold) * (L - u) / L + delta * D\n"
"          + gamma * max(0, n - 1)    (n: its co-runners)\n"
"    (fitted to the real AEGIS runs, see README), and a job on several\n"
"    GPUs goes at the pace of its slowest. That is naive sharing; under\n"
"    MPS the part above 1 is multiplied by mps_excess. In a MIG instance\n"
"    of c compute and k memory slices a job is slowed only by its slice:\n"
"        max(1, u / (c/7 * mig_sm_frac), d / (k/8))   (d: its DRAMA)\n"
"    and its GPU reads its activity divided by that. Power per\n"
"    GPU is idle_w + (max_w - idle_w) * min(1, L). Parameters:\n";

static const char help_end[] =
"\n"
"OUTPUT\n"
"    Per policy: makespan (first submit to last end), mean/p50/p95 job\n"
"    completion time (JCT, submit to end), mean wait (JCT minus the time\n"
"    its attempts ran), mean slowdown (JCT / solo time), OOM crashes, jobs\n"
"    stopped by the core (those stopped at their time limit included, with\n"
"    a line under the table saying how many) and jobs left unfinished,\n"
"    mean fraction of GPU time busy, energy, CO2 (of all GPUs' energy,\n"
"    idle included: kWh x pue x grid intensity) and GPU-hours (jobs' GPUs\n"
"    x attempt time). With --json each policy also has energy_kwh, co2_g,\n"
"    gpu_hours, pue, grid_intensity_g_per_kwh and jobs_total, the per-job\n"
"    rows summed as in `aegis report --json`. With exclusive among the\n"
"    policies the table also shows makespan and mean JCT relative to it.\n"
"\n"
"EXIT STATUS\n"
"    0 success; 1 a run failed or left jobs unfinished; 2 bad usage or bad\n"
"    input (unreadable, empty or binary file, missing column, bad number,\n"
"    unknown workload, a user cell that is no name, a job that could never\n"
"    start: more GPUs than --gpus or than max_gpus_per_user), with a message\n"
"    naming the file, line and field (and, for an unknown workload, the\n"
"    nearest names in the catalog;\n"
"    `aegis gen-trace --list` lists them all).\n"
"\n"
"EXAMPLES\n"
"    aegis sim --trace data/traces/demo.csv\n"
"    aegis sim --trace philly.csv --policy exclusive,aegis --json\n"
"    aegis sim --trace big.csv --servers 128 --gpus 8 --policy aegis --quiet\n";

typedef struct sim_cmd {
    sim_options opt;
    const char *catalog, *trace, *timeline;
    const char *report_csv;     /* --report-csv FILE, or NULL */
    acct_params acct;
    const char *policies[MAX_POLICIES];
    int npolicies;
    share_mode modes[SHARE_NMODES]; /* --sharing, in the order given */
    int nmodes;
    bool sharing_given;         /* name rows POLICY/MODE */
    bool mem_given;             /* --gpu-mem-mib given */
    bool cpus_given;            /* --server-cpus given */
    const char *chart;          /* --chart FILE.svg, or NULL */
    bool json, quiet;
} sim_cmd;

static void print_line(const char *text, void *ctx) {
    fprintf((FILE *)ctx, "        %s\n", text);
}

static void print_help(void) {
    fputs(help_head, stdout);
    for (const char *const *p = core_policy_names(); *p; p++)
        printf(" %s", *p);
    fputs("\n", stdout);
    fputs(help_tail, stdout);
    sim_model_describe(print_line, stdout);
    fputs(help_end, stdout);
}

static bool known_policy(const char *name) {
    for (const char *const *p = core_policy_names(); *p; p++)
        if (strcmp(*p, name) == 0) return true;
    return false;
}

/* Calls take() on each name of a comma-separated list (modified in
 * place); take() prints why it refuses one. Returns 0, or -1 after a
 * message, also when the list names nothing. */
static int split_names(sim_cmd *cmd, const char *opt, const char *what,
                       char *list, int (*take)(sim_cmd *, const char *)) {
    int n = 0;
    for (char *name = strtok(list, ","); name; name = strtok(NULL, ",")) {
        if (take(cmd, name) < 0) return -1;
        n++;
    }
    if (n > 0) return 0;
    fprintf(stderr, "aegis sim: --%s: no %s named\n", opt, what);
    return -1;
}

static int take_policy(sim_cmd *cmd, const char *name) {
    if (!known_policy(name)) {
        fprintf(stderr, "aegis sim: --policy: unknown policy '%s'\n", name);
        return -1;
    }
    if (cmd->npolicies == MAX_POLICIES) {
        fprintf(stderr, "aegis sim: --policy: more than %d policies\n",
                MAX_POLICIES);
        return -1;
    }
    cmd->policies[cmd->npolicies++] = name;
    return 0;
}

/* Splits "a,b" (modified in place) into cmd->policies. */
static int parse_policies(sim_cmd *cmd, char *list) {
    cmd->npolicies = 0;
    if (strcmp(list, "all") == 0) {
        for (const char *const *p = core_policy_names(); *p; p++)
            if (cmd->npolicies < MAX_POLICIES) cmd->policies[cmd->npolicies++] = *p;
        return 0;
    }
    return split_names(cmd, "policy", "policy", list, take_policy);
}

static int take_mode(sim_cmd *cmd, const char *name) {
    int m = share_mode_parse(name);
    if (m < 0) {
        fprintf(stderr, "aegis sim: --sharing: unknown mode '%s' (one of "
                "%s, or all)\n", name, SHARE_MODE_LIST);
        return -1;
    }
    if (cmd->nmodes == SHARE_NMODES) {
        fprintf(stderr, "aegis sim: --sharing: more than %d modes\n",
                SHARE_NMODES);
        return -1;
    }
    cmd->modes[cmd->nmodes++] = m;
    return 0;
}

/* Splits "mps,mig" (modified in place) into cmd->modes. */
static int parse_sharing(sim_cmd *cmd, char *list) {
    cmd->nmodes = 0;
    cmd->sharing_given = true;
    if (strcmp(list, "all") == 0) {
        for (int m = 0; m < SHARE_NMODES; m++) cmd->modes[cmd->nmodes++] = m;
        return 0;
    }
    return split_names(cmd, "sharing", "mode", list, take_mode);
}

static int set_gpu_model(sim_cmd *cmd, const char *name) {
    const mig_model *m = share_model_gpu(name);
    if (m) {
        cmd->opt.mig = m;
        return 0;
    }
    fprintf(stderr, "aegis sim: --gpu-model: no MIG table for '%s' (one of "
            "%s)\n", name, SHARE_MODEL_GPU_LIST);
    return -1;
}

/* Splits NAME=VALUE in place; returns the value, or NULL after a message. */
static char *split_assignment(const char *opt, char *text) {
    char *eq = strchr(text, '=');
    if (!eq || eq == text) {
        fprintf(stderr, "aegis sim: --%s: '%s' is not NAME=VALUE\n", opt, text);
        return NULL;
    }
    *eq = '\0';
    return eq + 1;
}

static int set_core(sim_cmd *cmd, char *text) {
    char err[256], *value = split_assignment("set", text);
    if (!value) return -1;
    /* the core's key, which aegisd reads; a replay's policies are listed */
    if (strcmp(text, "policy") == 0) {
        fprintf(stderr, "aegis sim: --set policy: the simulator runs the "
                "policies --policy names (default all): give --policy %s\n",
                value);
        return -1;
    }
    if (core_config_set(&cmd->opt.config, text, value, err, sizeof(err)) < 0) {
        fprintf(stderr, "aegis sim: --set: %s\n", err);
        return -1;
    }
    return 0;
}

static int set_model(sim_cmd *cmd, char *text) {
    char err[256], *value = split_assignment("model", text);
    if (!value) return -1;
    if (sim_model_set(&cmd->opt.model, text, value, err, sizeof(err)) < 0) {
        fprintf(stderr, "aegis sim: --model: %s\n", err);
        return -1;
    }
    return 0;
}

static int set_estimator(sim_cmd *cmd, const char *column) {
    cmd->opt.estimator = cat_estimator(column);
    if (cmd->opt.estimator >= 0) return 0;
    fprintf(stderr, "aegis sim: --estimator: unknown column '%s' (horus_mib, "
            "faketensor_mib, gpumemnet_mib or aegis_mib)\n", column);
    return -1;
}

static int set_dispatch(sim_cmd *cmd, const char *name) {
    int mode = sim_dispatch_parse(name);
    if (mode < 0) {
        fprintf(stderr, "aegis sim: --dispatch: unknown dispatch '%s' (work "
                "or slurm)\n", name);
        return -1;
    }
    cmd->opt.dispatch = (sim_dispatch_mode)mode;
    return 0;
}

/* Returns 0 to run, 1 after --help, -1 on bad usage. */
static int parse_args(sim_cmd *cmd, int argc, char **argv) {
    static const struct option options[] = {
        {"catalog", required_argument, NULL, 'c'},
        {"trace", required_argument, NULL, 't'},
        {"gpus", required_argument, NULL, 'g'},
        {"gpu-mem-mib", required_argument, NULL, 'm'},
        {"servers", required_argument, NULL, 's'},
        {"policy", required_argument, NULL, 'p'},
        {"json", no_argument, NULL, 'j'},
        {"timeline", required_argument, NULL, 'T'},
        {"estimator", required_argument, NULL, 'e'},
        {"set", required_argument, NULL, 'S'},
        {"model", required_argument, NULL, 'M'},
        {"quiet", no_argument, NULL, 'q'},
        {"check", no_argument, NULL, 'K'},
        {"grid-intensity", required_argument, NULL, 'G'},
        {"pue", required_argument, NULL, 'P'},
        {"report-csv", required_argument, NULL, 'R'},
        {"sharing", required_argument, NULL, 'H'},
        {"gpu-model", required_argument, NULL, 'U'},
        {"chart", required_argument, NULL, 'C'},
        {"threads", required_argument, NULL, 'n'},
        {"dispatch", required_argument, NULL, 'D'},
        {"server-cpus", required_argument, NULL, 'u'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    long n;
    int opt, rc = 0;
    while (rc == 0 && (opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (opt) {
        case 'c': cmd->catalog = optarg; break;
        case 't': cmd->trace = optarg; break;
        case 'g':
            rc = cli_parse_long("sim", "gpus", optarg, 1, CORE_MAX_GPUS, &n);
            cmd->opt.gpus = (int)n;
            break;
        case 'm':
            rc = cli_parse_double("sim", "gpu-mem-mib", optarg, 1, 1e9,
                                  &cmd->opt.gpu_mem_mib);
            cmd->mem_given = true;
            break;
        case 's':
            rc = cli_parse_long("sim", "servers", optarg, 1, 100000, &n);
            cmd->opt.servers = (int)n;
            break;
        case 'p': rc = parse_policies(cmd, optarg); break;
        case 'j':
            cmd->json = true;
            cmd->opt.reasons = true;
            break;
        case 'T': cmd->timeline = optarg; break;
        case 'e': rc = set_estimator(cmd, optarg); break;
        case 'S': rc = set_core(cmd, optarg); break;
        case 'M': rc = set_model(cmd, optarg); break;
        case 'q': cmd->quiet = true; break;
        case 'K': cmd->opt.check = true; break;
        case 'G':
            rc = cli_parse_double("sim", "grid-intensity", optarg, 0,
                                  ACCT_GRID_MAX, &cmd->acct.grid_g_per_kwh);
            break;
        case 'P':
            rc = cli_parse_double("sim", "pue", optarg, 1, ACCT_PUE_MAX,
                                  &cmd->acct.pue);
            break;
        case 'R': cmd->report_csv = optarg; break;
        case 'H': rc = parse_sharing(cmd, optarg); break;
        case 'U': rc = set_gpu_model(cmd, optarg); break;
        case 'C': cmd->chart = optarg; break;
        case 'n':
            rc = cli_parse_long("sim", "threads", optarg, 1, 256, &n);
            cmd->opt.threads = (int)n;
            break;
        case 'D': rc = set_dispatch(cmd, optarg); break;
        case 'u':
            rc = cli_parse_double("sim", "server-cpus", optarg, 0, 1e6,
                                  &cmd->opt.server_cpus);
            cmd->cpus_given = true;
            break;
        case 'h': print_help(); return 1;
        default: rc = -1;
        }
    }
    if (rc == 0 && optind < argc) {
        fprintf(stderr, "aegis sim: unexpected argument '%s'\n", argv[optind]);
        rc = -1;
    }
    if (rc == 0 && !cmd->trace) {
        fprintf(stderr, "aegis sim: --trace FILE is required\n");
        rc = -1;
    }
    if (rc == 0 && !cmd->mem_given)
        cmd->opt.gpu_mem_mib = (double)cmd->opt.mig->total_mib;
    if (rc == 0 && !cmd->cpus_given)
        cmd->opt.server_cpus = SIM_CPUS_PER_GPU * cmd->opt.gpus;
    if (rc < 0) fputs("(see 'aegis sim --help')\n", stderr);
    return rc;
}

/* Whether a job of num_gpus GPUs could start at all under every policy
 * run: 0, or -1 with why in err, as aegisd refuses such a job at
 * submission (it needs more GPUs than a server has, or more than a limit
 * of the core such as max_gpus_per_user under aegis-plus). */
static int job_could_start(const sim_cmd *cmd, int num_gpus, char *err,
                           size_t errlen) {
    if (num_gpus > cmd->opt.gpus) {
        snprintf(err, errlen, "needs %d GPUs but a server has %d (--gpus)",
                 num_gpus, cmd->opt.gpus);
        return -1;
    }
    core_config cfg = cmd->opt.config;
    for (int i = 0; i < cmd->npolicies; i++) {
        char why[128];
        cfg.policy = cmd->policies[i];
        if (core_job_within_limits(&cfg, num_gpus, why, sizeof(why)) == 0)
            continue;
        snprintf(err, errlen, "cannot start under %s: %s", cfg.policy, why);
        return -1;
    }
    return 0;
}

/* Refuses a trace with a job that could never start, naming its line,
 * rather than running it to leave the job unfinished. The largest job
 * asks the most, so only a trace whose largest job could not start is
 * read through. */
static int check_fits(const sim_cmd *cmd, const trace *t) {
    char why[256];
    if (job_could_start(cmd, t->max_gpus, why, sizeof(why)) == 0) return 0;
    for (int i = 0; i < t->count; i++) {
        const trace_job *job = &t->jobs[i];
        if (job_could_start(cmd, job->work->num_gpus, why, sizeof(why)) == 0)
            continue;
        fprintf(stderr, "aegis sim: %s:%d: job %lld (%s) %s\n", cmd->trace,
                trace_job_line(cmd->trace, job->index),
                (long long)job->index, job->work->name, why);
        break;
    }
    return -1;
}

/* report_account() of one run, for a thread of its own. */
typedef struct account_task {
    const sim_result *run;
    const acct_params *params;
    FILE *csv;
    report_summary *out;
    int rc;
} account_task;

static void *account_run(void *arg) {
    account_task *a = arg;
    a->rc = report_account(a->run, a->params, a->csv, a->out);
    return NULL;
}

/* Fills *out with run r's summary and its accounting, the latter in a
 * second thread when one can be had: the two read the run independently
 * (report.h) and were, on a million-job replay, a sixth of the command. */
static int summarize_run(const sim_result *r, const acct_params *params,
                         FILE *csv, report_summary *out) {
    account_task task = {.run = r, .params = params, .csv = csv, .out = out};
    pthread_t thread;
    bool threaded = pthread_create(&thread, NULL, account_run, &task) == 0;
    int rc = report_summarize(r, out);
    if (threaded) pthread_join(thread, NULL);
    else account_run(&task);
    return rc < 0 || task.rc < 0 ? -1 : 0;
}

/* Runs every policy under every sharing mode in turn, stopping at one the
 * simulator cannot run; returns how many ran. *status becomes CLI_FAIL
 * when a run failed or left jobs unfinished. Results are kept only when a
 * timeline needs them. */
static int run_policies(const sim_cmd *cmd, const trace *t, FILE *csv,
                        report_summary *sums, sim_result **kept, int *status) {
    char err[512];
    int ran = 0, runs = cmd->npolicies * cmd->nmodes;
    sim_options opt = cmd->opt;
    if (cmd->json) report_json_begin(stdout);
    if (csv) acct_csv_header(csv, true);
    for (; ran < runs; ran++) {
        const char *policy = cmd->policies[ran / cmd->nmodes];
        opt.sharing = cmd->modes[ran % cmd->nmodes];
        char name[REPORT_LABEL_MAX];
        snprintf(name, sizeof(name), "%s%s%s", policy,
                 cmd->sharing_given ? "/" : "",
                 cmd->sharing_given ? share_mode_name(opt.sharing) : "");
        sim_result *r = sim_run(t, &opt, policy, err, sizeof(err));
        if (!r || summarize_run(r, &cmd->acct, csv, &sums[ran]) < 0) {
            fprintf(stderr, "aegis sim: policy %s: %s\n", name,
                    r ? "out of memory" : err);
            sim_result_free(r);
            *status = CLI_FAIL;
            break;
        }
        memcpy(sums[ran].label, name, sizeof(name));
        if (r->unfinished > 0) {
            fprintf(stderr, "aegis sim: policy %s: %d of %d jobs never "
                    "finished (the core stopped placing them)\n", name,
                    r->unfinished, r->njobs);
            *status = CLI_FAIL;
        }
        if (cmd->json) report_json_policy(stdout, r, &sums[ran], ran == 0);
        if (cmd->timeline) kept[ran] = r;
        else sim_result_free(r);
    }
    if (cmd->json) report_json_end(stdout);
    return ran;
}

static int simulate(const sim_cmd *cmd, const trace *t) {
    report_summary sums[MAX_RUNS];
    sim_result *kept[MAX_RUNS] = {NULL};
    int status = CLI_OK;
    FILE *csv = cmd->report_csv ? fopen(cmd->report_csv, "w") : NULL;
    if (cmd->report_csv && !csv) {
        fprintf(stderr, "aegis sim: --report-csv: %s: %s\n", cmd->report_csv,
                strerror(errno));
        return CLI_FAIL;
    }
    int ran = run_policies(cmd, t, csv, sums, kept, &status);
    if (csv && fclose(csv) != 0) {
        fprintf(stderr, "aegis sim: --report-csv: %s: cannot write\n",
                cmd->report_csv);
        status = CLI_FAIL;
    }
    if (ran > 0 && !cmd->json && !cmd->quiet) report_table(stdout, sums, ran);
    char err[512];
    if (ran > 0 && cmd->timeline &&
        svg_timeline(cmd->timeline, kept, sums, ran, err, sizeof(err)) < 0) {
        fprintf(stderr, "aegis sim: --timeline: %s\n", err);
        status = CLI_FAIL;
    }
    if (ran > 0 && cmd->chart &&
        chart_compare(cmd->chart, cmd->trace, sums, ran, err, sizeof(err)) < 0) {
        fprintf(stderr, "aegis sim: --chart: %s\n", err);
        status = CLI_FAIL;
    }
    for (int i = 0; i < ran; i++) sim_result_free(kept[i]);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "aegis sim: cannot write the output\n");
        status = CLI_FAIL;
    }
    return status;
}

int cli_sim(int argc, char **argv) {
    sim_cmd cmd = {.catalog = cli_default_catalog()};
    cmd.opt.servers = 1;
    cmd.opt.gpus = 3;
    cmd.opt.gpu_mem_mib = 40960;
    cmd.opt.estimator = CAT_EST_HORUS;
    cmd.opt.mig = share_model_gpu("A100-40GB");
    cmd.modes[cmd.nmodes++] = SHARE_NAIVE;
    core_config_default(&cmd.opt.config);
    sim_model_default(&cmd.opt.model);
    acct_params_default(&cmd.acct);
    char all[] = "all";
    parse_policies(&cmd, all);
    int rc = parse_args(&cmd, argc, argv);
    if (rc != 0) return rc > 0 ? CLI_OK : CLI_USAGE;
    const char *const inputs[] = {"trace", cmd.trace, "catalog", cmd.catalog,
                                  NULL};
    if (cli_output_apart("sim", "report-csv", cmd.report_csv, inputs) < 0 ||
        cli_output_apart("sim", "timeline", cmd.timeline, inputs) < 0 ||
        cli_output_apart("sim", "chart", cmd.chart, inputs) < 0)
        return CLI_USAGE;
    char err[512];
    cat_catalog *cat = cat_load(cmd.catalog, err, sizeof(err));
    trace *t = cat ? trace_load(cmd.trace, cat, err, sizeof(err)) : NULL;
    int status = CLI_USAGE;
    if (!t) fprintf(stderr, "aegis sim: %s\n", err);
    else if (check_fits(&cmd, t) == 0) status = simulate(&cmd, t);
    trace_free(t);
    cat_free(cat);
    return status;
}
