/* job_file.h -- the one safe reader of a file a job's user controls: the
 * stdout or stderr a job writes, whose tail aegis reads to tell an OOM
 * from another failure.
 *
 * Whoever reads such a file as root must not be made to open another
 * file, nor to wait, by its user:
 *   - no symbolic link is followed, in any part of the path where the
 *     kernel has openat2 (RESOLVE_NO_SYMLINKS, Linux 5.6), else in its
 *     last part (O_NOFOLLOW);
 *   - opening never waits (O_NONBLOCK: a FIFO with no writer, a lease)
 *     and never makes a terminal the reader's (O_NOCTTY);
 *   - what was opened is read only when it is a regular file, owned by
 *     the job's user, and, where the caller knows them, with the device
 *     and inode the job's file had when the job started.
 * Where the path is the user's to choose (a Slurm task's output),
 * job_file_tail_as also opens and reads it as the user, in a child
 * process that holds only the user's uid, gid and groups: root's rights
 * never reach the file. aegisd reads its own logs, in its own closed
 * folder, with job_file_open in the daemon itself; the dataset watcher
 * opens a data folder's files with job_file_open_stat (its owner's
 * files only, src/pipeline/watch_file.c).
 *
 * Refusals set errno: ELOOP (a link), EINVAL (not a regular file), EPERM
 * (another owner), ESTALE (not the file the job started with), ETIMEDOUT
 * (the read did not end in time), EACCES (the user may not read it, or
 * the reader could not become the user); job_file_error puts them in
 * words.
 */
#ifndef AEGIS_JOB_FILE_H
#define AEGIS_JOB_FILE_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* The file a job started with (fstat of its descriptor then). */
typedef struct job_file_id {
    dev_t dev;
    ino_t ino;
} job_file_id;

/* The job's user, as job_file_tail_as reads as them. */
typedef struct job_file_user {
    uid_t uid;
    gid_t gid;
    const gid_t *groups; /* supplementary groups, ngroups of them */
    size_t ngroups;
} job_file_user;

/* Opens name (relative to dirfd, or absolute) to read, as said above: it
 * must be a regular file of owner and, when id is not NULL, that file.
 * Returns the descriptor (close-on-exec), or -1 with errno. */
int job_file_open(int dirfd, const char *name, uid_t owner,
                  const job_file_id *id);

/* job_file_open, and in *st what fstat said of the file opened: of the
 * one returned, or of the one refused for its type, owner or identity
 * (EINVAL, EPERM, ESTALE), so that a caller can say whose it was. */
int job_file_open_stat(int dirfd, const char *name, uid_t owner,
                       const job_file_id *id, struct stat *st);

/* Reads the last bytes of fd's file into buf: at most len, none before
 * offset from. Returns how many, or -1 with errno. */
ssize_t job_file_tail(int fd, long long from, char *buf, size_t len);

/* The last at most len bytes of the file at path (absolute), opened and
 * read as user who by a child process (the caller must be root), and
 * only when it is a regular file of who->uid with identity id. Returns
 * how many bytes, or -1 with errno (the child's). Takes at most a few
 * seconds, whatever the file: a read still running then is killed. */
ssize_t job_file_tail_as(const job_file_user *who, const char *path,
                         const job_file_id *id, char *buf, size_t len);

/* A failed job_file_* call's errno in words: the refusals above, a lease
 * (EWOULDBLOCK), else strerror. */
const char *job_file_error(int err);

#endif
