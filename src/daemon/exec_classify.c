/* exec_classify.c -- how an attempt ended: its wait status, and an out of
 * memory error its stderr's tail names, checked against what its GPUs
 * held (oom_text.h, oom_check.h). */
#include "exec.h"
#include "exec_priv.h"
#include "job_file.h"
#include "oom_text.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* "exit 1" or "killed by signal 9". */
static void exec_status_text(int status, char *out, size_t outlen) {
    if (WIFEXITED(status))
        snprintf(out, outlen, "exit %d", WEXITSTATUS(status));
    else
        snprintf(out, outlen, "killed by signal %d", WTERMSIG(status));
}

core_exit exec_classify_tail(int status, const char *tail, size_t n,
                             char *why, size_t whylen) {
    char code[48];
    exec_status_text(status, code, sizeof(code));
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    const char *oom = ok ? NULL : oom_text_find(tail, n);
    if (oom) {
        snprintf(why, whylen, "%s, out of GPU memory (\"%s\" on stderr)",
                 code, oom);
        return CORE_EXIT_OOM;
    }
    snprintf(why, whylen, "%s", code);
    return ok ? CORE_EXIT_OK : CORE_EXIT_FAILED;
}

/* An OOM the tail's message claims, checked against the attempt's GPUs
 * (oom_check.h): one they contradict is a failure, with their numbers in
 * its reason. */
static core_exit exec_check_oom(int status, const char *tail, size_t n,
                                const oom_gpu_mem *mem, int nmem, char *why,
                                size_t whylen) {
    char room[400], code[48];
    if (oom_check(tail, n, mem, nmem, room, sizeof(room)) != OOM_CONTRADICTED)
        return CORE_EXIT_OOM;
    exec_status_text(status, code, sizeof(code));
    snprintf(why, whylen, "%s: %s", code, room);
    return CORE_EXIT_FAILED;
}

core_exit exec_classify_checked(int status, const char *tail, size_t n,
                                const oom_gpu_mem *mem, int nmem, char *why,
                                size_t whylen) {
    core_exit how = exec_classify_tail(status, tail, n, why, whylen);
    return how == CORE_EXIT_OOM
               ? exec_check_oom(status, tail, n, mem, nmem, why, whylen)
               : how;
}

core_exit exec_classify(int status, int log_dirfd, int64_t id, uid_t owner,
                        long long err_offset, const oom_gpu_mem *mem,
                        int nmem, char *why, size_t whylen) {
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return exec_classify_tail(status, "", 0, why, whylen);
    char tail[EXEC_TAIL_BYTES];
    ssize_t n = 0;
    int fd = exec_log_open(log_dirfd, id, true, owner);
    if (fd < 0 && errno != ENOENT) {
        char code[48];
        exec_status_text(status, code, sizeof(code));
        snprintf(why, whylen, "%s (stderr not searched for an OOM message: "
                 "%s)", code, exec_log_error(errno));
        return CORE_EXIT_FAILED;
    }
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0) {
        /* a log that started over at its cap (exec_cap) is all new */
        if (err_offset > st.st_size) err_offset = 0;
        n = job_file_tail(fd, err_offset, tail, sizeof(tail));
    }
    if (fd >= 0) close(fd);
    return exec_classify_checked(status, tail, n > 0 ? (size_t)n : 0, mem,
                                 nmem, why, whylen);
}
