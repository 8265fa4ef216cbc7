/* exec_log.c -- a job's two logs in aegisd's log folder, ID.out and
 * ID.err, as aegisd names, reads and removes them (exec.h). The watcher
 * writes them; aegisd never follows a link there nor waits on a lease. */
#include "exec.h"
#include "exec_priv.h"
#include "job_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

/* A job's log in the log folder: "ID.out" or "ID.err". */
void exec_log_name(char *out, size_t outlen, int64_t id,
                   bool err_stream) {
    snprintf(out, outlen, "%lld.%s", (long long)id, err_stream ? "err" : "out");
}

const char *exec_log_error(int err) {
    if (err == EPERM)
        return "not this job's user's (left from an earlier database?)";
    return job_file_error(err);
}

/* Opens a job's log to read it (job_file_open): O_NONBLOCK makes a lease
 * fail the open with EWOULDBLOCK where it would otherwise wait out the
 * lease's break (45 s by default), with all of aegisd. Only a regular
 * file of owner is opened (the job's user's, or a non-root aegisd's). */
int exec_log_open(int log_dirfd, int64_t id, bool err_stream,
                  uid_t owner) {
    char name[64];
    exec_log_name(name, sizeof(name), id, err_stream);
    return job_file_open(log_dirfd, name, owner, NULL);
}

void exec_log_remove(int log_dirfd, int64_t id) {
    for (int err_stream = 0; err_stream < 2; err_stream++) {
        char name[64];
        exec_log_name(name, sizeof(name), id, err_stream);
        unlinkat(log_dirfd, name, 0);
    }
}

ssize_t exec_log_read(int log_dirfd, int64_t id, bool err_stream, uid_t owner,
                      long long *offset, char *buf, size_t len) {
    int fd = exec_log_open(log_dirfd, id, err_stream, owner);
    if (fd < 0) return errno == ENOENT ? 0 : -1;
    ssize_t got = -1;
    off_t kept;
    if ((kept = lseek(fd, (off_t)*offset, SEEK_DATA)) >= 0) {
        *offset = kept; /* past the hole of what the cap dropped */
        got = pread(fd, buf, len, kept);
    } else if (errno == ENXIO) { /* at the end */
        got = 0;
    }
    int saved = errno;
    close(fd);
    errno = saved;
    return got;
}
