/* spank_aegis.c -- the Slurm SPANK plugin that makes the node's aegisd
 * choose the GPU of each Slurm task (docs/slurm.md).
 *
 * Slurm picks the node (its count-only GRES aegis_mem holds the memory a
 * node offers); aegisd on that node picks the GPU and the moment to start.
 * The protocol is aegisd's socket protocol, ops lease and lease_exit.
 *
 *   plugstack.conf:  required|optional /path/spank_aegis.so [socket=PATH]
 *                    [retry=SECONDS] [required|optional]
 *   sbatch/srun:     --aegis-mem=MIB [--aegis-mode=shared|mps|mig|exclusive]
 *
 * A task asks for a lease only when --aegis-mem is given: the job's GRES
 * are not visible to a SPANK plugin on the node (Slurm 22.05 exports no
 * environment for a count-only GRES), so the option is the only place the
 * memory can come from. Slurm counts it as the GRES aegis_mem, which
 * cli_filter.lua adds to the job's request from this option.
 *
 * Where each callback runs, and why it does what it does there:
 *   slurm_spank_init               every context: reads the plugin's
 *                                  arguments and registers the options;
 *                                  never fails (a failing init in slurmd
 *                                  drains the node). In slurmstepd it also
 *                                  makes the task pipe (task_pipe below).
 *   slurm_spank_task_init_privileged  the task's own process, as root,
 *                                  before exec: asks for the lease and
 *                                  waits until aegisd grants it, or until
 *                                  the job ends (Slurm does not signal a
 *                                  task before it runs: lease_wait.c).
 *                                  aegisd checks root (SO_PEERCRED) for
 *                                  this op.
 *   slurm_spank_task_init          the same process, as the user: puts the
 *                                  lease's environment in the task's.
 *   slurm_spank_task_exit          slurmstepd, once per task that ended:
 *                                  tells aegisd its wait status and the tail
 *                                  of its stderr, which aegisd classifies.
 *                                  slurmstepd is root, the file the user's:
 *                                  it is read as the user, and only if it
 *                                  is the file the task started with
 *                                  (job_file_tail_as).
 */
#include "cli.h"
#include "client.h"
#include "job_file.h"
#include "lease_wait.h"
#include "proto.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <slurm/slurm.h>
#include <slurm/spank.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

SPANK_PLUGIN(aegis, 1);

/* aegisd classifies an OOM from at most this much of the task's stderr. */
#define STDERR_TAIL_BYTES 8192

/* The plugin's arguments (plugstack.conf). */
static int aegis_required = 1;   /* "required": no aegisd, no task */
static const char *aegis_socket; /* socket=PATH; NULL: client_socket's */
static long aegis_retry_s = 30;  /* retry=SECONDS */
/* retry= at most a day: a job step waits that long at most for aegisd,
 * and a deadline of time() + a larger one could overflow. */
#define AEGIS_RETRY_MAX_S 86400

/* The user's options; aegis_mem_mib 0 means the task does not use aegis. */
static long aegis_mem_mib;
static const char *aegis_mode = "shared";

/* The granted lease, from task_init_privileged to task_init (one process:
 * the task's own, before it execs). NULL when the task runs without. */
static json_t *aegis_lease;

/* A pipe slurmstepd makes before it forks the tasks: each leased task
 * writes "PID RESTART DEV INO PATH\n" on it (RESTART: its run's restart
 * count; PATH: the file its stderr goes to, DEV and INO that file's,
 * when it is a regular file; else "0 0 "), so
 * that task_exit, in slurmstepd after the task is gone, knows which tasks
 * hold a lease and which file holds their stderr's tail. What slurmstepd
 * has read of it so far is task_lines. */
static int task_pipe[2] = {-1, -1};
static char *task_lines;
static size_t task_lines_len;

static int aegis_opt_mem(int val, const char *optarg, int remote);
static int aegis_opt_mode(int val, const char *optarg, int remote);

/* Registered by slurm_spank_init: Slurm 22.05's sbatch does not read a
 * plugin's spank_options table, only options registered by the plugin. */
static struct spank_option aegis_options[] = {
    {"aegis-mem", "MIB",
     "GPU memory (MiB) of the job on each node, one GPU shared by its "
     "tasks there; aegisd on the node picks the GPU", 1, 0, aegis_opt_mem},
    {"aegis-mode", "MODE",
     "how aegisd shares the GPU: shared (default), mps, mig or exclusive", 1,
     0, aegis_opt_mode},
    SPANK_OPTIONS_TABLE_END};

static int aegis_opt_mem(int val, const char *optarg, int remote) {
    char *end = NULL;
    errno = 0;
    long v = optarg ? strtol(optarg, &end, 10) : 0;
    if (!optarg || errno || end == optarg || *end || v < 1 ||
        v > (long)PROTO_MAX_MEM_MIB) {
        slurm_error("aegis: --aegis-mem=%s: not a number of MiB in "
                    "[1, %ld]", optarg ? optarg : "", (long)PROTO_MAX_MEM_MIB);
        return -1;
    }
    aegis_mem_mib = v;
    return 0;
}

static int aegis_opt_mode(int val, const char *optarg, int remote) {
    static const char *const modes[] = {"shared", "mps", "mig", "exclusive"};
    for (size_t i = 0; optarg && i < sizeof(modes) / sizeof(*modes); i++)
        if (strcmp(optarg, modes[i]) == 0) {
            aegis_mode = modes[i];
            return 0;
        }
    slurm_error("aegis: --aegis-mode=%s: not shared, mps, mig or exclusive",
                optarg ? optarg : "");
    return -1;
}

/* Reads the plugstack.conf arguments. A bad one is reported and ignored:
 * a failing init in slurmd would drain the node. */
static void aegis_parse_args(int ac, char **av) {
    for (int i = 0; i < ac; i++) {
        const char *a = av[i];
        char *end = NULL;
        long v = -1;
        if (strncmp(a, "retry=", 6) == 0) {
            errno = 0;
            v = strtol(a + 6, &end, 10);
        }
        if (strcmp(a, "required") == 0) aegis_required = 1;
        else if (strcmp(a, "optional") == 0) aegis_required = 0;
        else if (strncmp(a, "socket=", 7) == 0 && a[7]) aegis_socket = a + 7;
        else if (v >= 0 && v <= AEGIS_RETRY_MAX_S && !errno && end != a + 6 &&
                 !*end)
            aegis_retry_s = v;
        else
            slurm_error("aegis: plugstack.conf: argument '%s' ignored (want "
                        "required, optional, socket=PATH, retry=SECONDS "
                        "from 0 to %d)", a, AEGIS_RETRY_MAX_S);
    }
}

int slurm_spank_init(spank_t sp, int ac, char **av) {
    aegis_parse_args(ac, av);
    for (int i = 0; aegis_options[i].name; i++)
        if (spank_option_register(sp, &aegis_options[i]) != ESPANK_SUCCESS)
            slurm_error("aegis: cannot register --%s", aegis_options[i].name);
    /* Only slurmstepd (remote) forks tasks; the write end stays open in it
     * for all of them, and ends with it. */
    if (spank_context() != S_CTX_REMOTE || task_pipe[0] >= 0) return 0;
    if (pipe(task_pipe) != 0) {
        slurm_error("aegis: pipe: %s (no lease_exit sent)", strerror(errno));
        return 0;
    }
    fcntl(task_pipe[0], F_SETFL, O_NONBLOCK);
    for (int i = 0; i < 2; i++) fcntl(task_pipe[i], F_SETFD, FD_CLOEXEC);
    return 0;
}

/* The run a task belongs to: its Slurm job, the job's restart count (0
 * first, 1 after one requeue), and what slurmctld last said of the job. */
typedef struct aegis_run {
    uint32_t job;
    uint32_t restart;
    uint32_t state;    /* JOB_* with flags, when known */
    int gone;          /* slurmctld no longer knows the job */
    time_t checked;    /* when slurmctld last answered */
} aegis_run;

/* The restart count of the run, kept for task_exit (task_pipe's lines):
 * that callback must not ask slurmctld, which may be down or slow past
 * the grace aegisd gives a task's end (docs/slurm.md). */
static uint32_t aegis_run_restart;

/* Slurm's names of the job states (squeue's). */
static const char *aegis_state_name(uint32_t state) {
    static const char *const names[] = {
        "PENDING", "RUNNING", "SUSPENDED", "COMPLETED", "CANCELLED",
        "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL",
        "DEADLINE", "OUT_OF_MEMORY"};
    uint32_t base = state & JOB_STATE_BASE;
    if (state & JOB_REQUEUE) return "REQUEUED";
    return base < sizeof(names) / sizeof(*names) ? names[base] : "ENDED";
}

/* Asks slurmctld about the run's job: 0 with run->state (and a restart
 * count past the run's in *restart), or -1 when slurmctld could not be
 * asked (down, or slower than its MessageTimeout); run->gone when it no
 * longer knows the job. slurm_load_job comes from the libslurmfull that
 * slurmstepd has loaded. */
static int aegis_run_ask(aegis_run *run, uint32_t *restart) {
    job_info_msg_t *info = NULL;
    int rc = slurm_load_job(&info, run->job, SHOW_ALL);
    int err = rc == 0 ? 0 : slurm_get_errno();
    if (rc == 0 && info && info->record_count == 1) {
        run->state = info->job_array[0].job_state;
        *restart = info->job_array[0].restart_cnt;
        run->checked = time(NULL);
    } else if (err == ESLURM_INVALID_JOB_ID) {
        run->gone = 1;
        rc = 0;
    } else {
        rc = -1;
    }
    slurm_free_job_info_msg(info);
    return rc;
}

/* Whether the run still runs: its job RUNNING (or SUSPENDED) and not
 * ending (COMPLETING: scancel, the time limit, a requeue, a node's
 * failure), and not requeued into a later run. */
static int aegis_run_alive(const aegis_run *run, uint32_t restart_now) {
    uint32_t base = run->state & JOB_STATE_BASE;
    return !run->gone && (base == JOB_RUNNING || base == JOB_SUSPENDED) &&
           !(run->state & JOB_COMPLETING) && restart_now <= run->restart;
}

/* The task's run, at its start. Under Slurm 22.05 neither the item
 * S_SLURM_RESTART_COUNT (0 in batch jobs) nor SLURM_RESTART_COUNT (set
 * in the job's environment only after task_init_privileged) has the
 * restart count where the lease is asked for, so slurmctld is asked,
 * which also says whether the job still runs. 0, or -1 when it does not
 * (run->state says how it ended). */
static int aegis_run_start(spank_t sp, aegis_run *run) {
    uint32_t count = 0, asked = 0;
    char text[16] = "";
    memset(run, 0, sizeof(*run));
    run->state = JOB_RUNNING;
    spank_get_item(sp, S_JOB_ID, &run->job);
    spank_get_item(sp, S_SLURM_RESTART_COUNT, &count);
    if (spank_getenv(sp, "SLURM_RESTART_COUNT", text, sizeof(text)) ==
        ESPANK_SUCCESS) {
        unsigned long env = strtoul(text, NULL, 10);
        if (env > count && env <= UINT32_MAX) count = (uint32_t)env;
    }
    if (aegis_run_ask(run, &asked) != 0)
        slurm_error("aegis: job %u: slurmctld not reached (%s): restart "
                    "count %u assumed", run->job,
                    slurm_strerror(slurm_get_errno()), count);
    run->restart = asked > count ? asked : count;
    aegis_run_restart = run->restart;
    return aegis_run_alive(run, run->restart) ? 0 : -1;
}

/* lease_wait's still(): the run's job still runs, or slurmctld cannot
 * say (then the task waits on: aegisd or the Epilog ends the lease). */
static bool aegis_run_still(void *arg) {
    aegis_run *run = arg;
    uint32_t restart = run->restart;
    return aegis_run_ask(run, &restart) != 0 || aegis_run_alive(run, restart);
}

/* Bytes of text a user controls, made fit for a JSON string aegisd
 * takes: each byte past ASCII (it may not be UTF-8, or be cut inside a
 * character) and each control character but those that end or space
 * lines (keep_lines) replaced by '?'. NUL included: aegisd refuses a
 * request that holds one. */
static void aegis_ascii(char *text, size_t len, int keep_lines) {
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        int line = keep_lines && (c == '\n' || c == '\t' || c == '\r');
        if (c >= 0x80 || c == 0x7f || (c < 0x20 && !line)) text[i] = '?';
    }
}

/* The job's name as a lease's name: at most PROTO_MAX_NAME bytes (Slurm
 * allows more), in ASCII (aegis_ascii). */
static void aegis_job_name(spank_t sp, char *name, size_t size) {
    name[0] = '\0';
    spank_getenv(sp, "SLURM_JOB_NAME", name, (int)size);
    size_t len = strnlen(name, size - 1);
    if (len > PROTO_MAX_NAME) len = PROTO_MAX_NAME;
    name[len] = '\0';
    aegis_ascii(name, len, 0);
}

/* How a task's request for its lease ended. */
typedef enum aegis_outcome {
    AEGIS_GRANTED,     /* the lease is the answer */
    AEGIS_REFUSED,     /* aegisd turned it down (its reason on stderr) */
    AEGIS_UNREACHABLE, /* no aegisd for aegis_retry_s seconds */
    AEGIS_ENDED,       /* the job ended meanwhile: the request withdrawn */
} aegis_outcome;

/* The lease request of this task of run. */
static json_t *aegis_lease_request(spank_t sp, const aegis_run *run) {
    uid_t uid = 0;
    char name[4096] = ""; /* Slurm allows long names; cut below */
    spank_get_item(sp, S_JOB_UID, &uid);
    aegis_job_name(sp, name, sizeof(name));
    return json_pack("{s:s, s:I, s:I, s:I, s:I, s:s, s:I, s:i, s:s}", "op",
                     "lease", "slurm_job", (json_int_t)run->job, "restart",
                     (json_int_t)run->restart, "uid", (json_int_t)uid,
                     "mem_mib", (json_int_t)aegis_mem_mib, "mode", aegis_mode,
                     "pid", (json_int_t)getpid(), "gpus", 1, "name", name);
}

/* aegisd's answer: granted, or refused with its reason on the task's
 * stderr; AEGIS_UNREACHABLE with its reason in err when aegisd failed
 * itself (asked again). */
static aegis_outcome aegis_lease_answer(json_t *answer, json_t **lease,
                                        char *err, size_t errlen) {
    if (json_is_true(json_object_get(answer, "ok"))) {
        *lease = answer;
        return AEGIS_GRANTED;
    }
    const char *why = json_string_value(json_object_get(answer, "error"));
    int fault = json_is_true(json_object_get(answer, "server_error"));
    if (fault)
        snprintf(err, errlen, "aegisd: %s", why ? why : "request failed");
    else
        fprintf(stderr, "aegis: aegisd: %s\n", why ? why : "request failed");
    json_decref(answer);
    return fault ? AEGIS_UNREACHABLE : AEGIS_REFUSED;
}

/* Asks aegisd for this task's lease and waits for the grant, as long as
 * the run's job runs (lease_wait). While aegisd cannot be reached it asks
 * again each second for aegis_retry_s seconds, saying so once on the
 * task's stderr. */
static aegis_outcome aegis_request_lease(spank_t sp, aegis_run *run,
                                         json_t **lease) {
    const char *socket = client_socket(aegis_socket);
    time_t deadline = time(NULL) + aegis_retry_s, check = 0;
    int told = 0;
    for (;;) {
        json_t *answer = NULL;
        char err[512] = "";
        time_t asked = time(NULL);
        lease_wait_end end = lease_wait(socket, aegis_lease_request(sp, run),
                                        aegis_run_still, run, &answer, err,
                                        sizeof(err));
        if (end == LEASE_STOPPED) return AEGIS_ENDED;
        aegis_outcome got = end == LEASE_ANSWERED
                                ? aegis_lease_answer(answer, lease, err,
                                                     sizeof(err))
                                : AEGIS_UNREACHABLE;
        if (got != AEGIS_UNREACHABLE) return got;
        if (!told++ && err[0])
            fprintf(stderr, "aegis: %s; trying again for %ld s\n", err,
                    (long)aegis_retry_s);
        /* A call that waited was connected: aegisd went away while the
         * task queued (a restart), so the retry time starts again. */
        if (time(NULL) - asked >= 2) deadline = time(NULL) + aegis_retry_s;
        if (time(NULL) >= deadline) return AEGIS_UNREACHABLE;
        if (time(NULL) >= check + LEASE_WAIT_CHECK_S) {
            if (!aegis_run_still(run)) return AEGIS_ENDED;
            check = time(NULL);
        }
        sleep(1);
    }
}

/* The task does not start: its job ended before it could (when). */
static int aegis_ended(const aegis_run *run, const char *when) {
    fprintf(stderr, "aegis: job %u ended (%s) %s: task not started\n",
            run->job, run->gone ? "gone" : aegis_state_name(run->state), when);
    slurm_info("aegis: job %u ended (%s) %s: task not started", run->job,
               run->gone ? "gone" : aegis_state_name(run->state), when);
    return -1;
}

/* A step of several tasks on the node puts them all on its job's one
 * lease: --aegis-mem is the job's memory on the node, not each task's
 * (docs/slurm.md). Said once per step, by its first task here. */
static void aegis_warn_tasks(spank_t sp) {
    uint32_t ntasks = 0;
    int task = -1;
    if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &ntasks) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_TASK_ID, &task) != ESPANK_SUCCESS ||
        ntasks < 2 || task != 0)
        return;
    fprintf(stderr, "aegis: the %u tasks of this step on this node share "
            "one GPU and --aegis-mem=%ld MiB: it is the job's GPU memory on "
            "a node, not each task's\n", ntasks, aegis_mem_mib);
}

int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av) {
    if (!spank_remote(sp) || aegis_mem_mib == 0) return 0;
    aegis_warn_tasks(sp);
    aegis_run run;
    if (aegis_run_start(sp, &run) != 0)
        return aegis_ended(&run, "before its task asked for its lease");
    aegis_outcome got = aegis_request_lease(sp, &run, &aegis_lease);
    /* A grant may come just after the job ended, before the next check:
     * the task must not run then (Slurm signalled nothing it could have
     * got while it waited). Where slurmctld did not answer at the start
     * it is not asked again (it would hold the task MessageTimeout). */
    if (got == AEGIS_GRANTED && run.checked && !aegis_run_still(&run)) {
        json_decref(aegis_lease);
        aegis_lease = NULL;
        return aegis_ended(&run, "as its lease was granted");
    }
    switch (got) {
    case AEGIS_GRANTED:
        return 0;
    case AEGIS_ENDED:
        return aegis_ended(&run, "while its task waited for its lease");
    case AEGIS_REFUSED:
        slurm_error("aegis: aegisd refused the lease (--aegis-mem=%ld)",
                    aegis_mem_mib);
        return -1;
    case AEGIS_UNREACHABLE:
        break;
    }
    if (aegis_required) {
        slurm_error("aegis: aegisd at %s not reachable for %ld s: task not "
                    "started (plugin 'required')", client_socket(aegis_socket),
                    aegis_retry_s);
        return -1;
    }
    slurm_error("aegis: aegisd at %s not reachable for %ld s: the task runs "
                "without aegis (plugin 'optional')",
                client_socket(aegis_socket), aegis_retry_s);
    return 0;
}

/* Tells slurmstepd (task_pipe) that this task holds a lease, and which
 * file its stderr goes to when that is a regular file whose tail can be
 * read later: its path, device and inode now, at the task's start. */
static void aegis_report_task(void) {
    char path[PATH_MAX] = "", line[PATH_MAX + 96];
    struct stat st = {0};
    ssize_t n = readlink("/proc/self/fd/2", path, sizeof(path) - 1);
    path[n > 0 ? n : 0] = '\0';
    /* a newline in the path would end its line early */
    if (fstat(2, &st) != 0 || !S_ISREG(st.st_mode) || path[0] != '/' ||
        strchr(path, '\n')) {
        path[0] = '\0';
        st.st_dev = 0;
        st.st_ino = 0;
    }
    int len = snprintf(line, sizeof(line), "%ld %lu %llu %llu %s\n",
                       (long)getpid(), (unsigned long)aegis_run_restart,
                       (unsigned long long)st.st_dev,
                       (unsigned long long)st.st_ino, path);
    /* One write under PIPE_BUF bytes: lines of several tasks never mix. */
    if (task_pipe[1] >= 0 && len > 0 && len < PIPE_BUF &&
        write(task_pipe[1], line, (size_t)len) != len)
        slurm_error("aegis: task pipe: %s", strerror(errno));
}

int slurm_spank_task_init(spank_t sp, int ac, char **av) {
    if (!aegis_lease) return 0;
    json_t *env = json_object_get(aegis_lease, "env");
    size_t i;
    json_t *entry;
    json_array_foreach(env, i, entry) {
        const char *text = json_string_value(entry);
        const char *eq = text ? strchr(text, '=') : NULL;
        if (!eq) continue;
        char *name = strndup(text, (size_t)(eq - text));
        if (name && spank_setenv(sp, name, eq + 1, 1) != ESPANK_SUCCESS)
            slurm_error("aegis: cannot set %s for the task", name);
        free(name);
    }
    aegis_report_task();
    return 0;
}

/* Reads what the tasks wrote on task_pipe so far into task_lines. */
static void aegis_read_task_pipe(void) {
    char buf[4096];
    ssize_t n;
    while (task_pipe[0] >= 0 && (n = read(task_pipe[0], buf, sizeof(buf))) > 0) {
        char *grown = realloc(task_lines, task_lines_len + (size_t)n + 1);
        if (!grown) return;
        task_lines = grown;
        memcpy(task_lines + task_lines_len, buf, (size_t)n);
        task_lines_len += (size_t)n;
        task_lines[task_lines_len] = '\0';
    }
}

/* The stderr file task pid reported: its path (possibly "", malloc'd:
 * the caller frees it) and identity, and the restart count of its run,
 * or NULL when it holds no lease. */
static char *aegis_task_stderr(pid_t pid, job_file_id *id,
                               uint32_t *restart) {
    char key[32];
    int klen = snprintf(key, sizeof(key), "%ld ", (long)pid);
    for (char *line = task_lines; line && *line;) {
        char *nl = strchr(line, '\n');
        if (!nl) break;
        unsigned long long dev, ino;
        unsigned long run;
        int at = 0;
        if (strncmp(line, key, (size_t)klen) == 0 &&
            sscanf(line + klen, "%lu %llu %llu%n", &run, &dev, &ino, &at) ==
                3 && line[klen + at] == ' ') {
            const char *path = line + klen + at + 1;
            *restart = (uint32_t)run;
            id->dev = (dev_t)dev;
            id->ino = (ino_t)ino;
            return strndup(path, (size_t)(nl - path));
        }
        line = nl + 1;
    }
    return NULL;
}

/* The job's user, groups included, as the tail is read as them. */
static int aegis_job_user(spank_t sp, job_file_user *who) {
    gid_t *groups = NULL;
    int ngroups = 0;
    if (spank_get_item(sp, S_JOB_UID, &who->uid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_GID, &who->gid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &groups, &ngroups) !=
            ESPANK_SUCCESS || ngroups < 0)
        return -1;
    who->groups = groups;
    who->ngroups = (size_t)ngroups;
    return 0;
}

/* The last STDERR_TAIL_BYTES of the task's stderr file at path, or NULL.
 * Read as the job's user, and only from the very file the task started
 * with (job_file.h): the task could have put anything at path since. */
static json_t *aegis_read_tail(spank_t sp, const char *path,
                               const job_file_id *id) {
    char buf[STDERR_TAIL_BYTES];
    job_file_user who;
    if (!path[0]) return NULL;
    if (aegis_job_user(sp, &who) != 0) {
        slurm_error("aegis: %s: the job's user and groups not known: its "
                    "tail not read", path);
        return NULL;
    }
    ssize_t n = job_file_tail_as(&who, path, id, buf, sizeof(buf));
    if (n < 0 && errno != ENOENT)
        slurm_error("aegis: stderr %s: %s", path, job_file_error(errno));
    /* jansson wants UTF-8 and aegisd no NUL: a tail cut inside a
     * character, or binary output, goes as its ASCII lines */
    if (n > 0) aegis_ascii(buf, (size_t)n, 1);
    return n > 0 ? json_stringn(buf, (size_t)n) : NULL;
}

int slurm_spank_task_exit(spank_t sp, int ac, char **av) {
    if (!spank_remote(sp) || aegis_mem_mib == 0) return 0;
    pid_t pid = 0;
    int status = 0;
    uint32_t job = 0;
    spank_get_item(sp, S_TASK_PID, &pid);
    spank_get_item(sp, S_TASK_EXIT_STATUS, &status);
    spank_get_item(sp, S_JOB_ID, &job);
    aegis_read_task_pipe();
    job_file_id id;
    uint32_t restart = 0; /* the task's, from its start: see aegis_run */
    char *path = aegis_task_stderr(pid, &id, &restart);
    if (!path) return 0; /* ran without a lease */
    json_t *req = json_pack("{s:s, s:I, s:I, s:I, s:i}", "op", "lease_exit",
                            "slurm_job", (json_int_t)job, "restart",
                            (json_int_t)restart, "pid", (json_int_t)pid,
                            "status", status);
    json_t *tail = aegis_read_tail(sp, path, &id);
    if (req && tail) json_object_set_new(req, "stderr_tail", tail);
    else json_decref(tail);
    free(path);
    int rc;
    /* Failing here would not help: aegisd ends the lease anyway when the
     * task's processes are gone, and the Epilog ends it with the job. */
    json_decref(client_call("slurm lease_exit", client_socket(aegis_socket),
                            req, &rc));
    return 0;
}
