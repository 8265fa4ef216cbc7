/* queue_cmd.c -- `aegis update`, `aegis priority`, `aegis fairshare` and
 * `aegis clear`: Slurm's scontrol update, sprio and sshare, and
 * task-spooler's tsp -C, for aegisd's queue. Each is
 * one request; aegisd decides who may change what (queue_ctl.c).
 */
#include "cli.h"
#include "client.h"
#include "core.h"
#include "submit.h"
#include "timelimit.h"
#include "text_safe.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SOCKET_OPT \
"    --socket PATH   aegisd's socket (default $AEGIS_SOCKET, else\n" \
"                    " CLIENT_DEFAULT_SOCKET ")\n"
#define EXIT_STATUS_HEAD \
"\nEXIT STATUS\n    0 success, 1 failure (aegisd unreachable, busy or failing),\n" \
"    2 bad usage or a request aegisd refused"
/* update's: the refusals of a change to a job */
#define EXIT_STATUS EXIT_STATUS_HEAD " (no such job, not yours, a\n" \
"    raise only root may make).\n"
/* the listings': no job of theirs to refuse */
#define EXIT_STATUS_LIST EXIT_STATUS_HEAD ".\n"

static const char update_help[] =
"NAME\n    aegis update - change a queued job (Slurm's scontrol update)\n\n"
"SYNOPSIS\n    aegis update ID [--time LIMIT] [--nice N] [--gpu-mem SIZE]\n"
"                 [--name S] [--json] [--socket PATH]\n\n"
"DESCRIPTION\n"
"    Changes a job that has not started (queued or held): it keeps its\n"
"    place in submission order, and moves among its user's jobs as its\n"
"    new nice says. Its owner may only lower its priority (a larger\n"
"    nice) or its time limit, and change its memory and name; root may\n"
"    also raise either. A running job cannot be updated.\n\n"
"OPTIONS\n"
"    --time LIMIT    each attempt's time limit, as submit --time takes it\n"
"    --nice N        0..10000: lowers its priority under aegis-plus\n"
"    --gpu-mem SIZE  its peak GPU memory per GPU, as submit --gpu-mem\n"
"                    takes it (--mem is the same)\n"
"    --name S        its name\n"
"    --json          aegisd's answer: {ok: true, id, time_limit_s, nice,\n"
"                    mem_mib, name}, time_limit_s and mem_mib null where\n"
"                    the job has none\n"
SOCKET_OPT EXIT_STATUS;

static const char priority_help[] =
"NAME\n    aegis priority - each queued job's priority and its parts (sprio)\n\n"
"SYNOPSIS\n    aegis priority [--json] [--socket PATH]\n\n"
"DESCRIPTION\n"
"    Under aegis-plus, each backfill pass takes the users' next jobs in\n"
"    order of priority, the higher first. A job's priority is its user's\n"
"    fair share less its nice; its head start is how much earlier than\n"
"    its submission it stands among its user's jobs (a job demanding over\n"
"    half a GPU, big_advance_s). One line per queued first attempt:\n\n"
"    ID              the job's id\n"
"    USER            its owner\n"
"    PRIORITY        FAIRSHARE - NICE\n"
"    FAIRSHARE       10000 x 2^(-usage/share): its user's fair-share\n"
"                    factor (aegis fairshare), scaled so that nice can undo\n"
"                    all of it\n"
"    NICE            its nice (submit --nice, aegis update --nice)\n"
"    HEAD_START      seconds it queues ahead of its submission\n\n"
"    Other policies run the queue in submission order and have no\n"
"    priorities: aegis priority says so. Retries of jobs that ran out of\n"
"    memory go before every first attempt, and are not listed.\n\n"
"OPTIONS\n"
"    --json          aegisd's answer: {ok: true, policy, priorities,\n"
"                    nice_max, jobs: [{id, user, priority, fair_share,\n"
"                    nice, head_start_s}]}\n"
SOCKET_OPT EXIT_STATUS_LIST;

static const char fairshare_help[] =
"NAME\n    aegis fairshare - each user's GPU time, usage and share (sshare)\n\n"
"SYNOPSIS\n    aegis fairshare [--json] [--socket PATH]\n\n"
"DESCRIPTION\n"
"    One line per user aegisd has seen since it started:\n\n"
"    USER            the user\n"
"    USAGE_GPU_H     GPU-hours its jobs held\n"
"    DECAYED_GPU_H   the same, each hour halved every fairshare_half_life_s\n"
"    SHARE_GPU_H     the share: the mean decayed usage of the users with\n"
"                    jobs queued or running\n"
"    FACTOR          2^(-decayed/share): 1 for a user who used nothing,\n"
"                    0.5 for one who used its share\n"
"    RUNNING, QUEUED its jobs running and waiting\n\n"
"    Only aegis-plus orders the queue by it; under other policies the\n"
"    usage is not decayed and the factor is not used.\n\n"
"OPTIONS\n"
"    --json          aegisd's answer: {ok: true, policy, priorities,\n"
"                    half_life_s, users: [{uid, user, usage_gpu_s,\n"
"                    decayed_gpu_s, share_gpu_s, factor, running,\n"
"                    queued}]}\n"
SOCKET_OPT EXIT_STATUS_LIST;

static const char clear_help[] =
"NAME\n    aegis clear - take your finished jobs out of aegis ls (tsp -C)\n\n"
"SYNOPSIS\n    aegis clear [--json] [--socket PATH]\n\n"
"DESCRIPTION\n"
"    Your finished jobs (done, failed, cancelled, timeout) no longer show\n"
"    in aegis ls and aegis ls --all, as task-spooler's tsp -C clears its\n"
"    list. They are kept: aegis show ID and aegis log ID still give them,\n"
"    and aegis report still counts them. Queued and running jobs stay.\n\n"
"OPTIONS\n"
"    --json          aegisd's answer: {ok: true, cleared: how many}\n"
SOCKET_OPT EXIT_STATUS_LIST;

/* Says what update needs; CLI_USAGE. */
static int update_usage(void) {
    fprintf(stderr, "aegis update: bad usage: an ID and at least one of "
            "--time, --nice, --gpu-mem, --name\nRun 'aegis update --help' "
            "for usage.\n");
    return CLI_USAGE;
}

/* Reads update's options into req; 0, -1 after --help, or CLI_USAGE. */
static int update_options(int argc, char **argv, json_t *req,
                          const char **socket, int *json) {
    static const struct option opts[] = {
        {"time", required_argument, NULL, 't'},
        {"nice", required_argument, NULL, 'N'},
        {"gpu-mem", required_argument, NULL, 'm'},
        {"mem", required_argument, NULL, 'm'},
        {"name", required_argument, NULL, 'n'},
        {"json", no_argument, NULL, 'j'},
        {"socket", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    double x;
    long nice;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 'h': fputs(update_help, stdout); return -1;
        case 's': *socket = optarg; break;
        case 'j': *json = 1; break;
        case 'n':
            if (!client_text_option("update", "name", optarg))
                return CLI_USAGE;
            json_object_set_new(req, "name", json_string(optarg));
            break;
        case 't':
            if (timelimit_parse(optarg, &x)) {
                fprintf(stderr, "aegis update: --time: '%s' is not a time "
                        "limit: MINUTES, MM:SS, HH:MM:SS, D-HH:MM:SS, or 90s, "
                        "30m, 2h, 1d (from 1 s to 365 days)\n", optarg);
                return CLI_USAGE;
            }
            json_object_set_new(req, "time_limit_s", json_real(x));
            break;
        case 'm':
            if (submit_parse_mem(optarg, &x)) {
                fprintf(stderr, "aegis update: --gpu-mem, --mem: '%s' is not "
                        SUBMIT_MEM_FORMS "\n", optarg);
                return CLI_USAGE;
            }
            json_object_set_new(req, "mem_mib", json_real(x));
            break;
        case 'N':
            if (cli_parse_long("update", "nice", optarg, 0, CORE_NICE_MAX, &nice))
                return CLI_USAGE;
            json_object_set_new(req, "nice", json_integer(nice));
            break;
        default: /* getopt has said what */
            fputs("Run 'aegis update --help' for usage.\n", stderr);
            return CLI_USAGE;
        }
    }
    return 0;
}

/* What aegisd refuses in an update, said as the option. */
static const request_word update_fields[] = {
    {"name", "--name"}, {"nice", "--nice"}, {"mem_mib", "--mem"},
    {"time_limit_s", "--time"}, {NULL, NULL}};
static const request_words update_words = {.object = "update",
                                           .words = update_fields};

int cli_update(int argc, char **argv) {
    json_t *req = json_pack("{s:s}", "op", "update");
    const char *socket = NULL;
    int json = 0, rc = update_options(argc, argv, req, &socket, &json);
    json_int_t id;
    /* each refusal is said once: a bad value has been named already,
     * and the usage line would then claim something is missing */
    if (rc == 0 && (optind != argc - 1 || json_object_size(req) < 2))
        rc = update_usage(); /* "op" and a change */
    if (rc == 0 && client_parse_id("update", argv[optind], &id) != 0)
        rc = CLI_USAGE;
    if (rc != 0) {
        json_decref(req);
        return rc < 0 ? CLI_OK : rc;
    }
    json_object_set_new(req, "id", json_integer(id));
    json_t *ans = client_call_words("update", client_socket(socket), req,
                                    &update_words, &rc);
    if (!ans) return rc;
    if (json) client_print_json(ans);
    else printf("job %lld updated\n", (long long)id);
    json_decref(ans);
    return CLI_OK;
}

/* One request without fields ({"op": op}) after the common options: its
 * answer, or NULL with *rc (CLI_OK after --help). */
static json_t *call_plain(const char *op, const char *help, int argc,
                          char **argv, client_flags *f, int *rc) {
    *rc = client_options(op, argc, argv, help, "j", 0, 0, f);
    if (*rc) {
        *rc = *rc < 0 ? CLI_OK : *rc;
        return NULL;
    }
    return client_call(op, client_socket(f->socket),
                       json_pack("{s:s}", "op", op), rc);
}

/* The line a policy without priorities gets instead of a table. */
static bool no_priorities(const char *cmd, json_t *ans) {
    if (json_is_true(json_object_get(ans, "priorities"))) return false;
    printf("aegis %s: policy %s runs the queue in submission order: its "
           "jobs have no priorities (aegis-plus orders by fair share)\n", cmd,
           json_string_value(json_object_get(ans, "policy")));
    return true;
}

static double field(json_t *row, const char *key) {
    return json_number_value(json_object_get(row, key));
}

int cli_priority(int argc, char **argv) {
    client_flags f;
    int rc;
    json_t *ans = call_plain("priority", priority_help, argc, argv, &f, &rc);
    if (!ans) return rc;
    if (f.json) client_print_json(ans);
    else if (!no_priorities("priority", ans)) {
        printf("%-7s %-10s %9s %9s %6s %10s\n", "ID", "USER", "PRIORITY",
               "FAIRSHARE", "NICE", "HEAD_START");
        size_t i;
        json_t *row;
        json_array_foreach(json_object_get(ans, "jobs"), i, row)
            printf("%-7.0f %-10.10s %9.0f %9.0f %6.0f %10.0f\n",
                   field(row, "id"),
                   json_string_value(json_object_get(row, "user")),
                   field(row, "priority"), field(row, "fair_share"),
                   field(row, "nice"), field(row, "head_start_s"));
    }
    json_decref(ans);
    return CLI_OK;
}

int cli_fairshare(int argc, char **argv) {
    client_flags f;
    int rc;
    json_t *ans = call_plain("fairshare", fairshare_help, argc, argv, &f, &rc);
    if (!ans) return rc;
    if (f.json) client_print_json(ans);
    else {
        if (!json_is_true(json_object_get(ans, "priorities")))
            printf("(policy %s does not order the queue by fair share)\n",
                   json_string_value(json_object_get(ans, "policy")));
        printf("%-10s %12s %13s %12s %7s %7s %6s\n", "USER", "USAGE_GPU_H",
               "DECAYED_GPU_H", "SHARE_GPU_H", "FACTOR", "RUNNING", "QUEUED");
        size_t i;
        json_t *row;
        json_array_foreach(json_object_get(ans, "users"), i, row)
            printf("%-10.10s %12.3f %13.3f %12.3f %7.4f %7.0f %6.0f\n",
                   json_string_value(json_object_get(row, "user")),
                   field(row, "usage_gpu_s") / 3600,
                   field(row, "decayed_gpu_s") / 3600,
                   field(row, "share_gpu_s") / 3600, field(row, "factor"),
                   field(row, "running"), field(row, "queued"));
    }
    json_decref(ans);
    return CLI_OK;
}

int cli_clear(int argc, char **argv) {
    client_flags f;
    int rc;
    json_t *ans = call_plain("clear", clear_help, argc, argv, &f, &rc);
    if (!ans) return rc;
    if (f.json) client_print_json(ans);
    else
        printf("cleared %lld finished jobs from your listings\n",
               (long long)json_integer_value(json_object_get(ans, "cleared")));
    json_decref(ans);
    return CLI_OK;
}
