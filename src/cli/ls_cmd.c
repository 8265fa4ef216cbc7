/* ls_cmd.c -- `aegis ls`: the jobs aegisd knows, as a table or JSON,
 * with their priorities for root. */
#include "cli.h"
#include "client.h"
#include "jobs_cli.h"
#include "text_safe.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char ls_help[] =
"NAME\n    aegis ls - list aegisd's jobs\n\n"
"SYNOPSIS\n    aegis ls [--all] [--user USER] [--state STATE[,STATE...]] [--json]\n"
"             [--priority] [--limit N] [--socket PATH]\n\n"
"DESCRIPTION\n"
"    Lists queued and running jobs (with --all, finished ones too), in\n"
"    submission order, one a line under these columns (1000 jobs only,\n"
"    unless --limit says otherwise: the first, the head of the queue, or\n"
"    with --all the newest; stderr then says how many there are):\n\n"
"    ID              the job's id\n"
"    USER            its owner\n"
"    STATE           queued, held (queued, held by `aegis hold`), running,\n"
"                    done, failed, cancelled or timeout\n"
"    GPUS            the GPUs it asks for\n"
"    ATT             the attempts made\n"
"    ENERGY_KJ       the energy it has used so far, kJ\n"
"    NAME/COMMAND    its name, else its command (shown only for your own\n"
"                    jobs; root sees all); a Slurm job's lease as slurm:ID\n"
"                    and its name; a feed's managed producer (aegis feed\n"
"                    start) as feed:F, with the count of its consumers\n"
"                    queued or running; a pipeline's supervisor (aegis\n"
"                    pipeline start) by the pipeline's name\n"
"    REASON          why a queued job waits ('-' for one that does not):\n"
"                    behind job N (head of queue), no GPU with D MiB free\n"
"                    (largest free: F MiB on GPU k), GPU k under\n"
"                    observation, GPU k telemetry window fills in S s, GPU\n"
"                    k under pressure (SMACT x >= y), user limit reached,\n"
"                    waiting for job N (dependency), held, waiting for\n"
"                    feed F's GPU k or its producer, ...\n\n"
"OPTIONS\n"
"    --all           finished jobs too\n"
"    --user USER     only USER's jobs (a login name or a uid); -u USER\n"
"    --state STATE   only jobs in these states (comma-separated: queued,\n"
"                    held, running, done, failed, cancelled, timeout;\n"
"                    held is a job `aegis hold` holds, which queued does\n"
"                    not match); a finished state implies --all.\n"
"                    aegisd filters by user and state before --limit, and\n"
"                    counts only the jobs that pass\n"
"    --json          a JSON array of jobs, each an object with the fields\n"
"                    below (times are Unix times, in seconds); every job\n"
"                    unless --limit is given\n"
"    --priority      a PRIORITY column after STATE: a queued job's priority\n"
"                    under aegis-plus (aegis priority shows its parts); '-'\n"
"                    for other jobs and under other policies\n"
"    --limit N       the first N jobs only, or with --all the last N (the\n"
"                    newest, in id order); default 1000 without --json;\n"
"                    0: every job. A queue of 100,000 jobs takes seconds\n"
"                    to list whole, and aegisd answers no one else\n"
"                    meanwhile\n" SOCKET_OPT
"\nJSON FIELDS\n" JOB_JSON_FIELDS EXIT_STATUS;


/* Rows `aegis ls` prints without --limit (not --json): a long queue is
 * listed in milliseconds, not seconds. */
#define LS_DEFAULT_LIMIT 1000
/* aegisd's own bound (PROTO_MAX_LS_LIMIT). */
#define LS_MAX_LIMIT 1000000000

static const char *const job_states[] = {"queued", "held", "running", "done",
                                         "failed", "cancelled", "timeout"};
/* job_states[k] from here on are finished states, which only --all lists */
#define FIRST_FINISHED 3
#define NSTATES (sizeof(job_states) / sizeof(*job_states))

/* Whether word is one of the comma-separated items of list. */
static bool ls_listed(const char *list, const char *word) {
    size_t n = strlen(word);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && memcmp(p, word, n) == 0) return true;
        p += len + (p[len] == ',');
    }
    return false;
}

/* Checks --state's list, and whether it names a finished state (which
 * only --all lists): -1 after saying why not. */
static int ls_states(const char *list, int *finished) {
    if (!*list) {
        fprintf(stderr, "aegis ls: --state: name at least one state: queued, "
                "held, running, done, failed, cancelled or timeout\n");
        return -1;
    }
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        size_t k = 0;
        while (k < NSTATES && (strlen(job_states[k]) != len ||
                               memcmp(job_states[k], p, len) != 0))
            k++;
        if (k == NSTATES) {
            fprintf(stderr, "aegis ls: --state: '%.*s' is not a state: "
                    "queued, held, running, done, failed, cancelled or "
                    "timeout\n",
                    (int)len, p);
            return -1;
        }
        if (k >= FIRST_FINISHED) *finished = 1;
        p += len + (p[len] == ',');
    }
    return 0;
}

/* --limit's rows (0: all), or the default: 1000 rows of text, every
 * row of JSON. -1 after saying why it is not a count. */
static int ls_limit(const client_flags *f, long long *limit) {
    *limit = f->json ? 0 : LS_DEFAULT_LIMIT;
    if (!f->limit) return 0;
    char *end;
    errno = 0;
    *limit = strtoll(f->limit, &end, 10);
    if (errno || end == f->limit || *end || *limit < 0 ||
        *limit > LS_MAX_LIMIT) {
        fprintf(stderr, "aegis ls: --limit: '%s' is not a number of jobs "
                "(0 to %d; 0: all)\n", f->limit, LS_MAX_LIMIT);
        return -1;
    }
    return 0;
}

/* The ls request: -u and --state travel with it, so aegisd filters (in
 * its query) before it limits, and counts only the jobs that pass. */
static json_t *ls_request(const client_flags *f, long long limit) {
    json_t *req = json_pack("{s:s, s:b}", "op", "ls", "all", f->all);
    if (limit > 0) json_object_set_new(req, "limit", json_integer(limit));
    if (f->user) json_object_set_new(req, "user", json_string(f->user));
    if (!f->states) return req;
    json_t *states = json_array(); /* each once, however often named */
    for (size_t k = 0; k < NSTATES; k++)
        if (ls_listed(f->states, job_states[k]))
            json_array_append_new(states, json_string(job_states[k]));
    json_object_set_new(req, "states", states);
    return req;
}

/* A Slurm job's lease is named by its Slurm job first: "slurm:12 train"
 * (its name is "slurm:12" when Slurm gave none). */
static void slurm_label(json_t *job, char *what, size_t len) {
    json_t *sj = json_object_get(job, "slurm_job");
    if (!json_is_integer(sj)) return;
    char label[32], text[4096];
    snprintf(label, sizeof(label), "slurm:%lld",
             (long long)json_integer_value(sj));
    if (strcmp(what, label) == 0) return;
    snprintf(text, sizeof(text), "%s %s", label, what);
    snprintf(what, len, "%s", text);
}

/* Job id's row of `aegis priority`'s rows (prio), or NULL. */
static json_t *ls_priority_row(json_t *prio, json_int_t id) {
    size_t i;
    json_t *row;
    json_array_foreach(prio, i, row)
        if (json_integer_value(json_object_get(row, "id")) == id) return row;
    return NULL;
}

/* A job's PRIORITY cell: its priority, rounded, "-" when it has none. */
static void ls_priority_cell(json_t *prio, json_int_t id, char *cell,
                             size_t len) {
    json_t *row = ls_priority_row(prio, id);
    if (row)
        snprintf(cell, len, "%.0f",
                 json_number_value(json_object_get(row, "priority")));
    else
        snprintf(cell, len, "-");
}

/* The rows as `aegis ls` prints them, under their header; with a
 * PRIORITY column when prio (`aegis priority`'s rows) is not NULL. */
static void ls_table(json_t *jobs, json_t *prio) {
    printf("%-7s %-10s %-9s ", "ID", "USER", "STATE");
    if (prio) printf("%8s ", "PRIORITY");
    printf("%4s %4s %9s  %-30s  %s\n", "GPUS", "ATT", "ENERGY_KJ",
           "NAME/COMMAND", "REASON");
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j) {
        char what[4096];
        if (job_str(j, "name")[0]) snprintf(what, sizeof(what), "%s", job_str(j, "name"));
        else client_cmd_line(json_object_get(j, "cmd"), what, sizeof(what));
        slurm_label(j, what, sizeof(what));
        if (!strcmp(job_str(j, "kind"), "feed") && json_object_get(j, "consumers")) {
            size_t at = strlen(what);
            snprintf(what + at, sizeof(what) - at, " (%lld consumers)",
                     (long long)job_num(j, "consumers"));
        }
        char safe[sizeof(what)], why[1024];
        text_safe(safe, sizeof(safe), what);
        text_safe(why, sizeof(why), job_str(j, "wait_reason"));
        printf("%-7lld %-10.10s %-9s ", (long long)job_num(j, "id"),
               job_str(j, "user"),
               json_is_true(json_object_get(j, "held")) ? "held"
                                                        : job_str(j, "state"));
        char cell[32];
        ls_priority_cell(prio, job_num(j, "id"), cell, sizeof(cell));
        if (prio) printf("%8s ", cell);
        printf("%4lld %4lld %9.1f  %-30.30s  %s\n",
               (long long)job_num(j, "gpus"), (long long)job_num(j, "attempts"),
               json_number_value(json_object_get(j, "energy_j")) / 1000,
               safe, why[0] ? why : "-");
    }
}

/* --priority: `aegis priority`'s rows into *prio, and each listed job's
 * "priority" into its JSON row. -1 when aegisd did not answer (*rc). */
static int ls_add_priorities(const client_flags *f, json_t *jobs,
                             json_t **prio, int *rc) {
    json_t *ans = client_call("ls", client_socket(f->socket),
                              json_pack("{s:s}", "op", "priority"), rc);
    if (!ans) return -1;
    *prio = json_incref(json_object_get(ans, "jobs"));
    json_decref(ans);
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j) {
        json_t *row = ls_priority_row(*prio, job_num(j, "id"));
        json_object_set(j, "priority",
                        row ? json_object_get(row, "priority") : json_null());
    }
    return 0;
}

int cli_ls(int argc, char **argv) {
    client_flags f;
    int rc = client_options("ls", argc, argv, ls_help, "jauSlP", 0, 0, &f);
    if (rc) return rc < 0 ? CLI_OK : rc;
    if (f.states && ls_states(f.states, &f.all)) return CLI_USAGE;
    long long limit, total;
    if (ls_limit(&f, &limit)) return CLI_USAGE;
    json_t *ans = client_call("ls", client_socket(f.socket),
                              ls_request(&f, limit), &rc);
    if (!ans) return rc;
    json_t *jobs = json_incref(json_object_get(ans, "jobs"));
    json_t *count = json_object_get(ans, "total");
    total = json_is_integer(count) ? json_integer_value(count)
                                   : (long long)json_array_size(jobs);
    if (total > (long long)json_array_size(jobs))
        fprintf(stderr, "aegis ls: the %s %zu of %lld jobs (--limit 0 lists "
                "them all)\n", f.all ? "last" : "first",
                json_array_size(jobs), total);
    json_t *prio = NULL;
    if (f.priority && ls_add_priorities(&f, jobs, &prio, &rc) != 0) {
        json_decref(jobs);
        json_decref(ans);
        return rc;
    }
    if (f.json) client_print_json(jobs);
    else ls_table(jobs, prio);
    json_decref(prio);
    json_decref(jobs);
    json_decref(ans);
    return CLI_OK;
}
