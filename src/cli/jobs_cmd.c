/* jobs_cmd.c -- `aegis ls`, `show`, `cancel`, `hold`, `release`, `log`
 * and `wait`: the subcommands about jobs already submitted. Each is one
 * request to aegisd (log -f repeats its request while the job runs).
 */
#include "b64.h"
#include "cli.h"
#include "client.h"
#include "history_view.h"
#include "timelimit.h"
#include "text_safe.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SOCKET_OPT \
"    --socket PATH   aegisd's socket (default $AEGIS_SOCKET, else\n" \
"                    " CLIENT_DEFAULT_SOCKET ")\n"
#define EXIT_STATUS \
"\nEXIT STATUS\n    0 success, 1 failure (aegisd unreachable, busy or failing),\n" \
"    2 bad usage or a request aegisd refused (no such job, not yours).\n"

/* The fields `ls --json` and `show --json` share (one "TERM  text" list:
 * the manual page makes it a tagged list); show adds the rest of a job's
 * row. Every key a job's JSON has is named in one of the two lists
 * (tests/daemon/e2e_helptext.sh). */
#define JOB_JSON_FIELDS \
"    id              the job's id\n" \
"    user, uid       its owner: login name and uid\n" \
"    name            its name (\"\" when it has none)\n" \
"    cmd             its command, an array (its owner and root only)\n" \
"    gpus            the GPUs it asks for\n" \
"    mem_mib         the memory it asks for, MiB (null: none said)\n" \
"    deps            the jobs it runs after, [{id, kind}] (kind: afterok,\n" \
"                    afterany, afternotok), or null\n" \
"    waiting_for     the ids of those it still waits for, while it does\n" \
"    state           queued, running, done, failed, cancelled or timeout\n" \
"    reason          why it is in that state (why it was requeued, how it\n" \
"                    ended: \"exit 0\", \"cancelled while queued\"), or null\n" \
"    held            true while `aegis hold` holds it\n" \
"    wait_reason     why a queued job waits: the REASON text (absent when\n" \
"                    it does not wait, as are the next two)\n" \
"    wait_code       that reason's kind: behind, memory, observing,\n" \
"                    window, pressure, idle, policy, mig, drained,\n" \
"                    user_limit, dependency, held, feed, mps_user,\n" \
"                    reserving or cpus\n" \
"    wait_until      when that wait ends (observing, window), where known\n" \
"    expected_start  a head that reserves GPUs (reserving): when it starts\n" \
"                    at the latest, by the time limits of the jobs on them\n" \
"                    (null while one of them has none)\n" \
"    nice            its submit --nice (0: none)\n" \
"    priority        with ls --priority: a queued job's priority under\n" \
"                    aegis-plus (aegis priority), else null\n" \
"    time_limit_s    its submit --time, seconds per attempt, or aegisd's\n" \
"                    default_time when it gave none (null: none)\n" \
"    submitted       when it was submitted\n" \
"    finished        when it ended (null until it has)\n" \
"    attempts        how many times it was started\n" \
"    energy_j        the energy it has used so far, J (its share of its\n" \
"                    GPUs' energy counter)\n" \
"    feed            the data feed it reads (\"\": none)\n" \
"    kind            job; feed, a feed's managed producer (aegis feed\n" \
"                    start); slurm, a Slurm job's lease; or pipeline, a\n" \
"                    pipeline's supervisor (aegis pipeline start)\n" \
"    consumers       a feed producer's only: its feed's jobs queued or\n" \
"                    running\n" \
"    pipeline        a pipeline supervisor's only: the pipeline's name\n" \
"    slurm_job       a lease's Slurm job id (null but for a lease, as are\n" \
"                    the next two)\n" \
"    slurm_restart   its Slurm restart count\n" \
"    slurm_mode      its mode: exclusive or a sharing mode\n" \
"    gpu_ids         while it runs (as are the next four): its GPUs\n" \
"    active          whether it has been seen on them\n" \
"    pid             its process id\n" \
"    used_mib        the memory its processes hold, MiB\n" \
"    sm_pct          their SM utilization, percent of one GPU (null when\n" \
"                    NVML does not say); both summed over its GPUs, as\n" \
"                    the last tick measured them\n"

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

static const char show_help[] =
"NAME\n    aegis show - everything aegisd knows about one job\n\n"
"SYNOPSIS\n    aegis show ID [--history [--spark] [--svg FILE]] [--json]\n"
"               [--socket PATH]\n\n"
"DESCRIPTION\n"
"    Prints a job, one line per item, each led by its label; an item with\n"
"    nothing to say is left out. The command, directory, environment and\n"
"    notifier are shown to the job's owner and root only.\n\n"
"    id              the job's id\n"
"    user            its owner\n"
"    state           queued, running, done, failed, cancelled or timeout\n"
"    reason          why it is in that state: why it was requeued, or how\n"
"                    it ended (exit 0; exit 1, out of GPU memory (...);\n"
"                    cancelled while queued)\n"
"    held            yes, while `aegis hold` holds it\n"
"    time limit      its submit --time, per attempt ([D-]H:MM:SS or M:SS)\n"
"    waiting         why a queued job waits: the REASON of `aegis ls`\n"
"                    (behind job N (head of queue), no GPU with D MiB\n"
"                    free (...), waiting for job N (dependency), held, ...)\n"
"    name            its name\n"
"    slurm job       the Slurm job it is the lease of, its restart count\n"
"                    and its mode (exclusive or a sharing mode)\n"
"    feed            the data feed it reads (a feed's producer: the count\n"
"                    of its consumers)\n"
"    command         its command\n"
"    directory       the folder it runs in\n"
"    env             the count of its environment's variables\n"
"    notify          its notifier (submit --notify; none: --notify '')\n"
"    gpus            the GPUs it asks for\n"
"    nice            its submit --nice, when not 0\n"
"    memory          the memory it asks for (--mem, --model), MiB\n"
"    after           the jobs it runs after, one a line, as KIND:ID (kind:\n"
"                    afterok, afterany, afternotok)\n"
"    meta            the meta it was submitted with, as JSON (an AEGIS\n"
"                    spec's estimates and profile)\n"
"    submitted       when it was submitted (local time)\n"
"    finished        when it ended\n"
"    energy          the energy it has used so far, kJ\n"
"    attempt N:      one line per attempt: its GPUs, alone or shared, the\n"
"                    memory it was admitted with (its floor), and how it\n"
"                    ended: ok, oom, failed, lost, cancelled or timeout\n"
"                    (running while it runs)\n\n"
"    Then its history of events, one a line, each after its time of day.\n\n"
"    With --history, its samples instead: every history_period_s (config;\n"
"    default 10 s) while it ran, its memory, its GPUs' memory in use (by\n"
"    any process) and in all, and its SM share (percent of one GPU). A\n"
"    job keeps at most 4,320 samples: past them every other one is\n"
"    dropped and it is sampled half as often, so the samples always\n"
"    cover its whole run. A job on several GPUs has their sums.\n\n"
"OPTIONS\n    --json          the job as one JSON object, with the fields below\n"
"                    (times are Unix times, in seconds)\n"
"    --history       the job's samples as a table\n"
"    --spark         its memory as a one-line sparkline instead\n"
"    --svg FILE      write an SVG plot of its memory beside its GPU's\n"
"                    memory in use and capacity to FILE ('-': stdout),\n"
"                    and print nothing else\n"
SOCKET_OPT
"\nJSON FIELDS\n"
"    Those of `aegis ls --json`:\n\n" JOB_JSON_FIELDS
"\n    and these:\n\n"
"    gid             its owner's group id\n"
"    cwd             the folder it runs in (its owner and root only, as\n"
"                    are the next two)\n"
"    env             its environment, an array of NAME=VALUE\n"
"    notify          its notifier: null, the config's; \"\": none\n"
"    cancel_at       when `aegis cancel` was asked to stop it (null: never)\n"
"    retry_floor     after an OOM, the memory its next attempt is admitted\n"
"                    with, MiB (0: none)\n"
"    retry_alone     1 when its next attempt runs alone\n"
"    mps_threads_pct  its submit --mps-threads (0: none)\n"
"    cpus            its submit --cpus, its cgroup's CPUs (null: aegisd's\n"
"                    cpus_per_gpu)\n"
"    host_mem_mib    its submit --host-mem, MiB (null: aegisd's\n"
"                    host_mem_per_gpu_mib)\n"
"    stdout_path     its submit -o pattern (null: none)\n"
"    stderr_path     its submit -e pattern (null: none)\n"
"    umask           its submitter's umask, in decimal (null: aegisd's\n"
"                    own, for a job of an older client)\n"
"    meta            the object it was submitted with (an AEGIS spec's),\n"
"                    or null\n"
"    slurm_pids      a lease's tasks' pids (\"12,13\"), else null\n"
"    slurm_env       the variables its grant set, else null\n"
"    feed_restarts   a feed producer's restarts for its consumers\n"
"    attempt_list    its attempts, oldest first (below)\n"
"    events          its history of events, each {t (when), text}\n"
"    history         with --history: {period_s, columns, gpus, samples}:\n"
"                    every period_s, a sample [t, mem_mib, gpu_used_mib,\n"
"                    gpu_total_mib, sm_pct], null where unknown; gpus: the\n"
"                    last attempt's, [{index, name, uuid}]\n\n"
"    Each attempt of attempt_list has:\n\n"
"    n               its number, from 1\n"
"    gpus            its GPUs' indices (\"0,1\")\n"
"    floor_mib       the memory it was admitted with, MiB\n"
"    exclusive       1 when it ran alone\n"
"    started         when it started\n"
"    seen            when it was first seen on its GPUs\n"
"    ended           when it ended (null while it runs)\n"
"    how             ok, oom, failed, lost, cancelled or timeout\n"
"    status          its exit status as wait(2) gives it\n"
"    shim_pid        the pid of aegisd's watcher of it\n"
"    shim_start      the watcher's start time (clock ticks), which tells\n"
"                    it from a later process with its pid\n"
"    job_pid         the job's process id\n"
"    err_offset      where this attempt's stderr starts in the job's log\n" EXIT_STATUS;

static const char cancel_help[] =
"NAME\n    aegis cancel - cancel jobs\n\n"
"SYNOPSIS\n    aegis cancel ID... [--socket PATH]\n\n"
"DESCRIPTION\n"
"    Removes queued jobs from the queue and stops running ones: their\n"
"    session gets SIGTERM, then SIGKILL 10 s later, and prints\n"
"    \"cancelled ID\" for each. Only a job's owner or root may cancel it.\n"
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

static const char log_help[] =
"NAME\n    aegis log - print a job's output\n\n"
"SYNOPSIS\n    aegis log [ID] [-f] [--stderr | --both] [--socket PATH]\n\n"
"DESCRIPTION\n"
"    Prints what the job wrote to stdout (with --stderr, to stderr) over\n"
"    all its attempts. Only the job's owner or root may read it. Without\n"
"    an ID, the job is the last one you submitted: aegis log -f follows\n"
"    it, as task-spooler's tsp -t does. With -f, when aegisd stops or\n"
"    restarts under it, it says so on stderr and asks again every half\n"
"    second, for up to $AEGIS_RECONNECT_S seconds (default 120; 0: exit\n"
"    1 at once), then goes on where it was.\n\n"
"OPTIONS\n"
"    -f, --follow    keep printing new output until the job finishes\n"
"    --stderr        the job's stderr instead of its stdout\n"
"    --both          stdout and stderr together, on stdout. aegisd keeps\n"
"                    the two streams in separate files, so they are\n"
"                    interleaved by what each read returns (up to 64 KiB\n"
"                    of one, then of the other; with -f, what arrived in\n"
"                    each quarter second), not in the exact order the job\n"
"                    wrote them. For the exact order, have the job write\n"
"                    both to one stream (aegis submit 'CMD 2>&1')\n" SOCKET_OPT EXIT_STATUS;

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

static json_int_t num(json_t *obj, const char *key) {
    return json_integer_value(json_object_get(obj, key));
}

static const char *str(json_t *obj, const char *key) {
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : "";
}

static json_t *ids_from(const char *cmd, int argc, char **argv, int first) {
    json_t *ids = json_array();
    for (int i = first; i < argc; i++) {
        json_int_t id;
        if (client_parse_id(cmd, argv[i], &id) != 0) {
            json_decref(ids);
            return NULL;
        }
        json_array_append_new(ids, json_integer(id));
    }
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
        if (str(j, "name")[0]) snprintf(what, sizeof(what), "%s", str(j, "name"));
        else client_cmd_line(json_object_get(j, "cmd"), what, sizeof(what));
        slurm_label(j, what, sizeof(what));
        if (!strcmp(str(j, "kind"), "feed") && json_object_get(j, "consumers")) {
            size_t at = strlen(what);
            snprintf(what + at, sizeof(what) - at, " (%lld consumers)",
                     (long long)num(j, "consumers"));
        }
        char safe[sizeof(what)], why[1024];
        text_safe(safe, sizeof(safe), what);
        text_safe(why, sizeof(why), str(j, "wait_reason"));
        printf("%-7lld %-10.10s %-9s ", (long long)num(j, "id"),
               str(j, "user"),
               json_is_true(json_object_get(j, "held")) ? "held"
                                                        : str(j, "state"));
        char cell[32];
        ls_priority_cell(prio, num(j, "id"), cell, sizeof(cell));
        if (prio) printf("%8s ", cell);
        printf("%4lld %4lld %9.1f  %-30.30s  %s\n",
               (long long)num(j, "gpus"), (long long)num(j, "attempts"),
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
        json_t *row = ls_priority_row(*prio, num(j, "id"));
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

static void show_time(const char *label, json_t *t) {
    if (!json_is_number(t)) return;
    time_t s = (time_t)json_number_value(t);
    char buf[64];
    strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", localtime(&s));
    printf("%-10s %s\n", label, buf);
}

/* One item of show: text another user may have written (a name, a
 * command), with what a terminal would act on shown as '?'. */
static void show_item(const char *label, const char *text) {
    char safe[4096];
    text_safe(safe, sizeof(safe), text);
    printf("%-10s %s\n", label, safe);
}

static void show_text(json_t *job) {
    printf("%-10s %lld\n%-10s %s\n%-10s %s\n", "id", (long long)num(job, "id"),
           "user", str(job, "user"), "state", str(job, "state"));
    if (str(job, "reason")[0]) show_item("reason", str(job, "reason"));
    if (json_is_true(json_object_get(job, "held")))
        printf("%-10s yes: aegis release %lld lets it start\n", "held",
               (long long)num(job, "id"));
    json_t *limit = json_object_get(job, "time_limit_s");
    if (json_is_number(limit)) {
        char text[32];
        timelimit_format(json_number_value(limit), text, sizeof(text));
        printf("%-10s %s\n", "time limit", text);
    }
    if (str(job, "wait_reason")[0]) show_item("waiting", str(job, "wait_reason"));
    if (str(job, "name")[0]) show_item("name", str(job, "name"));
    if (json_is_integer(json_object_get(job, "slurm_job")))
        printf("%-10s %lld (restart %lld, mode %s): a lease, run by Slurm\n",
               "slurm job", (long long)num(job, "slurm_job"),
               (long long)num(job, "slurm_restart"), str(job, "slurm_mode"));
    if (!strcmp(str(job, "kind"), "feed"))
        printf("%-10s %s (its producer; %lld consumers)\n", "feed",
               str(job, "feed"), (long long)num(job, "consumers"));
    else if (str(job, "feed")[0])
        printf("%-10s %s\n", "feed", str(job, "feed"));
    if (json_object_get(job, "cmd")) {
        char line[4096];
        client_cmd_line(json_object_get(job, "cmd"), line, sizeof(line));
        show_item("command", line);
        show_item("directory", str(job, "cwd"));
        printf("%-10s %zu variables\n", "env",
               json_array_size(json_object_get(job, "env")));
    }
    json_t *notify = json_object_get(job, "notify"); /* its owner's eyes */
    if (json_is_string(notify))
        printf("%-10s %s\n", "notify", json_string_length(notify)
                                           ? json_string_value(notify)
                                           : "none (--notify '')");
    printf("%-10s %lld\n", "gpus", (long long)num(job, "gpus"));
    if (num(job, "nice")) printf("%-10s %lld\n", "nice", (long long)num(job, "nice"));
    json_t *mem = json_object_get(job, "mem_mib");
    if (json_is_number(mem))
        printf("%-10s %.0f MiB\n", "memory", json_number_value(mem));
    size_t k;
    json_t *dep;
    json_array_foreach(json_object_get(job, "deps"), k, dep)
        printf("%-10s %s:%lld\n", k ? "" : "after", str(dep, "kind"),
               (long long)num(dep, "id"));
    json_t *meta = json_object_get(job, "meta");
    if (json_is_object(meta)) {
        char *text = json_dumps(meta, JSON_COMPACT);
        printf("%-10s %s\n", "meta", text ? text : "?");
        free(text);
    }
    show_time("submitted", json_object_get(job, "submitted"));
    show_time("finished", json_object_get(job, "finished"));
    printf("%-10s %.1f kJ\n", "energy",
           json_number_value(json_object_get(job, "energy_j")) / 1000);
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(job, "attempt_list"), i, a)
        printf("attempt %lld: GPU %s, %s, %.0f MiB floor, %s\n",
               (long long)num(a, "n"), str(a, "gpus"),
               num(a, "exclusive") ? "alone" : "shared",
               json_number_value(json_object_get(a, "floor_mib")),
               str(a, "how")[0] ? str(a, "how") : "running");
    json_array_foreach(json_object_get(job, "events"), i, a) {
        time_t s = (time_t)json_number_value(json_object_get(a, "t"));
        char buf[32];
        strftime(buf, sizeof(buf), "%H:%M:%S", localtime(&s));
        char safe[4096];
        text_safe(safe, sizeof(safe), str(a, "text"));
        printf("  %s  %s\n", buf, safe);
    }
}

/* Writes the job's history as SVG to path ("-": stdout). */
static int show_svg(json_t *job, const char *path) {
    bool to_stdout = strcmp(path, "-") == 0;
    FILE *out = to_stdout ? stdout : fopen(path, "w");
    int rc = out ? history_svg(out, num(job, "id"), str(job, "name"),
                               json_object_get(job, "history"))
                 : -1;
    if (out && !to_stdout && fclose(out) != 0) rc = -1;
    if (rc != 0) {
        fprintf(stderr, "aegis show: %s: %s\n", path, strerror(errno));
        return CLI_FAIL;
    }
    return CLI_OK;
}

int cli_show(int argc, char **argv) {
    client_flags f;
    int rc = client_options("show", argc, argv, show_help, "jHkg", 1, 1, &f);
    if (rc) return rc < 0 ? CLI_OK : rc;
    json_int_t id;
    if (client_parse_id("show", argv[f.first_arg], &id)) return CLI_USAGE;
    json_t *req = json_pack("{s:s, s:I}", "op", "show", "id", id);
    if (f.history) json_object_set_new(req, "history", json_true());
    json_t *ans = client_call("show", client_socket(f.socket), req, &rc);
    if (!ans) return rc;
    json_t *job = json_object_get(ans, "job");
    json_t *hist = json_object_get(job, "history");
    rc = CLI_OK;
    if (f.svg) rc = show_svg(job, f.svg); /* and nothing else */
    else if (f.json) client_print_json(job);
    else if (f.spark) history_spark(stdout, hist);
    else if (f.history) history_table(stdout, hist);
    else show_text(job);
    json_decref(ans);
    return rc;
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

/* Writes the log bytes of a `log` answer, in base64 there, to stdout. */
static int log_print(json_t *ans) {
    json_t *data = json_object_get(ans, "base64");
    size_t len = json_string_length(data), n = 0;
    unsigned char *bytes = malloc(len / 4 * 3 + 1);
    int rc = CLI_OK;
    if (!bytes || !json_is_string(data) ||
        b64_decode(json_string_value(data), len, bytes, &n) != 0) {
        fprintf(stderr, "aegis log: aegisd's answer holds no base64 log\n");
        rc = CLI_FAIL;
    } else if (fwrite(bytes, 1, n, stdout) != n) {
        fprintf(stderr, "aegis log: stdout: %s\n", strerror(errno));
        rc = CLI_FAIL;
    }
    free(bytes);
    return rc;
}

/* Prints what one stream of the job holds from *offset on (one answer's
 * worth), moving *offset; *moved when it did, *finished when the job has. */
static int log_step(const client_flags *f, json_int_t id, int err_stream,
                    json_int_t *offset, bool *moved, bool *finished) {
    int rc;
    json_t *req = json_pack("{s:s, s:I, s:I, s:b}", "op", "log", "id", id,
                            "offset", *offset, "stderr", err_stream);
    /* -f outlives an aegisd restart, as `aegis wait` does; the offsets
     * say where to go on. reached: aegisd answered this process before. */
    static bool reached;
    json_t *ans = f->follow ? client_call_patient("log", client_socket(f->socket),
                                                  req, &rc, &reached)
                            : client_call("log", client_socket(f->socket), req, &rc);
    if (!ans) return rc;
    rc = log_print(ans);
    json_int_t next = num(ans, "offset");
    *finished = json_is_true(json_object_get(ans, "finished"));
    json_decref(ans);
    *moved = *moved || next != *offset;
    *offset = next;
    return rc;
}

/* The id of the last job this user submitted (the newest of theirs,
 * finished or not, cleared or not) into *id: 0, or an exit status after
 * saying why. */
static int log_last_job(const client_flags *f, json_int_t *id) {
    char uid[32];
    snprintf(uid, sizeof(uid), "%u", (unsigned)getuid());
    int rc;
    json_t *ans = client_call("log", client_socket(f->socket),
                              json_pack("{s:s, s:b, s:b, s:i, s:s}", "op",
                                        "ls", "all", 1, "cleared", 1, "limit",
                                        1, "user", uid),
                              &rc);
    if (!ans) return rc;
    json_t *last = json_array_get(json_object_get(ans, "jobs"), 0);
    *id = json_integer_value(json_object_get(last, "id"));
    json_decref(ans);
    if (last) return 0;
    fprintf(stderr, "aegis log: you have no jobs (name one: aegis log ID)\n");
    return CLI_USAGE;
}

int cli_log(int argc, char **argv) {
    client_flags f;
    int rc = client_options("log", argc, argv, log_help, "feb", 0, 1, &f);
    if (rc) return rc < 0 ? CLI_OK : rc;
    if (f.both && f.err_stream) {
        fprintf(stderr, "aegis log: --both already includes --stderr: give "
                "one of them\n");
        return CLI_USAGE;
    }
    json_int_t id, offset[2] = {0, 0};
    if (f.first_arg == argc) {
        if ((rc = log_last_job(&f, &id))) return rc;
    } else if (client_parse_id("log", argv[f.first_arg], &id)) {
        return CLI_USAGE;
    }
    /* A job seen finished gets one more pass: what it wrote to one stream
     * while the other was read is not lost. */
    bool ended = false;
    for (;;) {
        bool moved = false, finished = false;
        /* with --both, one answer of each stream in turn */
        for (int s = f.both ? 0 : f.err_stream; s <= (f.both ? 1 : f.err_stream);
             s++)
            if ((rc = log_step(&f, id, s, &offset[s], &moved, &finished)))
                return rc;
        if (!moved && (!f.follow || ended)) return CLI_OK;
        if (!moved && !finished) {
            fflush(stdout);
            usleep(250000); /* the job writes at its pace: poll 4 times/s */
        }
        ended = finished;
    }
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
        all_done &= !strcmp(str(j, "state"), "done");
        if (!f.json)
            printf("%lld %s %s\n", (long long)num(j, "id"), str(j, "state"),
                   str(j, "reason"));
    }
    if (f.json) client_print_json(jobs);
    json_decref(all);
    json_decref(jobs);
    return all_done ? CLI_OK : CLI_FAIL;
}
