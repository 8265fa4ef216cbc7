/* jobs_cli.h -- what the job commands' files (jobs_cmd.c, ls_cmd.c,
 * show_cmd.c, log_cmd.c) share: the help texts' common parts and the
 * readers of a job's JSON. */
#ifndef AEGIS_JOBS_CLI_H
#define AEGIS_JOBS_CLI_H

#include <jansson.h>

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

/* A job's JSON field: its integer (0 when absent), its string ("" when
 * absent). */
json_int_t job_num(json_t *obj, const char *key);
const char *job_str(json_t *obj, const char *key);

#endif
