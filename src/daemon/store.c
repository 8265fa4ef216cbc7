/* store.c -- aegisd's SQLite state (see store.h for the durability
 * argument).
 *
 * Three tables: jobs (one row per job, its current state), attempts (one
 * row per run of a job, with the pids needed to re-adopt it after a
 * restart) and events (a human-readable history for `aegis show`). The
 * environment of a submit is stored once in envs and shared by all the
 * jobs of that submit, so an array of 10,000 jobs writes one environment.
 * Statements are prepared once at open.
 *
 * When the disk is full or read-only, writes fail. A transaction whose
 * commit failed is rolled back and its statements kept, with their values,
 * as SQL text (sqlite3_expanded_sql) in the order they ran; while any are
 * kept, later writes join them without being tried, so their order holds.
 * store_retry() replays them all in one transaction once writes succeed
 * again. What must be durable before aegisd answers or acts (a launch, a
 * cancel) uses store_commit_now(), which keeps nothing: it is committed or
 * not done at all.
 */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char schema[] =
    "PRAGMA journal_mode=WAL;"
    /* the log is synced where aegisd makes a promise (wal_sync.c) */
    "PRAGMA synchronous=NORMAL;"
    "PRAGMA foreign_keys=ON;"
    "CREATE TABLE IF NOT EXISTS envs("
    "  id INTEGER PRIMARY KEY, cwd TEXT NOT NULL, env TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS jobs("
    "  id INTEGER PRIMARY KEY, uid INTEGER NOT NULL, gid INTEGER NOT NULL,"
    "  user TEXT NOT NULL, name TEXT NOT NULL, cmd TEXT NOT NULL,"
    "  feed TEXT NOT NULL DEFAULT '',"
    "  env_id INTEGER NOT NULL REFERENCES envs(id),"
    "  gpus INTEGER NOT NULL, mem_mib REAL, after INTEGER,"
    "  state TEXT NOT NULL, reason TEXT, submitted REAL NOT NULL,"
    "  finished REAL, attempts INTEGER NOT NULL DEFAULT 0,"
    "  energy_j REAL NOT NULL DEFAULT 0);"
    "CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state)"
    "  WHERE state IN ('queued','running');"
    /* `ls -u USER` (STORE_LS_USER) */
    "CREATE INDEX IF NOT EXISTS jobs_user ON jobs(user);"
    "CREATE INDEX IF NOT EXISTS jobs_uid ON jobs(uid);"
    "CREATE TABLE IF NOT EXISTS attempts("
    "  job_id INTEGER NOT NULL REFERENCES jobs(id), n INTEGER NOT NULL,"
    "  gpus TEXT NOT NULL, floor_mib REAL, exclusive INTEGER NOT NULL,"
    "  shim_pid INTEGER, shim_start INTEGER, job_pid INTEGER, err_offset INTEGER,"
    "  started REAL NOT NULL, ended REAL, how TEXT, status INTEGER,"
    "  PRIMARY KEY(job_id, n));"
    "CREATE TABLE IF NOT EXISTS events("
    "  id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL, t REAL NOT NULL,"
    "  text TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS events_job ON events(job_id);"
    /* MIG instances aegisd made, one row while each exists: after a crash
     * the next aegisd gives them back to their re-adopted attempts or
     * destroys them */
    "CREATE TABLE IF NOT EXISTS mig_instances("
    "  gpu INTEGER NOT NULL, gi INTEGER NOT NULL, ci INTEGER NOT NULL,"
    "  job_id INTEGER NOT NULL, n INTEGER NOT NULL, profile TEXT NOT NULL,"
    "  start INTEGER NOT NULL, uuid TEXT NOT NULL, PRIMARY KEY(gpu, gi));"
    /* one row store_retry() rewrites, so that a retry with nothing kept
     * still proves the database can be written */
    "CREATE TABLE IF NOT EXISTS probe(id INTEGER PRIMARY KEY, t REAL);"

    /* GPUs drained by `aegis drain`, by UUID: a drain holds across
     * restarts, and stays with its GPU if the indices change */
    "CREATE TABLE IF NOT EXISTS drains("
    "  uuid TEXT PRIMARY KEY, reason TEXT NOT NULL, user TEXT NOT NULL,"
    "  t REAL NOT NULL);"

    /* each job's samples over its run (history.h): its memory and SM
     * share, and its GPUs' used and total memory, at time t */
    "CREATE TABLE IF NOT EXISTS history("
    "  job_id INTEGER NOT NULL, t REAL NOT NULL, mem_mib REAL,"
    "  gpu_used_mib REAL, gpu_total_mib REAL, sm_pct REAL,"
    "  PRIMARY KEY(job_id, t)) WITHOUT ROWID;"
    /* each Slurm job's place on the recovery ladder after an OOM: its
     * next run (a new lease) starts there */
    "CREATE TABLE IF NOT EXISTS slurm_ladder("
    "  slurm_job INTEGER PRIMARY KEY, attempt INTEGER NOT NULL,"
    "  floor_mib REAL NOT NULL, alone INTEGER NOT NULL);"
    /* each GPU's energy counter as last read (Unix time t), its power and
     * its running jobs' shares of its energy then (JSON {"id": share}),
     * saved with the jobs' energy in each tick's commit: a restarted
     * aegisd charges the counter's rise since to them (jobs_outage.c) */
    "CREATE TABLE IF NOT EXISTS gpu_energy("
    "  gpu INTEGER PRIMARY KEY, uuid TEXT NOT NULL, energy_j REAL NOT NULL,"
    "  t REAL NOT NULL, power_w REAL, shares TEXT NOT NULL);";

/* Columns added since the first schema, so a database an older aegisd
 * wrote gets them on open; one list serves new and old databases. */
static const char *const store_added[][3] = {
    /* the job's place on the recovery ladder (core_retry), kept from a
     * requeue to the next one so a restart resumes it */
    {"jobs", "retry_floor", "REAL NOT NULL DEFAULT 0"},
    {"jobs", "retry_alone", "INTEGER NOT NULL DEFAULT 0"},
    /* when the attempt was first seen on its GPUs (Unix time): a re-adopted
     * attempt's observation time runs from then */
    {"attempts", "seen", "REAL"},
    /* CUDA_MPS_ACTIVE_THREAD_PERCENTAGE when it runs under MPS; 0: none */
    {"jobs", "mps_threads_pct", "INTEGER NOT NULL DEFAULT 0"},
    /* the jobs it waits for, JSON [{id, kind}] (the older `after` column
     * holds an afterok id of rows written before), and the opaque meta
     * object of its submit (an AEGIS spec's estimates and profile) */
    {"jobs", "deps", "TEXT"},
    {"jobs", "meta", "TEXT"},
    /* when its owner cancelled it (Unix time): a cancel answered holds
     * across a restart */
    {"jobs", "cancel_at", "REAL"},
    /* `aegis hold`: a held job stays queued but is not placed */
    {"jobs", "held", "INTEGER NOT NULL DEFAULT 0"},
    /* `aegis submit --time`: seconds each attempt may run; NULL: none */
    {"jobs", "time_limit_s", "REAL"},
    /* its submit's --nice (aegis-plus's queue order) */
    {"jobs", "nice", "INTEGER NOT NULL DEFAULT 0"},
    /* the history periods between two of its samples (history.h): 1,
     * doubled each time its samples were thinned */
    {"jobs", "history_step", "INTEGER NOT NULL DEFAULT 1"},
    /* `aegis submit --notify`: the command run at its end; NULL: the
     * config's notify, "": none */
    {"jobs", "notify", "TEXT"},
    /* a Slurm job step's lease (lease.c): its Slurm job, restart count
     * and mode; its tasks' pids ("12,13") and the grant's variables (JSON
     * ["K=V"...]), for a restarted aegisd. NULL for aegisd's own jobs */
    /* `aegis submit --cpus`, `--host-mem`: its cgroup's limits; NULL:
     * the config's per-GPU defaults */
    /* `aegis clear`: a finished job its owner hid from ls (tsp -C);
     * reports still count it */
    {"jobs", "cleared", "INTEGER NOT NULL DEFAULT 0"},
    {"jobs", "cpus", "INTEGER"},
    /* `aegis submit -o`, `-e`: its output file patterns; NULL: none */
    {"jobs", "stdout_path", "TEXT"},
    {"jobs", "stderr_path", "TEXT"},
    {"jobs", "host_mem_mib", "REAL"},
    {"jobs", "slurm_job", "INTEGER"},
    {"jobs", "slurm_restart", "INTEGER"},
    {"jobs", "slurm_mode", "TEXT"},
    {"jobs", "slurm_pids", "TEXT"},
    {"jobs", "slurm_env", "TEXT"},
    /* 1: the managed producer of its feed (aegis feed start) */
    {"jobs", "feed_producer", "INTEGER NOT NULL DEFAULT 0"},
    /* a producer's restarts for its consumers (daemon/feeds.c) */
    {"jobs", "feed_restarts", "INTEGER NOT NULL DEFAULT 0"},
    /* 1: a producer stopped since its feed's last consumer ended: it
     * ends as done, also when aegisd restarts while it winds down */
    {"jobs", "feed_stop", "INTEGER NOT NULL DEFAULT 0"},
    /* the pipeline whose supervisor the job is (daemon/pipelines.c); "":
     * not a supervisor */
    {"jobs", "pipeline", "TEXT NOT NULL DEFAULT ''"},
    /* the submitter's umask, for the files its jobs make; NULL: aegisd's */
    {"envs", "umask", "INTEGER"},
    /* its CO2 at the intensity and PUE in force as each tick's energy was
     * charged, and that energy x PUE; NULL: a job of an aegisd before
     * them (its report row is at the report's figures) */
    {"jobs", "co2_g", "REAL"},
    {"jobs", "pue_j", "REAL"},
};
#define STORE_ADDED (sizeof(store_added) / sizeof(store_added[0]))

enum {
    S_BEGIN, S_COMMIT, S_ROLLBACK, S_ENV, S_JOB, S_ATT_START, S_ATT_END,
    S_STATE, S_ENERGY, S_EVENT, S_GET, S_GET_FULL, S_ATTEMPTS, S_EVENTS,
    S_LIST_ALL, S_LIST_ALL_USER, S_LIST_ACTIVE, S_LIST_ACTIVE_USER, S_RETRY,
    S_SEEN,
    S_REPORT_JOBS, S_REPORT_ATTEMPTS, S_MIG_ADD, S_MIG_DEL, S_MIG_ALL,
    S_ATT_PIDS, S_ATT_DROP, S_CANCEL, S_PROBE, S_HELD, S_FEED, S_DRAIN_SET,
    S_DRAIN_DEL, S_DRAIN_GET, S_HIST_ADD, S_HIST_THIN, S_HIST_STEP,
    S_HIST_GET, S_HIST_STATE, S_LEASE_SET, S_LEASE_PIDS, S_LEASE_ENV,
    S_LADDER_SET, S_LADDER_GET, S_COUNT_ALL, S_COUNT_ALL_USER, S_COUNT_ACTIVE,
    S_COUNT_ACTIVE_USER, S_UPDATE,
    S_CLEAR, S_PRUNE_IDS, S_PRUNE_ATT, S_PRUNE_EV, S_PRUNE_HIST, S_PRUNE_JOBS,
    S_PRUNE_ENVS, S_GPU_ENERGY_SET, S_GPU_ENERGY_GET, S_USER, S_COUNT
};
/* store_filtered() finds each -u variant right after its plain one */
_Static_assert(S_LIST_ALL_USER == S_LIST_ALL + 1 &&
                   S_LIST_ACTIVE_USER == S_LIST_ACTIVE + 1 &&
                   S_COUNT_ALL_USER == S_COUNT_ALL + 1 &&
                   S_COUNT_ACTIVE_USER == S_COUNT_ACTIVE + 1,
               "a -u statement follows its plain one");

/* A job's dependencies as a column "deps": a row written before they
 * were kept as a list has the one afterok id of its `after` column. */
#define STORE_DEPS(t)                                                       \
    "coalesce(" t "deps, CASE WHEN " t "after IS NULL THEN NULL ELSE"       \
    " json_array(json_object('id', " t "after, 'kind', 'afterok')) END)"    \
    " AS deps"

/* `aegis ls -u USER --state S,...`: ?3 a JSON array of states; NULL:
 * any. A job held by `aegis hold` is stored as queued, and `ls` shows it
 * as held: it is held, not queued, here too. A job its owner cleared is
 * left out unless ?4. */
#define STORE_LS_FILTER                                                    \
    "(cleared = 0 OR ?4)"                                                  \
    " AND (?3 IS NULL OR (CASE WHEN held AND state = 'queued' THEN 'held'" \
    " ELSE state END) IN (SELECT value FROM json_each(?3)))"
/* and -u USER: ?2 a login name, ?5 the same text as a uid when it is one
 * in decimal (NULL otherwise). Looked up through the indexes on user and
 * on uid, so that one user's jobs are found without reading everyone's. */
#define STORE_LS_USER                                                      \
    STORE_LS_FILTER " AND id IN (SELECT id FROM jobs WHERE user = ?2"      \
    " UNION SELECT id FROM jobs WHERE uid = ?5)"

/* What `ls` shows of a job. */
#define STORE_LS_COLUMNS                                                   \
    "id, user, uid, name, cmd, gpus, mem_mib, " STORE_DEPS("")             \
    ", state, reason, submitted, finished, attempts, energy_j, feed, held," \
    " time_limit_s, nice, slurm_job, slurm_restart, slurm_mode,"           \
    " feed_producer, pipeline"
/* The newest rows that pass `filter`, shown in id order. */
#define STORE_LIST_ALL(filter)                                             \
    "SELECT * FROM (SELECT " STORE_LS_COLUMNS " FROM jobs WHERE " filter   \
    " ORDER BY id DESC LIMIT ?1) ORDER BY id"
/* The queued and running rows that pass `filter`. */
#define STORE_ACTIVE(filter) "state IN ('queued','running') AND " filter
/* The first of them. */
#define STORE_LIST_ACTIVE(filter)                                          \
    "SELECT " STORE_LS_COLUMNS " FROM jobs WHERE " STORE_ACTIVE(filter)    \
    " ORDER BY id LIMIT ?1"

/* `aegis report --since T --until U -u USER`: jobs submitted in [?1, ?2)
 * (?2 NULL: no end) of user ?3 (a login name or a uid as text; NULL:
 * anyone's). Column names unqualified: both report queries read them
 * from jobs alone. */
#define STORE_REPORT_FILTER                                                \
    "submitted >= ?1 AND (?2 IS NULL OR submitted < ?2)"                   \
    " AND (?3 IS NULL OR user = ?3 OR CAST(uid AS TEXT) = ?3)"

static const char *const sql[S_COUNT] = {
    [S_BEGIN] = "BEGIN IMMEDIATE",
    [S_COMMIT] = "COMMIT",
    [S_ROLLBACK] = "ROLLBACK",
    [S_ENV] = "INSERT INTO envs(cwd, env, umask) VALUES(?1, ?2, ?3)",
    [S_JOB] = "INSERT INTO jobs(uid, gid, user, name, cmd, env_id, gpus,"
              " mem_mib, state, submitted, feed, mps_threads_pct, deps, meta,"
              " time_limit_s, nice, notify, feed_producer, pipeline, cpus,"
              " host_mem_mib, stdout_path, stderr_path)"
              " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'queued', ?9, ?10, ?11,"
              " ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)",
    [S_ATT_START] = "INSERT OR REPLACE INTO attempts(job_id, n, gpus,"
                    " floor_mib, exclusive, shim_pid, shim_start, job_pid,"
                    " started, err_offset)"
                    " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    [S_ATT_END] = "UPDATE attempts SET ended = ?3, how = ?4, status = ?5"
                  " WHERE job_id = ?1 AND n = ?2",
    [S_STATE] = "UPDATE jobs SET state = ?2, reason = coalesce(?3, reason),"
                " finished = CASE WHEN ?2 IN ('queued','running') THEN NULL"
                " ELSE ?4 END,"
                " attempts = (SELECT count(*) FROM attempts WHERE job_id = ?1)"
                " WHERE id = ?1",
    [S_ENERGY] = "UPDATE jobs SET energy_j = ?2, co2_g = ?3, pue_j = ?4"
                 " WHERE id = ?1",
    [S_EVENT] = "INSERT INTO events(job_id, t, text) VALUES(?1, ?2, ?3)",
    [S_GET] = "SELECT id, user, uid, name, cmd, gpus, mem_mib, " STORE_DEPS("")
              ", state, reason, submitted, finished, attempts, energy_j, feed,"
              " retry_floor, retry_alone, meta, held, time_limit_s, nice,"
              " slurm_job, slurm_restart, slurm_mode, feed_producer, pipeline"
              " FROM jobs WHERE id = ?1",
    [S_GET_FULL] = "SELECT j.id, j.user, j.uid, j.gid, j.name, j.cmd, j.gpus,"
                   " j.mem_mib, " STORE_DEPS("j.") ", j.state, j.reason, j.submitted,"
                   " j.finished, j.attempts, j.energy_j, j.feed, j.retry_floor,"
                   " j.retry_alone, j.mps_threads_pct, j.meta, j.cancel_at,"
                   " j.held, j.time_limit_s, j.nice, j.notify, j.slurm_job,"
                   " j.slurm_restart, j.slurm_mode, j.slurm_pids, j.cpus,"
                   " j.host_mem_mib, j.stdout_path, j.stderr_path,"
                   " j.slurm_env, j.feed_producer, j.feed_restarts, j.feed_stop,"
                   " j.pipeline, j.co2_g, j.pue_j,"
                   " e.cwd, e.env, e.umask"
                   " FROM jobs j JOIN envs e ON e.id = j.env_id"
                   " WHERE j.id = ?1",
    [S_ATTEMPTS] = "SELECT n, gpus, floor_mib, exclusive, shim_pid,"
                   " shim_start, job_pid, err_offset, started, seen, ended,"
                   " how, status"
                   " FROM attempts WHERE job_id = ?1 ORDER BY n",
    [S_EVENTS] = "SELECT t, text FROM events WHERE job_id = ?1 ORDER BY id",
    [S_LIST_ALL] = STORE_LIST_ALL(STORE_LS_FILTER),
    [S_LIST_ALL_USER] = STORE_LIST_ALL(STORE_LS_USER),
    [S_LIST_ACTIVE] = STORE_LIST_ACTIVE(STORE_LS_FILTER),
    [S_LIST_ACTIVE_USER] = STORE_LIST_ACTIVE(STORE_LS_USER),
    [S_RETRY] = "UPDATE jobs SET retry_floor = ?2, retry_alone = ?3"
                " WHERE id = ?1",
    [S_SEEN] = "UPDATE attempts SET seen = ?3 WHERE job_id = ?1 AND n = ?2",
    [S_REPORT_JOBS] = "SELECT id, user, uid, name, gpus, state, submitted,"
                      " finished, energy_j, co2_g, pue_j FROM jobs"
                      " WHERE " STORE_REPORT_FILTER
                      " ORDER BY id",
    [S_REPORT_ATTEMPTS] = "SELECT a.job_id, a.gpus, a.started, a.ended"
                          " FROM attempts a JOIN jobs j ON j.id = a.job_id"
                          " WHERE " STORE_REPORT_FILTER
                          " ORDER BY a.job_id, a.n",
    [S_MIG_ADD] = "INSERT OR REPLACE INTO mig_instances(gpu, gi, ci, job_id, n,"
                  " profile, start, uuid) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7,"
                  " ?8)",
    [S_MIG_DEL] = "DELETE FROM mig_instances WHERE gpu = ?1 AND gi = ?2",
    [S_MIG_ALL] = "SELECT gpu, gi, ci, job_id, n, profile, start, uuid"
                  " FROM mig_instances ORDER BY gpu, gi",
    [S_ATT_PIDS] = "UPDATE attempts SET shim_pid = ?3, shim_start = ?4,"
                   " job_pid = ?5, err_offset = ?6 WHERE job_id = ?1 AND n = ?2",
    [S_ATT_DROP] = "DELETE FROM attempts WHERE job_id = ?1 AND n = ?2",
    /* ?1: the ids, a JSON array: one statement for a bulk cancel */
    [S_CANCEL] = "UPDATE jobs SET cancel_at = ?2 WHERE id IN"
                 " (SELECT value FROM json_each(?1)) AND cancel_at IS NULL",
    [S_PROBE] = "INSERT OR REPLACE INTO probe(id, t) VALUES(1, ?1)",
    [S_HELD] = "UPDATE jobs SET held = ?2 WHERE id = ?1",
    [S_CLEAR] = "UPDATE jobs SET cleared = 1 WHERE uid = ?1 AND cleared = 0"
                " AND state NOT IN ('queued', 'running')",
    [S_PRUNE_IDS] = "SELECT id FROM jobs WHERE finished < ?1"
                    " AND state NOT IN ('queued', 'running')"
                    " ORDER BY id LIMIT ?2",
    /* ?1: the ids, a JSON array; and what hangs on them; an env row once
     * no job uses it */
    [S_PRUNE_ATT] = "DELETE FROM attempts WHERE job_id IN"
                    " (SELECT value FROM json_each(?1))",
    [S_PRUNE_EV] = "DELETE FROM events WHERE job_id IN"
                   " (SELECT value FROM json_each(?1))",
    [S_PRUNE_HIST] = "DELETE FROM history WHERE job_id IN"
                     " (SELECT value FROM json_each(?1))",
    [S_PRUNE_JOBS] = "DELETE FROM jobs WHERE id IN"
                     " (SELECT value FROM json_each(?1))",
    [S_PRUNE_ENVS] = "DELETE FROM envs WHERE id NOT IN"
                     " (SELECT env_id FROM jobs)",
    [S_UPDATE] = "UPDATE jobs SET time_limit_s = ?2, nice = ?3,"
                 " mem_mib = ?4, name = ?5 WHERE id = ?1",
    /* a producer not being stopped for its feed has no stop committed:
     * one that sleeps again after its stop forgets it */
    [S_FEED] = "UPDATE jobs SET feed_restarts = ?2, feed_stop = ?3,"
               " cancel_at = CASE WHEN ?3 THEN cancel_at END WHERE id = ?1",
    [S_DRAIN_SET] = "INSERT OR REPLACE INTO drains(uuid, reason, user, t)"
                    " VALUES(?1, ?2, ?3, ?4)",
    [S_DRAIN_DEL] = "DELETE FROM drains WHERE uuid = ?1",
    [S_DRAIN_GET] = "SELECT reason, user, t FROM drains WHERE uuid = ?1",
    [S_HIST_ADD] = "INSERT OR REPLACE INTO history(job_id, t, mem_mib,"
                   " gpu_used_mib, gpu_total_mib, sm_pct)"
                   " VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    /* every other sample, by time, the first one kept */
    [S_HIST_THIN] = "DELETE FROM history WHERE job_id = ?1 AND t IN"
                    " (SELECT t FROM (SELECT t, row_number() OVER"
                    " (ORDER BY t) AS k FROM history WHERE job_id = ?1)"
                    " WHERE k % 2 = 0)",
    [S_HIST_STEP] = "UPDATE jobs SET history_step = ?2 WHERE id = ?1",
    [S_HIST_GET] = "SELECT t, mem_mib, gpu_used_mib, gpu_total_mib, sm_pct"
                   " FROM history WHERE job_id = ?1 ORDER BY t",
    [S_HIST_STATE] = "SELECT (SELECT count(*) FROM history WHERE job_id = ?1),"
                     " history_step FROM jobs WHERE id = ?1",
    [S_LEASE_SET] = "UPDATE jobs SET slurm_job = ?2, slurm_restart = ?3,"
                    " slurm_mode = ?4 WHERE id = ?1",
    [S_LEASE_PIDS] = "UPDATE jobs SET slurm_pids = ?2 WHERE id = ?1",
    [S_LEASE_ENV] = "UPDATE jobs SET slurm_env = ?2 WHERE id = ?1",
    [S_LADDER_SET] = "INSERT OR REPLACE INTO slurm_ladder(slurm_job, attempt,"
                     " floor_mib, alone) VALUES(?1, ?2, ?3, ?4)",
    [S_LADDER_GET] = "SELECT attempt, floor_mib, alone FROM slurm_ladder"
                     " WHERE slurm_job = ?1",
    [S_GPU_ENERGY_SET] = "INSERT OR REPLACE INTO gpu_energy(gpu, uuid,"
                         " energy_j, t, power_w, shares)"
                         " VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    [S_GPU_ENERGY_GET] = "SELECT uuid, energy_j, t, power_w, shares"
                         " FROM gpu_energy WHERE gpu = ?1",
    [S_USER] = "SELECT user FROM jobs WHERE id = ?1",
    [S_COUNT_ALL] = "SELECT count(*) FROM jobs WHERE " STORE_LS_FILTER,
    [S_COUNT_ALL_USER] = "SELECT count(*) FROM jobs WHERE " STORE_LS_USER,
    [S_COUNT_ACTIVE] = "SELECT count(*) FROM jobs WHERE "
                       STORE_ACTIVE(STORE_LS_FILTER),
    [S_COUNT_ACTIVE_USER] = "SELECT count(*) FROM jobs WHERE "
                            STORE_ACTIVE(STORE_LS_USER),
};

/* SQL texts in the order they ran. */
typedef struct store_journal {
    char **texts;           /* sqlite3_malloc'd */
    size_t n, cap;
} store_journal;

/* Nesting of store_begin() pairs whose start store_commit_now() can
 * tell apart; deeper pairs share the deepest's. */
#define STORE_MAX_DEPTH 16

struct store {
    sqlite3 *db;
    sqlite3_stmt *st[S_COUNT];
    int depth;              /* store_begin() nesting: only the outer commits */
    size_t marks[STORE_MAX_DEPTH]; /* tx.n at the start of each pair */
    unsigned long commits;  /* transactions committed (store_commits) */
    char path[4096];
    bool failing;           /* writes fail: `kept` holds what is not saved */
    char why[4400];         /* the failure, with the database's path */
    store_journal tx;       /* the open transaction's writes */
    store_journal kept;     /* writes not saved yet, oldest first */
    char error[512];        /* store_errmsg()'s text */
};

/* Whether SQLite's last error came from a system call whose errno it
 * kept: it keeps one for I/O errors and files it cannot open only, and
 * never clears it, so after any other error it is an earlier one's. */
static bool store_errno_fresh(sqlite3 *db) {
    int ext = sqlite3_extended_errcode(db);
    return ((ext & 0xff) == SQLITE_IOERR || (ext & 0xff) == SQLITE_CANTOPEN) &&
           ext != SQLITE_IOERR_NOMEM;
}

/* SQLite says "disk I/O error" of a full disk, a read-only one and a
 * failing one alike: where the system gave a reason, it is added. */
const char *store_errmsg(store *st) {
    int sys = sqlite3_system_errno(st->db);
    if (sys != 0 && store_errno_fresh(st->db))
        snprintf(st->error, sizeof(st->error), "%s (%s)",
                 sqlite3_errmsg(st->db), strerror(sys));
    else
        snprintf(st->error, sizeof(st->error), "%s", sqlite3_errmsg(st->db));
    return st->error;
}

bool store_failing(const store *st) { return st->failing; }

int store_backup(store *st, const char *path, char *err, size_t errlen) {
    /* made here, new and 0600: the copy holds every job's environment */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    close(fd);
    sqlite3 *copy = NULL;
    int rc = sqlite3_open_v2(path, &copy, SQLITE_OPEN_READWRITE, NULL);
    sqlite3_backup *b = rc == SQLITE_OK
                            ? sqlite3_backup_init(copy, "main", st->db, "main")
                            : NULL;
    if (b) {
        rc = sqlite3_backup_step(b, -1); /* every page, in one step */
        sqlite3_backup_finish(b);
        if (rc == SQLITE_DONE) rc = SQLITE_OK;
    } else if (rc == SQLITE_OK) {
        rc = sqlite3_errcode(copy);
    }
    if (rc != SQLITE_OK)
        snprintf(err, errlen, "%s: %s", path,
                 copy ? sqlite3_errmsg(copy) : sqlite3_errstr(rc));
    sqlite3_close(copy);
    return rc == SQLITE_OK ? 0 : -1;
}

const char *store_failure(const store *st) { return st->why; }

static void store_journal_push(store_journal *j, char *text) {
    if (!text) {
        fprintf(stderr, "aegisd: store: out of memory: a write is lost\n");
        return;
    }
    if (j->n == j->cap) {
        size_t cap = j->cap ? j->cap * 2 : 64;
        char **grown = realloc(j->texts, cap * sizeof(*grown));
        if (!grown) {
            fprintf(stderr, "aegisd: store: out of memory: lost %s\n", text);
            sqlite3_free(text);
            return;
        }
        j->texts = grown;
        j->cap = cap;
    }
    j->texts[j->n++] = text;
}

static void store_journal_clear(store_journal *j) {
    for (size_t i = 0; i < j->n; i++) sqlite3_free(j->texts[i]);
    j->n = 0;
}

/* Appends from's texts to to's, emptying from. */
static void store_journal_move(store_journal *to, store_journal *from) {
    for (size_t i = 0; i < from->n; i++) store_journal_push(to, from->texts[i]);
    from->n = 0;
}

/* Errors of the disk or the database file, which a later retry may not
 * meet, unlike a statement's own error (a constraint), which it would. */
static bool store_io_error(int rc) {
    switch (rc & 0xff) {
    case SQLITE_FULL: case SQLITE_IOERR: case SQLITE_READONLY:
    case SQLITE_CANTOPEN: case SQLITE_BUSY: case SQLITE_LOCKED:
    case SQLITE_NOMEM: case SQLITE_PROTOCOL:
        return true;
    default:
        return false;
    }
}

void store_fail_because(store *st, const char *why) {
    if (st->failing) return;
    st->failing = true;
    snprintf(st->why, sizeof(st->why), "%s", why);
    fprintf(stderr, "aegisd: STATE NOT SAVED: cannot write %s; no job is "
            "taken or started until it can be (retrying every second)\n",
            st->why);
}

/* Writes stop being tried: said loudly once, with the cause. */
static void store_fail(store *st) {
    char why[sizeof(st->why)];
    snprintf(why, sizeof(why), "%s: %s", st->path, store_errmsg(st));
    store_fail_because(st, why);
}

/* Runs a prepared statement that returns no rows; logs a failure with the
 * job it concerned (the daemon carries on: the row is rewritten at the
 * job's next change). */
static int store_exec(store *st, int which, int64_t id) {
    sqlite3_stmt *s = st->st[which];
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    if (rc != SQLITE_DONE) {
        if (store_io_error(rc)) store_fail(st);
        else
            fprintf(stderr, "aegisd: store: job %lld: %s: %s\n", (long long)id,
                    sql[which], sqlite3_errmsg(st->db));
        return -1;
    }
    return 0;
}

/* A write of the daemon's: run, or kept (not tried while others are). */
static void store_write(store *st, int which, int64_t id) {
    sqlite3_stmt *s = st->st[which];
    char *text = sqlite3_expanded_sql(s);
    int rc = -1;
    if (st->failing) {
        sqlite3_reset(s);
        sqlite3_clear_bindings(s);
    } else {
        rc = store_exec(st, which, id);
    }
    if (st->depth > 0) store_journal_push(&st->tx, text);
    else if (rc != 0 && st->failing) store_journal_push(&st->kept, text);
    else sqlite3_free(text);
}

/* Adds each column of store_added the database lacks. */
static int store_migrate(store *st) {
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(st->db, "SELECT count(*) FROM pragma_table_info(?1)"
                           " WHERE name = ?2", -1, &q, NULL) != SQLITE_OK)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < STORE_ADDED && rc == 0; i++) {
        sqlite3_bind_text(q, 1, store_added[i][0], -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 2, store_added[i][1], -1, SQLITE_STATIC);
        bool has = sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int(q, 0) > 0;
        sqlite3_reset(q);
        if (has) continue;
        char alter[256];
        snprintf(alter, sizeof(alter), "ALTER TABLE %s ADD COLUMN %s %s",
                 store_added[i][0], store_added[i][1], store_added[i][2]);
        rc = sqlite3_exec(st->db, alter, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
    }
    sqlite3_finalize(q);
    return rc;
}

store *store_open(const char *path, char *err, size_t errlen) {
    store *st = calloc(1, sizeof(*st));
    if (!st) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    snprintf(st->path, sizeof(st->path), "%s", path);
    if (sqlite3_open(path, &st->db) != SQLITE_OK ||
        sqlite3_busy_timeout(st->db, 5000) != SQLITE_OK ||
        sqlite3_exec(st->db, schema, NULL, NULL, NULL) != SQLITE_OK ||
        store_migrate(st) != 0) {
        snprintf(err, errlen, "%s: %s", path, store_errmsg(st));
        store_close(st);
        return NULL;
    }
    for (int i = 0; i < S_COUNT; i++)
        if (sqlite3_prepare_v2(st->db, sql[i], -1, &st->st[i], NULL) !=
            SQLITE_OK) {
            snprintf(err, errlen, "%s: preparing '%s': %s", path, sql[i],
                     sqlite3_errmsg(st->db));
            store_close(st);
            return NULL;
        }
    return st;
}

void store_close(store *st) {
    if (!st) return;
    if (st->kept.n > 0)
        fprintf(stderr, "aegisd: store: %zu writes not saved at exit (%s)\n",
                st->kept.n, st->why);
    store_journal_clear(&st->tx);
    store_journal_clear(&st->kept);
    free(st->tx.texts);
    free(st->kept.texts);
    for (int i = 0; i < S_COUNT; i++) sqlite3_finalize(st->st[i]);
    sqlite3_close(st->db);
    free(st);
}

void store_begin(store *st) {
    st->marks[st->depth < STORE_MAX_DEPTH ? st->depth : STORE_MAX_DEPTH - 1] =
        st->tx.n;
    if (st->depth++ == 0 && !st->failing) store_exec(st, S_BEGIN, 0);
}

unsigned long store_commits(const store *st) { return st->commits; }

const char *store_path(const store *st) { return st->path; }

bool store_in_transaction(const store *st) { return st->depth > 0; }

/* Commits the open transaction: 0, or -1 rolled back. */
static int store_commit_tx(store *st) {
    if (!st->failing && store_exec(st, S_COMMIT, 0) == 0) {
        st->commits++;
        store_journal_clear(&st->tx);
        return 0;
    }
    if (!sqlite3_get_autocommit(st->db)) store_exec(st, S_ROLLBACK, 0);
    return -1;
}

/* Ends the outer transaction: 0 when it committed; else -1, rolled back,
 * its writes kept (or, with keep false, forgotten). */
static int store_end(store *st, bool keep) {
    if (--st->depth > 0) return 0;
    if (store_commit_tx(st) == 0) return 0;
    if (keep) store_journal_move(&st->kept, &st->tx);
    else store_journal_clear(&st->tx);
    return -1;
}

/* store_commit_now() of a pair inside another: commits every write of the
 * outer transaction so far and opens it again. When that fails, the
 * writes before this pair are kept, as the outer pair's commit would keep
 * them, and this pair's forgotten. */
static int store_sync(store *st) {
    size_t mark = st->marks[st->depth < STORE_MAX_DEPTH ? st->depth
                                                        : STORE_MAX_DEPTH - 1];
    if (store_commit_tx(st) == 0) {
        if (!st->failing) store_exec(st, S_BEGIN, 0);
        return 0;
    }
    store_journal tail = {.texts = st->tx.texts + mark, .n = st->tx.n - mark};
    st->tx.n = mark;
    store_journal_move(&st->kept, &st->tx);
    store_journal_clear(&tail);
    if (!st->failing) store_exec(st, S_BEGIN, 0); /* the rest of the outer */
    return -1;
}

int store_commit(store *st) { return store_end(st, true); }

int store_commit_now(store *st) {
    if (st->depth > 1) {
        st->depth--;
        return store_sync(st);
    }
    return store_end(st, false);
}

/* Runs one kept text: 0, or -1 on a disk error (a statement's own error
 * is logged and the text dropped: it would fail at every retry). */
static int store_replay(store *st, const char *text) {
    int rc = sqlite3_exec(st->db, text, NULL, NULL, NULL);
    if (rc == SQLITE_OK) return 0;
    if (store_io_error(rc)) return -1;
    fprintf(stderr, "aegisd: store: dropped %s: %s\n", text,
            sqlite3_errmsg(st->db));
    return 0;
}

int store_retry(store *st, double now) {
    if (!st->failing) return 0;
    if (st->depth > 0) return -1; /* it makes its own transaction */
    bool ok = sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) ==
              SQLITE_OK;
    for (size_t i = 0; ok && i < st->kept.n; i++)
        ok = store_replay(st, st->kept.texts[i]) == 0;
    sqlite3_stmt *s = st->st[S_PROBE];
    sqlite3_bind_double(s, 1, now);
    ok = ok && sqlite3_step(s) == SQLITE_DONE;
    sqlite3_reset(s);
    ok = ok && sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
    if (!ok) {
        if (!sqlite3_get_autocommit(st->db))
            sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    st->commits++;
    fprintf(stderr, "aegisd: state saved again in %s (%zu writes kept while "
            "it could not be written)\n", st->path, st->kept.n);
    store_journal_clear(&st->kept);
    st->failing = false;
    return 0;
}

/* A vector of strings as JSON array text (malloc'd). */
static char *store_strings_json(const char *const *v, size_t n) {
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(arr, json_string(v[i]));
    char *text = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    return text;
}

/* A job's dependencies as JSON text [{id, kind}] (malloc'd; NULL for
 * none): an index into the submit becomes the id it was given, the submit's
 * ids being consecutive from first_id. */
static char *store_deps_json(const proto_job *j, int64_t first_id) {
    if (j->nafter == 0) return NULL;
    json_t *arr = json_array();
    for (size_t k = 0; k < j->nafter; k++) {
        const proto_dep *dep = &j->after[k];
        json_array_append_new(arr, json_pack("{s:I, s:s}", "id",
            (json_int_t)(dep->id > 0 ? dep->id : first_id + dep->index),
            "kind", proto_dep_kind_name(dep->kind)));
    }
    char *text = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    return text;
}

static int store_insert_jobs(store *st, const store_owner *owner,
                             const proto_request *req, double now,
                             int64_t env_id, int64_t *first_id) {
    sqlite3_stmt *s = st->st[S_JOB];
    *first_id = 0;
    for (size_t i = 0; i < req->njobs; i++) {
        const proto_job *j = &req->jobs[i];
        char *cmd = store_strings_json(j->argv, j->argc);
        if (!cmd) return -1;
        sqlite3_bind_int64(s, 1, owner->uid);
        sqlite3_bind_int64(s, 2, owner->gid);
        sqlite3_bind_text(s, 3, owner->user, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 4, j->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 5, cmd, -1, free);
        sqlite3_bind_int64(s, 6, env_id);
        sqlite3_bind_int(s, 7, j->gpus);
        if (j->mem_mib >= 0) sqlite3_bind_double(s, 8, j->mem_mib);
        sqlite3_bind_double(s, 9, now);
        sqlite3_bind_text(s, 10, j->feed, -1, SQLITE_STATIC);
        sqlite3_bind_int(s, 11, j->mps_threads_pct);
        /* a job of a submit waits only for earlier ones: first_id is set */
        char *deps = store_deps_json(j, *first_id);
        if (deps) sqlite3_bind_text(s, 12, deps, -1, free);
        char *meta = j->meta ? json_dumps(j->meta, JSON_COMPACT) : NULL;
        if (meta) sqlite3_bind_text(s, 13, meta, -1, free);
        if (j->time_limit_s > 0) sqlite3_bind_double(s, 14, j->time_limit_s);
        sqlite3_bind_int(s, 15, j->nice);
        if (j->notify) sqlite3_bind_text(s, 16, j->notify, -1, SQLITE_STATIC);
        sqlite3_bind_int(s, 17, j->feed_producer);
        sqlite3_bind_text(s, 18, j->pipeline ? j->pipeline : "", -1,
                          SQLITE_STATIC);
        if (j->cpus > 0) sqlite3_bind_int(s, 19, j->cpus);
        if (j->host_mem_mib > 0) sqlite3_bind_double(s, 20, j->host_mem_mib);
        if (j->stdout_path)
            sqlite3_bind_text(s, 21, j->stdout_path, -1, SQLITE_STATIC);
        if (j->stderr_path)
            sqlite3_bind_text(s, 22, j->stderr_path, -1, SQLITE_STATIC);
        if ((j->nafter > 0 && !deps) || (j->meta && !meta)) {
            sqlite3_reset(s);
            sqlite3_clear_bindings(s);
            return -1; /* out of memory */
        }
        if (store_exec(st, S_JOB, 0) != 0) return -1;
        if (i == 0) *first_id = sqlite3_last_insert_rowid(st->db);
    }
    return 0;
}

static int store_lease_set(store *st, int64_t id, const store_lease *lease) {
    sqlite3_stmt *s = st->st[S_LEASE_SET];
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_int64(s, 2, lease->slurm_job);
    sqlite3_bind_int(s, 3, lease->restart);
    sqlite3_bind_text(s, 4, lease->mode, -1, SQLITE_STATIC);
    return store_exec(st, S_LEASE_SET, id);
}

/* A submit's jobs, and for a lease (not NULL) its Slurm fields on the
 * one job, in one committed transaction. */
static int store_submit_tx(store *st, const store_owner *owner,
                           const proto_request *req, const store_lease *lease,
                           double now, int64_t *first_id, char *err,
                           size_t errlen) {
    if (st->failing) {
        snprintf(err, errlen, "store: submit not saved: %s", st->why);
        return -1;
    }
    if (st->depth > 0) { /* its own commit answers the client */
        snprintf(err, errlen, "store: submit inside a transaction");
        return -1;
    }
    if (store_exec(st, S_BEGIN, 0) != 0) {
        snprintf(err, errlen, "store: cannot begin: %s", store_errmsg(st));
        return -1;
    }
    char *env = store_strings_json(req->env, req->nenv);
    sqlite3_stmt *s = st->st[S_ENV];
    sqlite3_bind_text(s, 1, req->cwd, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, env, -1, free);
    if (req->umask >= 0) sqlite3_bind_int(s, 3, req->umask);
    if (!env || store_exec(st, S_ENV, 0) != 0 ||
        store_insert_jobs(st, owner, req, now, sqlite3_last_insert_rowid(st->db),
                          first_id) != 0 ||
        (lease && store_lease_set(st, *first_id, lease) != 0) ||
        store_exec(st, S_COMMIT, 0) != 0) {
        snprintf(err, errlen, "store: submit not saved: %s", store_errmsg(st));
        if (!sqlite3_get_autocommit(st->db)) store_exec(st, S_ROLLBACK, 0);
        return -1;
    }
    st->commits++;
    return 0;
}

int store_submit(store *st, const store_owner *owner,
                 const proto_request *req, double now, int64_t *first_id,
                 char *err, size_t errlen) {
    return store_submit_tx(st, owner, req, NULL, now, first_id, err, errlen);
}

int store_lease_submit(store *st, const store_owner *owner,
                       const proto_request *req, const store_lease *lease,
                       double now, int64_t *id, char *err, size_t errlen) {
    return store_submit_tx(st, owner, req, lease, now, id, err, errlen);
}

void store_lease_pids(store *st, int64_t id, const char *pids) {
    sqlite3_stmt *s = st->st[S_LEASE_PIDS];
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_text(s, 2, pids, -1, SQLITE_TRANSIENT);
    store_write(st, S_LEASE_PIDS, id);
}

void store_lease_env(store *st, int64_t id, const char *env) {
    sqlite3_stmt *s = st->st[S_LEASE_ENV];
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_text(s, 2, env, -1, SQLITE_TRANSIENT);
    store_write(st, S_LEASE_ENV, id);
}

void store_ladder_set(store *st, uint32_t slurm_job, int attempt,
                      double floor_mib, bool alone) {
    sqlite3_stmt *s = st->st[S_LADDER_SET];
    sqlite3_bind_int64(s, 1, slurm_job);
    sqlite3_bind_int(s, 2, attempt);
    sqlite3_bind_double(s, 3, floor_mib);
    sqlite3_bind_int(s, 4, alone);
    store_write(st, S_LADDER_SET, 0);
}

bool store_ladder_get(store *st, uint32_t slurm_job, int *attempt,
                      double *floor_mib, bool *alone) {
    sqlite3_stmt *s = st->st[S_LADDER_GET];
    sqlite3_bind_int64(s, 1, slurm_job);
    bool found = sqlite3_step(s) == SQLITE_ROW;
    if (found) {
        *attempt = sqlite3_column_int(s, 0);
        *floor_mib = sqlite3_column_double(s, 1);
        *alone = sqlite3_column_int(s, 2) != 0;
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return found;
}

void store_attempt_start(store *st, int64_t id, const store_attempt *a,
                         double now) {
    sqlite3_stmt *s = st->st[S_ATT_START];
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_int(s, 2, a->n);
    sqlite3_bind_text(s, 3, a->gpus, -1, SQLITE_STATIC);
    sqlite3_bind_double(s, 4, a->floor_mib);
    sqlite3_bind_int(s, 5, a->exclusive);
    if (a->shim_pid > 0) { /* else its start is only intended yet */
        sqlite3_bind_int64(s, 6, a->shim_pid);
        sqlite3_bind_int64(s, 7, (sqlite3_int64)a->shim_start);
        sqlite3_bind_int64(s, 8, a->job_pid);
    }
    sqlite3_bind_double(s, 9, now);
    sqlite3_bind_int64(s, 10, a->err_offset);
    store_write(st, S_ATT_START, id);
}

void store_attempt_end(store *st, int64_t id, int n, const char *how,
                       int status, double now) {
    sqlite3_stmt *s = st->st[S_ATT_END];
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_int(s, 2, n);
    sqlite3_bind_double(s, 3, now);
    sqlite3_bind_text(s, 4, how, -1, SQLITE_STATIC);
    if (status >= 0) sqlite3_bind_int(s, 5, status);
    store_write(st, S_ATT_END, id);
}

void store_attempt_pids(store *st, int64_t id, int n, pid_t shim_pid,
                        unsigned long long shim_start, pid_t job_pid,
                        long long err_offset) {
    sqlite3_stmt *s = st->st[S_ATT_PIDS];
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_int(s, 2, n);
    sqlite3_bind_int64(s, 3, shim_pid);
    sqlite3_bind_int64(s, 4, (sqlite3_int64)shim_start);
    sqlite3_bind_int64(s, 5, job_pid);
    sqlite3_bind_int64(s, 6, err_offset);
    store_write(st, S_ATT_PIDS, id);
}

void store_attempt_drop(store *st, int64_t id, int n) {
    sqlite3_stmt *s = st->st[S_ATT_DROP];
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_int(s, 2, n);
    store_write(st, S_ATT_DROP, id);
}

void store_jobs_cancel(store *st, const int64_t *ids, size_t n, double now) {
    if (n == 0) return;
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++)
        json_array_append_new(arr, json_integer(ids[i]));
    char *text = arr ? json_dumps(arr, JSON_COMPACT) : NULL;
    json_decref(arr);
    if (!text) {
        fprintf(stderr, "aegisd: store: job %lld: cancel: out of memory\n",
                (long long)ids[0]);
        return;
    }
    sqlite3_stmt *s = st->st[S_CANCEL];
    sqlite3_bind_text(s, 1, text, -1, free);
    sqlite3_bind_double(s, 2, now);
    store_write(st, S_CANCEL, ids[0]);
}

void store_job_retry(store *st, int64_t id, double floor_mib, bool alone) {
    sqlite3_stmt *s = st->st[S_RETRY];
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_double(s, 2, floor_mib);
    sqlite3_bind_int(s, 3, alone);
    store_write(st, S_RETRY, id);
}

void store_attempt_seen(store *st, int64_t id, int n, double now) {
    sqlite3_stmt *s = st->st[S_SEEN];
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_int(s, 2, n);
    sqlite3_bind_double(s, 3, now);
    store_write(st, S_SEEN, id);
}

void store_job_state(store *st, int64_t id, const char *state,
                     const char *reason, double now) {
    sqlite3_stmt *s = st->st[S_STATE];
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_text(s, 2, state, -1, SQLITE_STATIC);
    if (reason) sqlite3_bind_text(s, 3, reason, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(s, 4, now);
    store_write(st, S_STATE, id);
}

void store_job_held(store *st, int64_t id, bool held) {
    sqlite3_stmt *s = st->st[S_HELD];
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_int(s, 2, held);
    store_write(st, S_HELD, id);
}

int64_t store_clear(store *st, uid_t uid) {
    sqlite3_stmt *s = st->st[S_CLEAR];
    sqlite3_bind_int64(s, 1, uid);
    store_write(st, S_CLEAR, 0);
    return st->failing ? -1 : sqlite3_changes(st->db);
}

static json_t *store_collect(sqlite3_stmt *s);

json_t *store_prune_ids(store *st, double before, int limit) {
    sqlite3_bind_double(st->st[S_PRUNE_IDS], 1, before);
    sqlite3_bind_int(st->st[S_PRUNE_IDS], 2, limit);
    json_t *rows = store_collect(st->st[S_PRUNE_IDS]);
    json_t *ids = json_array();
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
        json_array_append(ids, json_object_get(row, "id"));
    json_decref(rows);
    return ids;
}

void store_prune(store *st, const char *ids) {
    static const int deletes[] = {S_PRUNE_ATT, S_PRUNE_EV, S_PRUNE_HIST,
                                  S_PRUNE_JOBS};
    store_begin(st);
    for (size_t i = 0; i < sizeof(deletes) / sizeof(*deletes); i++) {
        sqlite3_bind_text(st->st[deletes[i]], 1, ids, -1, SQLITE_TRANSIENT);
        store_write(st, deletes[i], 0);
    }
    store_write(st, S_PRUNE_ENVS, 0);
    store_commit(st);
}

void store_job_update(store *st, int64_t id, double time_limit_s, int nice,
                      double mem_mib, const char *name) {
    sqlite3_stmt *s = st->st[S_UPDATE];
    sqlite3_bind_int64(s, 1, id);
    if (time_limit_s > 0) sqlite3_bind_double(s, 2, time_limit_s);
    sqlite3_bind_int(s, 3, nice);
    if (mem_mib >= 0) sqlite3_bind_double(s, 4, mem_mib);
    sqlite3_bind_text(s, 5, name, -1, SQLITE_STATIC);
    store_write(st, S_UPDATE, id);
}

void store_job_feed(store *st, int64_t id, int restarts, bool stop) {
    sqlite3_stmt *s = st->st[S_FEED];
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_int(s, 2, restarts);
    sqlite3_bind_int(s, 3, stop);
    store_write(st, S_FEED, id);
}

void store_job_energy(store *st, int64_t id, const store_energy *e) {
    sqlite3_stmt *s = st->st[S_ENERGY];
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_double(s, 2, e->energy_j);
    sqlite3_bind_double(s, 3, e->co2_g);
    sqlite3_bind_double(s, 4, e->pue_j);
    store_write(st, S_ENERGY, id);
}

void store_gpu_energy_set(store *st, int gpu, const store_gpu_energy *r) {
    sqlite3_stmt *s = st->st[S_GPU_ENERGY_SET];
    sqlite3_bind_int(s, 1, gpu);
    sqlite3_bind_text(s, 2, r->uuid, -1, SQLITE_STATIC);
    sqlite3_bind_double(s, 3, r->energy_j);
    sqlite3_bind_double(s, 4, r->t);
    if (r->power_w >= 0) sqlite3_bind_double(s, 5, r->power_w);
    sqlite3_bind_text(s, 6, r->shares ? r->shares : "{}", -1, SQLITE_STATIC);
    store_write(st, S_GPU_ENERGY_SET, 0);
}

json_t *store_gpu_energy_get(store *st, int gpu) {
    sqlite3_bind_int(st->st[S_GPU_ENERGY_GET], 1, gpu);
    json_t *rows = store_collect(st->st[S_GPU_ENERGY_GET]);
    json_t *row = json_incref(json_array_get(rows, 0));
    json_decref(rows);
    return row;
}

void store_event(store *st, int64_t id, double now, const char *fmt, ...) {
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    sqlite3_stmt *s = st->st[S_EVENT];
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_double(s, 2, now);
    sqlite3_bind_text(s, 3, text, -1, SQLITE_TRANSIENT);
    store_write(st, S_EVENT, id);
}

/* The columns holding JSON text, returned as JSON values. */
static bool store_json_column(const char *name) {
    static const char *const json_columns[] = {"cmd", "env", "deps", "meta",
                                               "slurm_env", "shares"};
    for (size_t i = 0; i < sizeof(json_columns) / sizeof(*json_columns); i++)
        if (strcmp(name, json_columns[i]) == 0) return true;
    return false;
}

/* The current row of s as an object keyed by column name; the columns
 * holding JSON text become JSON values. */
static json_t *store_row(sqlite3_stmt *s) {
    json_t *obj = json_object();
    for (int c = 0; c < sqlite3_column_count(s); c++) {
        const char *name = sqlite3_column_name(s, c);
        json_t *v;
        switch (sqlite3_column_type(s, c)) {
        case SQLITE_INTEGER: v = json_integer(sqlite3_column_int64(s, c)); break;
        case SQLITE_FLOAT: v = json_real(sqlite3_column_double(s, c)); break;
        case SQLITE_NULL: v = json_null(); break;
        default: {
            const char *text = (const char *)sqlite3_column_text(s, c);
            v = store_json_column(name) ? json_loads(text, 0, NULL)
                                        : json_string(text);
            if (!v) v = json_null();
        }
        }
        json_object_set_new(obj, name, v);
    }
    return obj;
}

/* Every row of s, already bound, as an array; resets s. */
static json_t *store_collect(sqlite3_stmt *s) {
    json_t *arr = json_array();
    while (sqlite3_step(s) == SQLITE_ROW) json_array_append_new(arr, store_row(s));
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return arr;
}

/* Every row of statement `which` (bound to id when id > 0) as an array. */
static json_t *store_rows(store *st, int which, int64_t id) {
    if (id > 0) sqlite3_bind_int64(st->st[which], 1, id);
    return store_collect(st->st[which]);
}

json_t *store_job(store *st, int64_t id, bool full) {
    json_t *rows = store_rows(st, full ? S_GET_FULL : S_GET, id);
    json_t *job = json_incref(json_array_get(rows, 0));
    json_decref(rows);
    if (!job) return NULL;
    json_object_set_new(job, "attempt_list", store_rows(st, S_ATTEMPTS, id));
    json_object_set_new(job, "events", store_rows(st, S_EVENTS, id));
    return job;
}

bool store_job_user(store *st, int64_t id, char *user, size_t len) {
    sqlite3_stmt *s = st->st[S_USER];
    sqlite3_bind_int64(s, 1, id);
    const char *text = sqlite3_step(s) == SQLITE_ROW
                           ? (const char *)sqlite3_column_text(s, 0)
                           : NULL;
    if (text) snprintf(user, len, "%s", text);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return text != NULL;
}

/* Whether text is a uid as SQL's CAST(uid AS TEXT) writes one: decimal
 * digits, no sign, no leading zero but in "0"; its value in *uid. */
static bool store_uid_text(const char *text, int64_t *uid) {
    size_t n = strspn(text, "0123456789");
    if (n == 0 || n > 10 || text[n] || (text[0] == '0' && n > 1))
        return false;
    *uid = strtoll(text, NULL, 10);
    return true;
}

/* q's statement among `plain` and its -u variant (the next one), with q's
 * user, states and cleared (STORE_LS_FILTER, STORE_LS_USER) bound. */
static sqlite3_stmt *store_filtered(store *st, int plain,
                                    const store_query *q) {
    sqlite3_stmt *s = st->st[plain + (q->user != NULL)];
    int64_t uid;
    if (q->user) sqlite3_bind_text(s, 2, q->user, -1, SQLITE_STATIC);
    if (q->user && store_uid_text(q->user, &uid))
        sqlite3_bind_int64(s, 5, uid);
    if (q->states) sqlite3_bind_text(s, 3, q->states, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 4, q->cleared);
    return s;
}

json_t *store_list(store *st, const store_query *q) {
    sqlite3_stmt *s =
        store_filtered(st, q->all ? S_LIST_ALL : S_LIST_ACTIVE, q);
    sqlite3_bind_int64(s, 1, q->limit > 0 ? q->limit : -1); /* -1: none */
    return store_collect(s);
}

int64_t store_count(store *st, const store_query *q) {
    sqlite3_stmt *s =
        store_filtered(st, q->all ? S_COUNT_ALL : S_COUNT_ACTIVE, q);
    int64_t n = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return n;
}

/* Binds a report's period and user (STORE_REPORT_FILTER) to s. */
static void store_bind_report(sqlite3_stmt *s, const store_report_query *q) {
    sqlite3_bind_double(s, 1, q->since);
    if (q->until > 0) sqlite3_bind_double(s, 2, q->until);
    if (q->user) sqlite3_bind_text(s, 3, q->user, -1, SQLITE_STATIC);
}

json_t *store_report(store *st, const store_report_query *q) {
    store_bind_report(st->st[S_REPORT_JOBS], q);
    json_t *jobs = store_collect(st->st[S_REPORT_JOBS]);
    store_bind_report(st->st[S_REPORT_ATTEMPTS], q);
    json_t *atts = store_collect(st->st[S_REPORT_ATTEMPTS]);
    /* both in job id order: one merge pass */
    size_t a = 0, i;
    json_t *job;
    json_array_foreach(jobs, i, job) {
        json_int_t id = json_integer_value(json_object_get(job, "id"));
        json_t *list = json_array();
        for (; a < json_array_size(atts); a++) {
            json_t *att = json_array_get(atts, a);
            if (json_integer_value(json_object_get(att, "job_id")) != id) break;
            json_array_append(list, att);
        }
        json_object_set_new(job, "attempt_list", list);
    }
    json_decref(atts);
    return jobs;
}

void store_each_active(store *st, void (*fn)(void *ctx, json_t *job),
                       void *ctx) {
    json_t *jobs = store_list(st, &(store_query){.all = false});
    size_t i;
    json_t *job;
    json_array_foreach(jobs, i, job) {
        json_t *full = store_job(st, json_integer_value(json_object_get(job, "id")),
                                 true);
        json_t *atts = json_object_get(full, "attempt_list");
        size_t n = json_array_size(atts);
        if (n > 0)
            json_object_set(full, "attempt", json_array_get(atts, n - 1));
        fn(ctx, full);
        json_decref(full);
    }
    json_decref(jobs);
}

void store_mig_add(store *st, const store_mig *m) {
    sqlite3_stmt *s = st->st[S_MIG_ADD];
    sqlite3_bind_int(s, 1, m->gpu);
    sqlite3_bind_int64(s, 2, m->gi);
    sqlite3_bind_int64(s, 3, m->ci);
    sqlite3_bind_int64(s, 4, m->job_id);
    sqlite3_bind_int(s, 5, m->n);
    sqlite3_bind_text(s, 6, m->profile, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 7, m->start);
    sqlite3_bind_text(s, 8, m->uuid, -1, SQLITE_STATIC);
    store_write(st, S_MIG_ADD, m->job_id);
}

void store_mig_remove(store *st, int gpu, unsigned int gi) {
    sqlite3_stmt *s = st->st[S_MIG_DEL];
    sqlite3_bind_int(s, 1, gpu);
    sqlite3_bind_int64(s, 2, gi);
    store_write(st, S_MIG_DEL, 0);
}

int store_mig_list(store *st, store_mig *out, int max) {
    sqlite3_stmt *s = st->st[S_MIG_ALL];
    int n = 0;
    while (n < max && sqlite3_step(s) == SQLITE_ROW) {
        store_mig *m = &out[n++];
        m->gpu = sqlite3_column_int(s, 0);
        m->gi = (unsigned int)sqlite3_column_int64(s, 1);
        m->ci = (unsigned int)sqlite3_column_int64(s, 2);
        m->job_id = sqlite3_column_int64(s, 3);
        m->n = sqlite3_column_int(s, 4);
        snprintf(m->profile, sizeof(m->profile), "%s",
                 (const char *)sqlite3_column_text(s, 5));
        m->start = sqlite3_column_int(s, 6);
        snprintf(m->uuid, sizeof(m->uuid), "%s",
                 (const char *)sqlite3_column_text(s, 7));
    }
    sqlite3_reset(s);
    return n;
}

void store_drain_set(store *st, const char *uuid, const char *reason,
                     const char *user, double now) {
    sqlite3_stmt *s = st->st[S_DRAIN_SET];
    sqlite3_bind_text(s, 1, uuid, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, reason, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, user, -1, SQLITE_STATIC);
    sqlite3_bind_double(s, 4, now);
    store_write(st, S_DRAIN_SET, 0);
}

void store_drain_clear(store *st, const char *uuid) {
    sqlite3_stmt *s = st->st[S_DRAIN_DEL];
    sqlite3_bind_text(s, 1, uuid, -1, SQLITE_STATIC);
    store_write(st, S_DRAIN_DEL, 0);
}

json_t *store_drain(store *st, const char *uuid) {
    sqlite3_bind_text(st->st[S_DRAIN_GET], 1, uuid, -1, SQLITE_STATIC);
    json_t *rows = store_collect(st->st[S_DRAIN_GET]);
    json_t *row = json_incref(json_array_get(rows, 0));
    json_decref(rows);
    return row;
}

/* A figure of a sample, NULL when unknown (< 0). */
static void store_bind_known(sqlite3_stmt *s, int col, double v) {
    if (v >= 0) sqlite3_bind_double(s, col, v);
}

void store_history_add(store *st, int64_t id, const store_sample *sample) {
    sqlite3_stmt *s = st->st[S_HIST_ADD];
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_double(s, 2, sample->t);
    store_bind_known(s, 3, sample->mem_mib);
    store_bind_known(s, 4, sample->gpu_used_mib);
    store_bind_known(s, 5, sample->gpu_total_mib);
    store_bind_known(s, 6, sample->sm_pct);
    store_write(st, S_HIST_ADD, id);
}

void store_history_thin(store *st, int64_t id, int step) {
    sqlite3_stmt *s = st->st[S_HIST_THIN];
    sqlite3_bind_int64(s, 1, id);
    store_write(st, S_HIST_THIN, id);
    s = st->st[S_HIST_STEP];
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_int(s, 2, step);
    store_write(st, S_HIST_STEP, id);
}

json_t *store_history(store *st, int64_t id) {
    sqlite3_stmt *s = st->st[S_HIST_GET];
    sqlite3_bind_int64(s, 1, id);
    json_t *rows = json_array();
    while (sqlite3_step(s) == SQLITE_ROW) {
        json_t *row = json_array();
        for (int c = 0; c < 5; c++) {
            bool known = sqlite3_column_type(s, c) != SQLITE_NULL;
            json_array_append_new(row, known ? json_real(sqlite3_column_double(
                                                   s, c))
                                             : json_null());
        }
        json_array_append_new(rows, row);
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rows;
}

void store_history_state(store *st, int64_t id, int *count, int *step) {
    sqlite3_stmt *s = st->st[S_HIST_STATE];
    sqlite3_bind_int64(s, 1, id);
    *count = 0;
    *step = 1;
    if (sqlite3_step(s) == SQLITE_ROW) {
        *count = sqlite3_column_int(s, 0);
        *step = sqlite3_column_int(s, 1) > 0 ? sqlite3_column_int(s, 1) : 1;
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
}
