/* show_cmd.c -- `aegis show`: one job whole, as text or JSON, and its
 * measured history as an SVG chart. */
#include "cli.h"
#include "client.h"
#include "jobs_cli.h"
#include "history_view.h"
#include "text_safe.h"
#include "timelimit.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char show_help[] =
"NAME\n    aegis show - everything aegisd knows about one job\n\n"
"SYNOPSIS\n    aegis show ID [--json] [--socket PATH]\n"
"    aegis show ID --history [--spark | --svg FILE | --json]\n"
"               [--socket PATH]\n\n"
"DESCRIPTION\n"
"    Prints a job, one line per item, each led by its label; an item with\n"
"    nothing to say is left out. The command, directory, environment and\n"
"    notifier are shown to the job's owner and root only.\n\n"
"    id              the job's id\n"
"    user            its owner\n"
"    state           queued, running, done, failed, cancelled or timeout\n"
"                    (a held job is queued here, with a held line; aegis\n"
"                    ls shows it as held)\n"
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
"    --spark         its memory as a one-line sparkline instead (not\n"
"                    with --json or --svg)\n"
"    --svg FILE      write an SVG plot of its memory beside its GPU's\n"
"                    memory in use and capacity to FILE ('-': stdout),\n"
"                    and print nothing else (not with --json or\n"
"                    --spark)\n"
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
"    co2_g           its CO2 so far, g, at the grid intensity and PUE in\n"
"                    force as it ran (null before its first energy, and\n"
"                    for a job of an older aegisd: reports then use the\n"
"                    configured ones)\n"
"    pue_j           its energy times the PUE in force as it ran, J (the\n"
"                    report's pue is pue_j / energy_j; null as co2_g)\n"
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


static void show_time(const char *label, json_t *t) {
    if (!json_is_number(t)) return;
    time_t s = (time_t)json_number_value(t);
    char buf[64];
    strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", localtime(&s));
    printf("%-10s %s\n", label, buf);
}

/* One item of show: text another user may have written (a name, a
 * command), whole, with what a terminal would act on shown as '?'. */
static void show_item(const char *label, const char *text) {
    printf("%-10s ", label);
    client_print_safe(text);
    putchar('\n');
}

static void show_text(json_t *job) {
    printf("%-10s %lld\n%-10s %s\n%-10s %s\n", "id", (long long)job_num(job, "id"),
           "user", job_str(job, "user"), "state", job_str(job, "state"));
    if (job_str(job, "reason")[0]) show_item("reason", job_str(job, "reason"));
    if (json_is_true(json_object_get(job, "held")))
        printf("%-10s yes: aegis release %lld lets it start\n", "held",
               (long long)job_num(job, "id"));
    json_t *limit = json_object_get(job, "time_limit_s");
    if (json_is_number(limit)) {
        char text[32];
        timelimit_format(json_number_value(limit), text, sizeof(text));
        printf("%-10s %s\n", "time limit", text);
    }
    if (job_str(job, "wait_reason")[0]) show_item("waiting", job_str(job, "wait_reason"));
    if (job_str(job, "name")[0]) show_item("name", job_str(job, "name"));
    if (json_is_integer(json_object_get(job, "slurm_job")))
        printf("%-10s %lld (restart %lld, mode %s): a lease, run by Slurm\n",
               "slurm job", (long long)job_num(job, "slurm_job"),
               (long long)job_num(job, "slurm_restart"), job_str(job, "slurm_mode"));
    if (!strcmp(job_str(job, "kind"), "feed"))
        printf("%-10s %s (its producer; %lld consumers)\n", "feed",
               job_str(job, "feed"), (long long)job_num(job, "consumers"));
    else if (job_str(job, "feed")[0])
        printf("%-10s %s\n", "feed", job_str(job, "feed"));
    if (json_object_get(job, "cmd")) {
        char line[4096];
        client_cmd_line(json_object_get(job, "cmd"), line, sizeof(line));
        show_item("command", line);
        show_item("directory", job_str(job, "cwd"));
        printf("%-10s %zu variables\n", "env",
               json_array_size(json_object_get(job, "env")));
    }
    json_t *notify = json_object_get(job, "notify"); /* its owner's eyes */
    if (json_is_string(notify))
        show_item("notify", json_string_length(notify)
                                ? json_string_value(notify)
                                : "none (--notify '')");
    printf("%-10s %lld\n", "gpus", (long long)job_num(job, "gpus"));
    if (job_num(job, "nice")) printf("%-10s %lld\n", "nice", (long long)job_num(job, "nice"));
    json_t *mem = json_object_get(job, "mem_mib");
    if (json_is_number(mem))
        printf("%-10s %.0f MiB\n", "memory", json_number_value(mem));
    size_t k;
    json_t *dep;
    json_array_foreach(json_object_get(job, "deps"), k, dep)
        printf("%-10s %s:%lld\n", k ? "" : "after", job_str(dep, "kind"),
               (long long)job_num(dep, "id"));
    json_t *meta = json_object_get(job, "meta");
    if (json_is_object(meta)) {
        char *text = json_dumps(meta, JSON_COMPACT); /* the user's keys too */
        show_item("meta", text ? text : "?");
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
               (long long)job_num(a, "n"), job_str(a, "gpus"),
               job_num(a, "exclusive") ? "alone" : "shared",
               json_number_value(json_object_get(a, "floor_mib")),
               job_str(a, "how")[0] ? job_str(a, "how") : "running");
    json_array_foreach(json_object_get(job, "events"), i, a) {
        time_t s = (time_t)json_number_value(json_object_get(a, "t"));
        char buf[32];
        strftime(buf, sizeof(buf), "%H:%M:%S", localtime(&s));
        char safe[4096];
        text_safe(safe, sizeof(safe), job_str(a, "text"));
        printf("  %s  %s\n", buf, safe);
    }
}

/* Writes the job's history as SVG to path ("-": stdout). */
static int show_svg(json_t *job, const char *path) {
    bool to_stdout = strcmp(path, "-") == 0;
    FILE *out = to_stdout ? stdout : fopen(path, "w");
    int rc = out ? history_svg(out, job_num(job, "id"), job_str(job, "name"),
                               json_object_get(job, "history"))
                 : -1;
    if (out && !to_stdout && fclose(out) != 0) rc = -1;
    if (rc != 0) {
        fprintf(stderr, "aegis show: %s: %s\n", path, strerror(errno));
        return CLI_FAIL;
    }
    return CLI_OK;
}

/* One output at most of --svg, --spark and --json, as each prints
 * nothing else: the others were lost. 0, or CLI_USAGE after naming two. */
static int show_one_output(const client_flags *f) {
    const char *given[3];
    int n = 0;
    if (f->svg) given[n++] = "--svg";
    if (f->spark) given[n++] = "--spark";
    if (f->json) given[n++] = "--json";
    if (n < 2) return 0;
    fprintf(stderr, "aegis show: %s and %s: give one of them (the samples "
            "are in --json --history)\n", given[0], given[1]);
    return CLI_USAGE;
}

int cli_show(int argc, char **argv) {
    client_flags f;
    int rc = client_options("show", argc, argv, show_help, "jHkg", 1, 1, &f);
    if (rc) return rc < 0 ? CLI_OK : rc;
    if (show_one_output(&f) != 0) return CLI_USAGE;
    if (f.svg && !f.svg[0]) { /* was opened as "": a failure, naming nothing */
        fprintf(stderr, "aegis show: --svg: the path is empty ('-' for "
                "stdout)\n");
        return CLI_USAGE;
    }
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
