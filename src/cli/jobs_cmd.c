/* jobs_cmd.c -- `aegis cancel`, `hold`, `release` and `wait`: the
 * subcommands that name jobs by id, in batches aegisd takes; and the
 * readers of a job's JSON the job commands share (jobs_cli.h). `ls`,
 * `show` and `log` have files of their own.
 */
#include "cli.h"
#include "client.h"
#include "jobs_cli.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char cancel_help[] =
"NAME\n    aegis cancel - cancel jobs\n\n"
"SYNOPSIS\n    aegis cancel ID... [--socket PATH]\n\n"
"DESCRIPTION\n"
"    Removes queued jobs from the queue and stops running ones: their\n"
"    session gets SIGTERM, then SIGKILL 10 s later, and prints\n"
"    \"cancelled ID\" for each (an ID given twice is one job). Only a\n"
"    job's owner or root may cancel it.\n"
"    Every ID that may be cancelled is; each one that may not (no such\n"
"    job, not yours, already finished, a Slurm job's lease) is named on\n"
"    stderr with why, and the exit status is then 1.\n\n"
"OPTIONS\n" SOCKET_OPT
"\nEXIT STATUS\n    0 every job cancelled, 1 any could not be (or aegisd\n"
"    unreachable, busy or failing), 2 bad usage.\n";

static const char hold_help[] =
"NAME\n    aegis hold, aegis release - keep queued jobs from starting, or let\n"
"    them start again\n\n"
"SYNOPSIS\n    aegis hold ID... [--socket PATH]\n"
"    aegis release ID... [--socket PATH]\n"
"    aegis release --slurm-job SLURM_JOB_ID [--socket PATH]\n\n"
"DESCRIPTION\n"
"    A held job stays in the queue but is not placed on a GPU, however\n"
"    long it waits, until it is released; jobs behind it in the queue go\n"
"    ahead of it. A released job joins the queue again at its end (a job\n"
"    still waiting for its --after jobs goes on waiting for them). A hold\n"
"    outlasts restarts of aegisd. Only a queued job can be held: a running\n"
"    one is stopped with aegis cancel. Only a held job can be released:\n"
"    release of any other is an error (exit 2). Only a job's owner or root\n"
"    may hold or release it, and nothing is done unless all IDs may be.\n"
"    aegis ls --state held lists the held jobs.\n\n"
"    With --slurm-job, release ends the leases aegisd holds for that Slurm\n"
"    job on this node (docs/slurm.md): what the node's Epilog runs. It\n"
"    always exits 0, with a warning on stderr when aegisd cannot be\n"
"    reached or refuses, since a failing Epilog drains the node.\n\n"
"OPTIONS\n"
"    --slurm-job ID  end the leases of Slurm job ID (root or its owner)\n"
SOCKET_OPT EXIT_STATUS;

static const char wait_help[] =
"NAME\n    aegis wait - wait for jobs to finish\n\n"
"SYNOPSIS\n    aegis wait ID... [--json] [--socket PATH]\n\n"
"DESCRIPTION\n"
"    Returns when every job named has finished, printing each one's final\n"
"    state and reason. Exit status 0 when all of them are done (succeeded),\n"
"    1 when any failed or was cancelled.\n\n"
"    The jobs outlive a restart of aegisd, and so does the wait: when\n"
"    aegisd stops or restarts under it, aegis wait says so on stderr and\n"
"    asks again every half second, for up to $AEGIS_RECONNECT_S seconds\n"
"    (default 120; 0: exit 1 at once). An aegisd that was not running\n"
"    when aegis wait started is a failure at once.\n\n"
"OPTIONS\n    --json          a JSON array of {id, state, reason}\n" SOCKET_OPT
"\nEXIT STATUS\n    0 all done, 1 any not done (or aegisd unreachable, busy or\n"
"    failing), 2 bad usage or a request aegisd refused (no such job).\n";

json_int_t job_num(json_t *obj, const char *key) {
    return json_integer_value(json_object_get(obj, key));
}

const char *job_str(json_t *obj, const char *key) {
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : "";
}

/* The ids named in argv[first..argc), each once, in the order first
 * named: aegisd answers every id of a request, so `cancel 7 7` printed
 * "cancelled 7" twice (and a repeat in another batch would be refused
 * as finished). NULL after saying which is not an id. */
static json_t *ids_from(const char *cmd, int argc, char **argv, int first) {
    json_t *ids = json_array(), *seen = json_object();
    for (int i = first; ids && i < argc; i++) {
        json_int_t id;
        char key[32];
        if (client_parse_id(cmd, argv[i], &id) != 0) {
            json_decref(ids);
            ids = NULL;
            break;
        }
        snprintf(key, sizeof(key), "%lld", (long long)id);
        if (json_object_get(seen, key)) continue;
        json_object_set_new(seen, key, json_true());
        json_array_append_new(ids, json_integer(id));
    }
    json_decref(seen);
    return ids;
}

/* The most ids aegisd takes in one request (PROTO_MAX_IDS): a command
 * naming more sends them as several requests, one after the other. */
#define CLIENT_MAX_IDS 100000

/* {"op": op, "ids": the batch of all's ids starting at from}. */
static json_t *ids_request(const char *op, json_t *all, size_t from) {
    json_t *ids = json_array();
    for (size_t k = from; k < json_array_size(all) && k < from + CLIENT_MAX_IDS;
         k++)
        json_array_append(ids, json_array_get(all, k));
    return json_pack("{s:s, s:o}", "op", op, "ids", ids);
}

/* cancel, hold and release: sends op with the ids named (options parsed
 * into f) and prints "DONE ID" for each id the answer lists under done;
 * names on stderr each one it lists under failed (a cancel's), and then
 * fails. */
static int call_and_list(const char *op, const char *done, int argc,
                         char **argv, const client_flags *f) {
    json_t *all = ids_from(op, argc, argv, f->first_arg);
    if (!all) return CLI_USAGE;
    int rc = CLI_OK;
    for (size_t from = 0; from < json_array_size(all); from += CLIENT_MAX_IDS) {
        int call_rc;
        json_t *ans = client_call(op, client_socket(f->socket),
                                  ids_request(op, all, from), &call_rc);
        if (!ans) {
            rc = call_rc;
            break;
        }
        size_t i;
        json_t *id, *why, *failed = json_object_get(ans, "failed");
        json_array_foreach(json_object_get(ans, done), i, id)
            printf("%s %lld\n", done, (long long)json_integer_value(id));
        json_array_foreach(failed, i, why)
            fprintf(stderr, "aegis %s: %s\n", op,
                    json_string_value(json_object_get(why, "error")));
        if (json_array_size(failed)) rc = CLI_FAIL;
        json_decref(ans);
    }
    json_decref(all);
    return rc;
}

int cli_cancel(int argc, char **argv) {
    client_flags f;
    int rc = client_options("cancel", argc, argv, cancel_help, "", 1, -1, &f);
    if (rc) return rc < 0 ? CLI_OK : rc;
    return call_and_list("cancel", "cancelled", argc, argv, &f);
}

int cli_hold(int argc, char **argv) {
    client_flags f;
    int rc = client_options("hold", argc, argv, hold_help, "", 1, -1, &f);
    if (rc) return rc < 0 ? CLI_OK : rc;
    return call_and_list("hold", "held", argc, argv, &f);
}

/* release --slurm-job: the Epilog's; exits 0 whatever happens. */
static int release_slurm_job(const char *text, const char *socket) {
    char *end;
    errno = 0;
    unsigned long long job = strtoull(text, &end, 10);
    if (errno || end == text || *end || job < 1 || job > 4294967295ull ||
        text[0] == '-') {
        fprintf(stderr, "aegis release: warning: --slurm-job '%s' is not a "
                "Slurm job id; nothing released\n", text);
        return CLI_OK;
    }
    int rc;
    json_t *ans = client_call("release", socket,
                              json_pack("{s:s, s:I}", "op", "lease_end",
                                        "slurm_job", (json_int_t)job), &rc);
    if (!ans) {
        fprintf(stderr, "aegis release: warning: the leases of Slurm job %llu "
                "were not ended (exiting 0: a failing Epilog drains the "
                "node)\n", job);
        return CLI_OK;
    }
    printf("ended %lld leases of Slurm job %llu\n",
           (long long)json_integer_value(json_object_get(ans, "ended")), job);
    json_decref(ans);
    return CLI_OK;
}

int cli_release(int argc, char **argv) {
    client_flags f;
    int rc = client_options("release", argc, argv, hold_help, "L", 0, -1, &f);
    if (rc) return rc < 0 ? CLI_OK : rc;
    if (f.slurm_job && f.first_arg == argc)
        return release_slurm_job(f.slurm_job, client_socket(f.socket));
    if (f.slurm_job || f.first_arg == argc) {
        fprintf(stderr, "aegis release: bad usage: job IDs or --slurm-job ID\n"
                "Run 'aegis release --help' for usage.\n");
        return CLI_USAGE;
    }
    return call_and_list("release", "released", argc, argv, &f);
}

int cli_wait(int argc, char **argv) {
    client_flags f;
    int rc = client_options("wait", argc, argv, wait_help, "j", 1, -1, &f);
    if (rc) return rc < 0 ? CLI_OK : rc;
    json_t *all = ids_from("wait", argc, argv, f.first_arg);
    if (!all) return CLI_USAGE;
    bool reached = false;
    json_t *jobs = json_array();
    for (size_t from = 0; from < json_array_size(all); from += CLIENT_MAX_IDS) {
        json_t *ans = client_call_patient("wait", client_socket(f.socket),
                                          ids_request("wait", all, from), &rc,
                                          &reached);
        if (!ans) {
            json_decref(all);
            json_decref(jobs);
            return rc;
        }
        json_array_extend(jobs, json_object_get(ans, "jobs"));
        json_decref(ans);
    }
    int all_done = 1;
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j) {
        all_done &= !strcmp(job_str(j, "state"), "done");
        /* a reason quotes what aegisd was told (a failed start's path, a
         * Slurm task's), and anyone may wait on another's job */
        if (f.json) continue;
        printf("%lld ", (long long)job_num(j, "id"));
        client_print_safe(job_str(j, "state"));
        putchar(' ');
        client_print_safe(job_str(j, "reason"));
        putchar('\n');
    }
    if (f.json) client_print_json(jobs);
    json_decref(all);
    json_decref(jobs);
    return all_done ? CLI_OK : CLI_FAIL;
}
