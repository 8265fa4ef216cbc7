/* outfile.h -- a job's own output files (Slurm's -o and -e): patterns
 * with %j (job id), %x (its name), %u (its user), %a (its array index)
 * and %%, expanded by aegisd; the files are opened by the job's own
 * process, after it has become its user, in its directory, so aegisd
 * never opens a path a user chose. aegisd still reads the job's output
 * through the pipes it always reads (its logs, `aegis log`, the OOM
 * classifier): a tee process of the job's, as the user, copies each
 * stream both to the file and to the pipe.
 */
#ifndef AEGIS_OUTFILE_H
#define AEGIS_OUTFILE_H

#include <stddef.h>
#include <stdint.h>

/* What a pattern's fields stand for. */
typedef struct outfile_job {
    int64_t id;
    const char *name, *user;
    const char *array_index;    /* "" when the job is not of an array */
} outfile_job;

/* Expands pattern into out; 0, or -1 with why in err (an unknown %
 * field, a result too long). */
int outfile_expand(const char *pattern, const outfile_job *job, char *out,
                   size_t len, char *err, size_t errlen);

/* The array index of a command aegisd runs for an array's job
 * ("/usr/bin/env AEGIS_ARRAY_INDEX=N ...": N of 1 to 10 digits), or "". */
const char *outfile_array_index(const char *const *argv);

/* In the job's process, as its user, before it runs the command: when
 * out_path or err_path is not "" (or NULL), opens them (created,
 * appended to) and forks. The child returns 0 with its stdout and stderr
 * on pipes, to run the command. This process stays as the tee: the
 * session's leader, whose end the watcher waits for, it copies each
 * stream to its file and to where it went before (aegisd's pipe) until
 * the command's processes have all closed them, then exits as the
 * command did. SIGTERM and SIGHUP leave it running, so that what the
 * command writes as it stops is kept; SIGKILL ends it with the rest.
 * Returns -1 with errno when a file cannot be opened (nothing forked). */
int outfile_start(const char *out_path, const char *err_path);

#endif
