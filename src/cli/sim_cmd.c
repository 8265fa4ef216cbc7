/* sim_cmd.c -- `aegis sim`: replay a trace under policies and compare them.
 *
 * Parses the options into sim_options, loads the catalog and the trace
 * (any fault in them is bad input: exit 2), runs the simulator once per
 * policy and prints a table, or JSON streamed policy by policy.
 */
#include "cli.h"

#include "catalog.h"
#include "engine.h"
#include "report.h"
#include "svg.h"
#include "trace.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* More policies than the core has would only repeat some. */
#define MAX_POLICIES 16

static const char help_head[] =
"NAME\n"
"    aegis sim - replay a job trace under scheduling policies\n"
"\n"
"SYNOPSIS\n"
"    aegis sim --trace FILE [--catalog FILE] [--gpus N] [--gpu-mem-mib M]\n"
"              [--servers S] [--policy NAME[,NAME...]|all] [--json]\n"
"              [--timeline FILE.svg] [--estimator COLUMN] [--set NAME=VALUE]...\n"
"              [--model NAME=VALUE]... [--grid-intensity G] [--pue P]\n"
"              [--report-csv FILE] [--quiet]\n"
"\n"
"DESCRIPTION\n"
"    Replays the jobs of a trace on modelled GPU servers, driving the very\n"
"    scheduling core the aegis daemon runs, in virtual time: a 60-job trace\n"
"    takes milliseconds. Time jumps from event to event (arrival, first GPU\n"
"    activity, end of observation, completion, OOM crash). A job's work is\n"
"    its catalog solo time; it runs slower when sharing a GPU, by the\n"
"    interference model (--model). When a job starts on a GPU where the\n"
"    true peak memory of its jobs exceeds the GPU's memory, it crashes with\n"
"    an OOM and the core's recovery ladder requeues it.\n"
"\n"
"    The trace is a CSV with columns submit_time_s and workload (or\n"
"    task_path, whose file stem names the workload); job_index, if present,\n"
"    numbers the jobs. Lines starting with '#' are comments.\n"
"\n"
"OPTIONS\n"
"    --trace FILE         the job trace (required)\n"
"    --catalog FILE       workload catalog; default the bundled\n"
"                         data/catalog.csv (53 AEGIS workloads, A100-40GB)\n"
"    --gpus N             GPUs per server (default 3, at most 64)\n"
"    --gpu-mem-mib M      memory of each GPU in MiB (default 40960)\n"
"    --servers S          identical servers behind a dispatcher that sends\n"
"                         each arriving job to the least-loaded server\n"
"                         (default 1); GPU k of server s is number s*N+k\n"
"    --policy LIST        comma-separated policies, or all (default all):\n"
"                        ";

static const char help_tail[] =
"    --estimator COLUMN   catalog column given to the core as the memory\n"
"                         estimate (used by aegis-est): horus_mib (default),\n"
"                         faketensor_mib, gpumemnet_mib or aegis_mib (aegis\n"
"                         estimate of data/models/<workload>.json)\n"
"    --set NAME=VALUE     set a core parameter (smact_max=0.5, observe_s=30,\n"
"                         placement=lug, ...); repeatable\n"
"    --model NAME=VALUE   set a model parameter; repeatable (see MODEL)\n"
"    --json               print one JSON object instead of the table:\n"
"                         {\"policies\": [{\"policy\", \"makespan_s\",\n"
"                         \"mean_jct_s\", \"p50_jct_s\", \"p95_jct_s\",\n"
"                         \"mean_wait_s\", \"ooms\", \"energy_j\", \"jobs\": [{\n"
"                         \"index\", \"workload\", \"submit_s\", \"attempts\":\n"
"                         [{\"start_s\", \"end_s\", \"gpus\", \"oom\"}]}]}]}\n"
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
"    --help               this text\n"
"\n"
"MODEL\n"
"    A job alone runs at speed 1. On a GPU whose active jobs sum to SMACT L,\n"
"    a job of SMACT u whose co-runners sum to DRAMA D is slowed by\n"
"        1 + beta * max(0, L - threshold) * (L - u) / L + delta * D\n"
"          + gamma * max(0, n - 1)    (n: its co-runners)\n"
"    (fitted to the real AEGIS runs, see README), and a job on several\n"
"    GPUs goes at the pace of its slowest. Power per\n"
"    GPU is idle_w + (max_w - idle_w) * min(1, L). Parameters:\n";

static const char help_end[] =
"\n"
"OUTPUT\n"
"    Per policy: makespan (first submit to last end), mean/p50/p95 job\n"
"    completion time (JCT, submit to end), mean wait (JCT minus the time\n"
"    its attempts ran), mean slowdown (JCT / solo time), OOM crashes, jobs\n"
"    stopped by the core and jobs left unfinished, mean fraction of GPU\n"
"    time busy, energy, CO2 (of all GPUs' energy, idle included: kWh x\n"
"    pue x grid intensity) and GPU-hours (jobs' GPUs x attempt time). With\n"
"    --json each policy also has energy_kwh, co2_g, gpu_hours, pue,\n"
"    grid_intensity_g_per_kwh and jobs_total, the per-job rows summed as\n"
"    in `aegis report --json`. With exclusive among the policies the table\n"
"    also shows makespan and mean JCT relative to it.\n"
"\n"
"EXIT STATUS\n"
"    0 success; 1 a run failed or left jobs unfinished; 2 bad usage or bad\n"
"    input (unreadable, empty or binary file, missing column, bad number,\n"
"    unknown workload), with a message naming the file, line and field.\n"
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

/* Splits "a,b" (modified in place) into cmd->policies. */
static int parse_policies(sim_cmd *cmd, char *list) {
    cmd->npolicies = 0;
    if (strcmp(list, "all") == 0) {
        for (const char *const *p = core_policy_names(); *p; p++)
            if (cmd->npolicies < MAX_POLICIES) cmd->policies[cmd->npolicies++] = *p;
        return 0;
    }
    for (char *name = strtok(list, ","); name; name = strtok(NULL, ",")) {
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
    }
    if (cmd->npolicies == 0) {
        fprintf(stderr, "aegis sim: --policy: no policy named\n");
        return -1;
    }
    return 0;
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
        {"grid-intensity", required_argument, NULL, 'G'},
        {"pue", required_argument, NULL, 'P'},
        {"report-csv", required_argument, NULL, 'R'},
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
            break;
        case 's':
            rc = cli_parse_long("sim", "servers", optarg, 1, 100000, &n);
            cmd->opt.servers = (int)n;
            break;
        case 'p': rc = parse_policies(cmd, optarg); break;
        case 'j': cmd->json = true; break;
        case 'T': cmd->timeline = optarg; break;
        case 'e': rc = set_estimator(cmd, optarg); break;
        case 'S': rc = set_core(cmd, optarg); break;
        case 'M': rc = set_model(cmd, optarg); break;
        case 'q': cmd->quiet = true; break;
        case 'G':
            rc = cli_parse_double("sim", "grid-intensity", optarg, 0,
                                  ACCT_GRID_MAX, &cmd->acct.grid_g_per_kwh);
            break;
        case 'P':
            rc = cli_parse_double("sim", "pue", optarg, 1, ACCT_PUE_MAX,
                                  &cmd->acct.pue);
            break;
        case 'R': cmd->report_csv = optarg; break;
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
    if (rc < 0) fputs("(see 'aegis sim --help')\n", stderr);
    return rc;
}

/* A job needing more GPUs than a server has could never run. */
static int check_fits(const sim_cmd *cmd, const trace *t) {
    if (t->max_gpus <= cmd->opt.gpus) return 0;
    for (int i = 0; i < t->count; i++) {
        if (t->jobs[i].work->num_gpus <= cmd->opt.gpus) continue;
        fprintf(stderr, "aegis sim: %s: job %lld (%s) needs %d GPUs but a "
                "server has %d (--gpus)\n", cmd->trace,
                (long long)t->jobs[i].index, t->jobs[i].work->name,
                t->jobs[i].work->num_gpus, cmd->opt.gpus);
        break;
    }
    return -1;
}

/* Runs the policies in turn, stopping at one the simulator cannot run;
 * returns how many ran. *status becomes CLI_FAIL when a run failed or left
 * jobs unfinished. Results are kept only when a timeline needs them. */
static int run_policies(const sim_cmd *cmd, const trace *t, FILE *csv,
                        report_summary *sums, sim_result **kept, int *status) {
    char err[512];
    int ran = 0;
    if (cmd->json) report_json_begin(stdout);
    if (csv) acct_csv_header(csv, true);
    for (; ran < cmd->npolicies; ran++) {
        const char *policy = cmd->policies[ran];
        sim_result *r = sim_run(t, &cmd->opt, policy, err, sizeof(err));
        if (!r || report_summarize(r, &sums[ran]) < 0 ||
            report_account(r, &cmd->opt.model, &cmd->acct, csv,
                           &sums[ran]) < 0) {
            fprintf(stderr, "aegis sim: policy %s: %s\n", policy,
                    r ? "out of memory" : err);
            sim_result_free(r);
            *status = CLI_FAIL;
            break;
        }
        if (r->unfinished > 0) {
            fprintf(stderr, "aegis sim: policy %s: %d of %d jobs never "
                    "finished (the core stopped placing them)\n", policy,
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
    report_summary sums[MAX_POLICIES];
    sim_result *kept[MAX_POLICIES] = {NULL};
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
    core_config_default(&cmd.opt.config);
    sim_model_default(&cmd.opt.model);
    acct_params_default(&cmd.acct);
    char all[] = "all";
    parse_policies(&cmd, all);
    int rc = parse_args(&cmd, argc, argv);
    if (rc != 0) return rc > 0 ? CLI_OK : CLI_USAGE;
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
