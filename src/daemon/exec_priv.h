/* exec_priv.h -- what the executor's files (exec.c, exec_log.c,
 * exec_status.c, exec_proc.c, exec_classify.c) share and nothing else
 * calls. */
#ifndef AEGIS_EXEC_PRIV_H
#define AEGIS_EXEC_PRIV_H

#include "exec.h"

/* exec_log.c: a job's log's name in the log folder, "ID.out" or
 * "ID.err"; and that log opened to read, only as a regular file of owner
 * and never waiting on a lease (-1 with errno). */
void exec_log_name(char *out, size_t outlen, int64_t id, bool err_stream);
int exec_log_open(int log_dirfd, int64_t id, bool err_stream, uid_t owner);

/* exec_status.c: an attempt's status file's path; its record written in
 * place (0, or -1 with errno); whether the record names process job as
 * the job's (false only when it was read and names another, or none);
 * and the file made at full size and locked, from a spare where there is
 * one (the descriptor, or -1 with a message naming the file). */
void exec_status_path(char *out, size_t outlen, const char *run_dir,
                      int64_t id, int attempt);
int exec_record_write(int fd, const exec_record *rec, bool ended);
bool exec_record_names_job(int fd, pid_t job);
int exec_status_create(const char *path, const char *run_dir,
                       exec_spares *spares, char *err, size_t errlen);

/* exec_proc.c: fields of /proc/PID/stat; 0, or -1 when pid is gone. */
int exec_proc_stat(pid_t pid, char *state, unsigned long long *start,
                   pid_t *session, pid_t *parent);

#endif
