/* outfile.c -- a job's -o and -e files (outfile.h). */
#include "outfile.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "..." after the first 64 bytes of a pattern quoted in a message, when
 * it has more. */
static const char *outfile_more(const char *pattern) {
    return strlen(pattern) > 64 ? "..." : "";
}

int outfile_expand(const char *pattern, const outfile_job *job, char *out,
                   size_t len, char *err, size_t errlen) {
    size_t at = 0;
    for (const char *p = pattern; *p; p++) {
        char field[32];
        const char *text = field;
        if (*p != '%') {
            field[0] = *p;
            field[1] = '\0';
        } else {
            switch (*++p) {
            case 'j': snprintf(field, sizeof(field), "%lld", (long long)job->id); break;
            case 'x': text = job->name[0] ? job->name : "job"; break;
            case 'u': text = job->user; break;
            case 'a': text = job->array_index; break;
            case '%': text = "%"; break;
            case '\0': /* no field to name: "%  is not a field" read badly */
                snprintf(err, errlen, "'%.64s%s': ends in a lone %% (%%%% "
                         "for a %%)", pattern, outfile_more(pattern));
                return -1;
            default:
                snprintf(err, errlen, "'%.64s%s': %%%c is not a field (%%j, "
                         "%%x, %%u, %%a, %%%%)", pattern, outfile_more(pattern),
                         *p);
                return -1;
            }
        }
        size_t n = strlen(text);
        if (at + n >= len) {
            snprintf(err, errlen, "'%.64s%s': longer than %zu bytes once "
                     "expanded", pattern, outfile_more(pattern), len - 1);
            return -1;
        }
        memcpy(out + at, text, n);
        at += n;
    }
    out[at] = '\0';
    return 0;
}

const char *outfile_array_index(const char *const *argv) {
    static const char tag[] = "AEGIS_ARRAY_INDEX=";
    if (!argv[0] || strcmp(argv[0], "/usr/bin/env") != 0 || !argv[1] ||
        strncmp(argv[1], tag, sizeof(tag) - 1) != 0)
        return "";
    /* an index is at most 10 digits (aegis submit --array); anything
     * else a user wrote there is no index */
    const char *index = argv[1] + sizeof(tag) - 1;
    size_t digits = strspn(index, "0123456789");
    return digits > 0 && digits <= 10 && !index[digits] ? index : "";
}

/* One stream of the tee: its pipe from the command, its file (-1: none,
 * or full), and where it went before. */
typedef struct outfile_stream {
    int from, file, to;
} outfile_stream;

/* Copies one read of s on; false once its pipe has ended. */
static bool outfile_copy(outfile_stream *s) {
    char buf[65536];
    ssize_t n = read(s->from, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) return true;
    if (n <= 0) return false;
    /* a full file loses what does not fit; aegisd's pipe gets it all */
    if (s->file >= 0 && write(s->file, buf, (size_t)n) != n) s->file = -1;
    for (ssize_t done = 0; done < n;) {
        ssize_t w = write(s->to, buf + done, (size_t)(n - done));
        if (w < 0 && errno != EINTR) return false;
        if (w > 0) done += w;
    }
    return true;
}

/* The tee's life: copies both streams until both end, waits for the
 * command, and exits as it did. */
static void outfile_tee(outfile_stream *st, pid_t command) {
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    struct pollfd p[2];
    int open_streams = 2;
    for (int i = 0; i < 2; i++)
        p[i] = (struct pollfd){.fd = st[i].from, .events = POLLIN};
    while (open_streams > 0) {
        if (poll(p, 2, -1) < 0 && errno != EINTR) break;
        for (int i = 0; i < 2; i++)
            if (p[i].fd >= 0 && p[i].revents && !outfile_copy(&st[i])) {
                p[i].fd = -1;
                open_streams--;
            }
    }
    int status = 0;
    while (waitpid(command, &status, 0) < 0 && errno == EINTR) {}
    if (WIFSIGNALED(status)) {
        signal(WTERMSIG(status), SIG_DFL);
        raise(WTERMSIG(status));
    }
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

/* Opens path to append to ("" or NULL: none, -1 without an error). */
static int outfile_open(const char *path) {
    if (!path || !path[0]) return -1;
    return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY,
                0644);
}

int outfile_start(const char *out_path, const char *err_path) {
    const char *paths[2] = {out_path, err_path};
    if ((!out_path || !out_path[0]) && (!err_path || !err_path[0])) return 0;
    outfile_stream st[2];
    int pipes[2][2];
    for (int i = 0; i < 2; i++) {
        st[i] = (outfile_stream){.from = -1, .file = outfile_open(paths[i]),
                                 .to = i + 1};
        if (paths[i] && paths[i][0] && st[i].file < 0) return -1;
        if (pipe2(pipes[i], O_CLOEXEC) != 0) return -1;
        st[i].from = pipes[i][0];
    }
    pid_t command = fork();
    if (command < 0) return -1;
    if (command == 0) {
        for (int i = 0; i < 2; i++) {
            if (dup2(pipes[i][1], i + 1) < 0) _exit(126);
            close(pipes[i][0]);
            close(pipes[i][1]);
            if (st[i].file >= 0) close(st[i].file);
        }
        return 0;
    }
    for (int i = 0; i < 2; i++) close(pipes[i][1]);
    outfile_tee(st, command);
    return 0; /* not reached: the tee exits */
}
