/* submit_check.c -- a job's program, checked before the job is queued,
 * by `aegis submit` itself: this process is the submitting user's, with
 * their PATH, groups and directory, so the check is the user's own, as
 * the job's exec will be. A plain command that does not exist or that
 * the user may not execute is refused, with why, rather than queued to
 * fail with exit 127 once it has a GPU. A shell string (its shell finds
 * the program), a conda environment's command (conda run finds it) and
 * a job that runs after others (which may build it) are not refused: a
 * program missing now only earns them a warning, where it can be told.
 */
#include "submit.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Why the file at path cannot be run by this user: -1 with why, or 0. */
static int file_problem(const char *path, char *why, size_t len) {
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(why, len, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, len, "%s: not a regular file", path);
        return -1;
    }
    if (access(path, X_OK) != 0) {
        snprintf(why, len, "%s: not executable by you (mode %04o)", path,
                 (unsigned)(st.st_mode & 07777));
        return -1;
    }
    return 0;
}

/* Why program (a name without '/') cannot be found on PATH and run: the
 * first entry that has it decides, as for execvp. */
static int path_problem(const char *program, char *why, size_t len) {
    const char *path = getenv("PATH");
    for (const char *dir = path; dir && *dir;) {
        size_t n = strcspn(dir, ":");
        char full[4096];
        snprintf(full, sizeof(full), "%.*s/%s", n ? (int)n : 1,
                 n ? dir : ".", program);
        if (access(full, F_OK) == 0) return file_problem(full, why, len);
        dir += n + (dir[n] == ':');
    }
    snprintf(why, len, "%s: not found on your PATH (%s)", program,
             path ? path : "unset");
    return -1;
}

/* Why a job's program cannot run now: -1 with why, or 0. */
static int program_problem(const char *program, char *why, size_t len) {
    return strchr(program, '/') ? file_problem(program, why, len)
                                : path_problem(program, why, len);
}

/* Whether the job's command is a shell string's (submit_shell()) or a
 * conda environment's (conda run): its program is found later. */
static bool found_later(json_t *cmd) {
    const char *first = json_string_value(json_array_get(cmd, 0));
    const char *second = json_string_value(json_array_get(cmd, 1));
    const char *base = strrchr(first, '/') ? strrchr(first, '/') + 1 : first;
    if (!strcmp(first, "/bin/sh") && second && !strcmp(second, "-c"))
        return true;
    return !strcmp(base, "conda") && second && !strcmp(second, "run");
}

int submit_check_programs(json_t *jobs, const request_words *w) {
    size_t i;
    json_t *job;
    json_array_foreach(jobs, i, job) {
        json_t *cmd = json_object_get(job, "cmd");
        const char *program = json_string_value(json_array_get(cmd, 0));
        char why[4400], which[4200];
        if (!program || found_later(cmd) ||
            program_problem(program, why, sizeof(why)) == 0)
            continue;
        request_words_job(w, (long)i, which, sizeof(which));
        if (json_array_size(json_object_get(job, "after")) > 0) {
            fprintf(stderr, "aegis submit: warning: %s%s; it runs after other "
                    "jobs, which may make it\n", which, why);
            continue;
        }
        fprintf(stderr, "aegis submit: %s%s: not queued\n", which, why);
        return -1;
    }
    return 0;
}
