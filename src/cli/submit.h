/* submit.h -- what `aegis submit` builds its request from, shared by its
 * option parsing (submit_cmd.c), the values of its options and the jobs'
 * JSON (submit_args.c), and its YAML job specs (spec.c). Nothing here
 * talks to aegisd, so the unit tests drive it alone.
 *
 * A job is the JSON object of the submit request (src/daemon/proto.h):
 * {cmd, gpus, mem_mib, name, feed, feed_producer, after, mps_threads_pct,
 * meta, time_limit_s, nice, notify}. Until a
 * spec's names are resolved, an "after" entry may be {name, kind, line}.
 */
#ifndef AEGIS_SUBMIT_H
#define AEGIS_SUBMIT_H

#include "request_words.h"

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* The options every job starts from. */
typedef struct submit_defaults {
    long gpus;
    double mem;             /* < 0: none */
    const char *name;
    const char *feed;       /* shared data feed; NULL: none */
    bool feed_producer;     /* the job is that feed's managed producer */
    json_t *after;          /* dependency entries (borrowed); NULL: none */
    long mps_threads;       /* MPS thread percentage; 0: none */
    double time_limit;      /* seconds each attempt may run; 0: none */
    long nice;              /* 0..CORE_NICE_MAX: lower among the queue */
    const char *notify;     /* a shell command run at its end ("": none,
                               not even the config's); NULL: not given */
    long cpus;              /* CPUs of its cgroup; 0: aegisd's default */
    double host_mem;        /* host RAM of its cgroup, MiB; 0: aegisd's
                               default */
    const char *stdout_path; /* -o and -e patterns; NULL: none */
    const char *stderr_path;
} submit_defaults;

/* A job of command cmd (taken) with the defaults. */
json_t *submit_job(json_t *cmd, const submit_defaults *def);
/* The submit request of jobs (taken): this directory, this environment
 * (environ); NULL once the fault is told (it is the input's: exit 2). */
json_t *submit_request(json_t *jobs);
/* Whether path (what it is: "conda's path") can be a word of a request to
 * aegisd, which is JSON: UTF-8 text. When not, why into err, the path
 * shown as text_safe() shows it: "WHAT 'PATH' is not UTF-8 text, and
 * aegisd's requests (JSON) carry only that: REMEDY". */
bool submit_path_ok(const char *what, const char *path, const char *remedy,
                    char *err, size_t errlen);
/* ["/bin/sh", "-c", line]; NULL when line is not UTF-8. */
json_t *submit_shell(const char *line);
/* aegis's estimate (with its safety margin) of the model described in
 * path, MiB, its warnings said on stderr; -1 after saying why (unreadable,
 * or over what a job may ask). */
int submit_model_mem(const char *path, double *mem);
/* A description's warnings (the footing of its estimate) on stderr, as
 * "aegis CMD: NAME: warning: ...", control characters as '?'. */
struct est_desc;
void submit_desc_warnings(const char *cmd, const char *name,
                          const struct est_desc *d);

/* An amount of memory into MiB: a number with an optional unit, m/MiB/MB
 * (the default), g/GiB/GB or t/TiB/TB, any case; binary units (4g is
 * 4096 MiB). -1 when it is not one, or under 1 MiB (PROTO_MIN_MEM_MIB)
 * or over 1 TiB (PROTO_MAX_MEM_MIB), as aegisd takes them. */
int submit_parse_mem(const char *text, double *mib);

/* What submit_parse_mem() takes, for the messages that refuse a value. */
#define SUBMIT_MEM_FORMS "an amount of memory from 1 MiB to 1 TiB: 4g, " \
    "4GiB, 4000m (binary units; a plain number is MiB)"

/* Appends the dependencies in text to deps: comma-separated items, each
 * an ID (afterok), or KIND:ID[:ID...] with KIND afterok, afterany or
 * afternotok (Slurm's forms). Where `names` (a spec file), an item that is
 * not a number is the name of a job of the same file: {name, kind}. -1
 * with a message in err. */
int submit_parse_after(const char *text, bool names, json_t *deps, char *err,
                       size_t errlen);

/* The indices of an array range, "0-99", "2-8:3", "1,4,10-12", as a JSON
 * array in order (at most PROTO_MAX_JOBS of them); NULL with a message. */
json_t *submit_parse_range(const char *text, char *err, size_t errlen);

/* Whether text is empty or white space only: as a command, nothing to
 * run (a shell given it exits 0 having run nothing; a program named ""
 * is none). */
bool submit_blank(const char *text);

/* Whether one command word holds shell syntax (spaces, quotes, operators,
 * variables, globs): a string meant for /bin/sh -c, not a program name. */
bool submit_is_shell(const char *word);

/* The path of program name on $PATH (malloc'd), or NULL. */
char *submit_find_program(const char *name);

/* Checks each job's program as this user (submit_check.c): -1 after
 * saying why one cannot run (a plain command missing from PATH, or not
 * executable by the user), else 0, after warning of a job that runs after
 * others whose program is missing now. Each job is named in w's words. */
int submit_check_programs(json_t *jobs, const request_words *w);

/* Reads a YAML job spec, aegis's own or AEGIS's (version: 1), appending
 * its jobs to jobs: -1 after saying why, naming FILE:LINE and the key.
 * Where typed is not NULL, says in it how the jobs were written: the
 * format's keys (typed->words), and the line each job starts on, appended
 * to typed->lines (an array the caller made). */
int submit_spec(const char *path, const submit_defaults *def, json_t *jobs,
                request_words *typed);

#endif
