/* tgpu.c -- the test GPUs' shared state (see tgpu.h for the file format).
 *
 * Readers take no lock: every file is replaced by rename(), which is
 * atomic, so a scan sees each allocation whole or not at all. Writers of
 * allocations take the folder lock only so that "does it fit?" and "take
 * it" are one step for concurrent jobs.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tgpu.h"

/* Parses a whole decimal number in [lo, hi]. Returns 0, or -1. */
static int tgpu_parse_long(const char *s, const char *end, long lo, long hi,
                           long *out) {
    if (s == end || *s < '0' || *s > '9')
        return -1;
    long v = 0;
    for (; s < end; s++) {
        if (*s < '0' || *s > '9' || v > hi / 10)
            return -1;
        v = v * 10 + (*s - '0');
    }
    if (v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int tgpu_parse_shape(const char *spec, int *ngpus, long *mib, char *err,
                     size_t errlen) {
    const char *x = strchr(spec, 'x');
    long n = 0, m = 0;
    if (!x || tgpu_parse_long(spec, x, 1, TGPU_MAX_GPUS, &n) < 0 ||
        tgpu_parse_long(x + 1, x + strlen(x), 1, TGPU_MAX_MIB, &m) < 0) {
        snprintf(err, errlen, "AEGIS_TEST_GPUS=\"%s\": want <count>x<MiB> "
                 "such as %s, with 1..%d GPUs of 1..%ld MiB", spec,
                 TGPU_DEFAULT_SHAPE, TGPU_MAX_GPUS, TGPU_MAX_MIB);
        return -1;
    }
    *ngpus = (int)n;
    *mib = m;
    return 0;
}

int tgpu_config_load(tgpu_config *c, char *err, size_t errlen) {
    const char *shape = getenv("AEGIS_TEST_GPUS");
    if (!shape || !*shape)
        shape = TGPU_DEFAULT_SHAPE;
    if (tgpu_parse_shape(shape, &c->ngpus, &c->mib, err, errlen) < 0)
        return -1;
    const char *dir = getenv("AEGIS_TEST_GPU_DIR");
    if (!dir || !*dir) {
        snprintf(err, errlen, "AEGIS_TEST_GPU_DIR is not set: the test GPUs "
                 "keep their state in that folder (make one, export it)");
        return -1;
    }
    struct stat st;
    if (stat(dir, &st) < 0) {
        snprintf(err, errlen, "AEGIS_TEST_GPU_DIR=%s: %s", dir,
                 strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "AEGIS_TEST_GPU_DIR=%s: not a folder", dir);
        return -1;
    }
    if ((size_t)snprintf(c->dir, sizeof c->dir, "%s", dir) >= sizeof c->dir) {
        snprintf(err, errlen, "AEGIS_TEST_GPU_DIR: path longer than %zu bytes",
                 sizeof c->dir - 1);
        return -1;
    }
    return 0;
}

/* Reads "<MiB> <smact>[ <gi> <ci>][ mps]" from the allocation file at
 * path. Returns 0, or -1 when it is gone or not an allocation. */
static int tgpu_alloc_read(const char *path, tgpu_alloc *a) {
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[128];
    int used = 0;
    int ok = fgets(line, sizeof line, f) &&
             sscanf(line, "%ld %lf%n", &a->mib, &a->smact, &used) == 2 &&
             a->mib >= 0 && a->smact >= 0;
    fclose(f);
    if (!ok)
        return -1;
    const char *rest = line + used;
    if (sscanf(rest, " %d %d%n", &a->mig_gi, &a->mig_ci, &used) == 2)
        rest += used;
    else
        a->mig_gi = a->mig_ci = 0; /* charged to the whole GPU */
    a->mps = strncmp(rest + strspn(rest, " "), "mps", 3) == 0;
    return 0;
}

static void tgpu_alloc_path(const tgpu_config *c, int gpu, pid_t pid,
                            char *buf, size_t len) {
    snprintf(buf, len, "%s/gpu%d.%ld", c->dir, gpu, (long)pid);
}

/* Whether process pid exists. EPERM means it does, as another user's. */
static int tgpu_alive(pid_t pid) {
    return kill(pid, 0) == 0 || errno == EPERM;
}

int tgpu_scan(const tgpu_config *c, int gpu, tgpu_alloc *out, int max,
              tgpu_usage *sum) {
    DIR *d = opendir(c->dir);
    if (!d)
        return -1;
    char prefix[32], path[sizeof c->dir + 64];
    int plen = snprintf(prefix, sizeof prefix, "gpu%d.", gpu);
    int listed = 0;
    *sum = (tgpu_usage){0, 0.0, 0};
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long pid = 0;
        const char *rest = e->d_name + plen;
        if (strncmp(e->d_name, prefix, (size_t)plen) != 0 ||
            tgpu_parse_long(rest, rest + strlen(rest), 1, 0x7fffffffL,
                            &pid) < 0)
            continue;
        tgpu_alloc_path(c, gpu, (pid_t)pid, path, sizeof path);
        if (!tgpu_alive((pid_t)pid)) {
            unlink(path);
            continue;
        }
        tgpu_alloc a = {(pid_t)pid, 0, 0.0, 0, 0, 0};
        if (tgpu_alloc_read(path, &a) < 0)
            continue; /* removed since readdir: the job just ended */
        sum->used_mib += a.mib;
        sum->smact += a.smact;
        sum->nallocs++;
        if (listed < max)
            out[listed++] = a;
    }
    closedir(d);
    return listed;
}

int tgpu_write_file(const tgpu_config *c, const char *name, const char *text) {
    char tmp[sizeof c->dir + 96], path[sizeof c->dir + 64];
    snprintf(tmp, sizeof tmp, "%s/.%s.%ld.tmp", c->dir, name, (long)getpid());
    snprintf(path, sizeof path, "%s/%s", c->dir, name);
    /* 0644 whatever the writer's umask: the test GPUs are shared by the
     * jobs of every user, and each reads the others' allocations */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    FILE *f = fd < 0 || fchmod(fd, 0644) < 0 ? NULL : fdopen(fd, "w");
    if (!f) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int ok = fputs(text, f) >= 0;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) < 0) {
        int saved = errno;
        unlink(tmp);
        errno = saved;
        return -1;
    }
    return 0;
}

int tgpu_alloc_write(const tgpu_config *c, int gpu, const tgpu_alloc *a) {
    char name[64], text[80];
    snprintf(name, sizeof name, "gpu%d.%ld", gpu, (long)a->pid);
    int n = snprintf(text, sizeof text, "%ld %.4f", a->mib, a->smact);
    if (a->mig_gi > 0)
        n += snprintf(text + n, sizeof text - (size_t)n, " %d %d", a->mig_gi,
                      a->mig_ci);
    snprintf(text + n, sizeof text - (size_t)n, "%s\n", a->mps ? " mps" : "");
    return tgpu_write_file(c, name, text);
}

void tgpu_alloc_remove(const tgpu_config *c, int gpu, pid_t pid) {
    char path[sizeof c->dir + 64];
    tgpu_alloc_path(c, gpu, pid, path, sizeof path);
    unlink(path);
}

int tgpu_lock(const tgpu_config *c) {
    char path[sizeof c->dir + 16];
    snprintf(path, sizeof path, "%s/lock", c->dir);
    /* read-only: flock() needs no more, and a lock file another user
     * made (mode 0644 under their umask) can still be opened so */
    int fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    /* readable by all whatever its maker's umask (a root aegisd's may be
     * 077); only the maker may change it, so the others' attempt fails,
     * harmlessly */
    (void)fchmod(fd, 0644);
    while (flock(fd, LOCK_EX) < 0) {
        if (errno != EINTR) {
            int saved = errno;
            close(fd);
            errno = saved;
            return -1;
        }
    }
    return fd;
}

/* One per library: each stand-in links its own copy of this file. */
static int tgpu_why_rc;
static char tgpu_why_text[512];

int tgpu_fail(int rc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tgpu_why_text, sizeof tgpu_why_text, fmt, ap);
    va_end(ap);
    tgpu_why_rc = rc;
    return rc;
}

const char *tgpu_why(int rc) {
    return rc == tgpu_why_rc && tgpu_why_text[0] ? tgpu_why_text : NULL;
}

void tgpu_uuid(int gpu, char *buf, size_t len) {
    snprintf(buf, len, TGPU_UUID_PREFIX "%d", gpu);
}

int tgpu_find(const tgpu_config *c, const char *entry) {
    long i = -1;
    size_t plen = strlen(TGPU_UUID_PREFIX);
    if (strncmp(entry, TGPU_UUID_PREFIX, plen) == 0)
        entry += plen;
    if (tgpu_parse_long(entry, entry + strlen(entry), 0, c->ngpus - 1, &i) < 0)
        return -1;
    return (int)i;
}

int tgpu_mig_find(const tgpu_config *c, const char *entry, int *gpu,
                  int *gi, int *ci, long *mib) {
    int g = -1, i = -1, k = -1, used = 0;
    size_t plen = strlen(TGPU_MIG_UUID_PREFIX);
    if (strncmp(entry, TGPU_MIG_UUID_PREFIX, plen) != 0 ||
        sscanf(entry + plen, "%d-%d-%d%n", &g, &i, &k, &used) != 3 ||
        entry[plen + (size_t)used] != '\0' || g < 0 || g >= c->ngpus)
        return -1;
    char path[sizeof c->dir + 32], line[128];
    snprintf(path, sizeof path, "%s/mig%d", c->dir, g);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int have_gi = 0, have_ci = 0;
    while (fgets(line, sizeof line, f)) {
        int a = -1, b = -1, unused = 0;
        long m = 0;
        if (sscanf(line, "gi %d %d %d %ld", &a, &unused, &b, &m) == 4 &&
            a == i && m > 0) {
            have_gi = 1;
            *mib = m;
        } else if (sscanf(line, "ci %d %d", &a, &b) == 2 && a == i && b == k) {
            have_ci = 1;
        }
    }
    fclose(f);
    if (!have_gi || !have_ci)
        return -1;
    *gpu = g;
    *gi = i;
    *ci = k;
    return 0;
}

void tgpu_stall(const tgpu_config *c) {
    char stall[sizeof c->dir + 16], stalled[sizeof c->dir + 16];
    snprintf(stall, sizeof stall, "%s/stall", c->dir);
    if (access(stall, F_OK) != 0)
        return;
    snprintf(stalled, sizeof stalled, "%s/stalled", c->dir);
    int fd = open(stalled, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0)
        close(fd);
    const struct timespec tick = {.tv_nsec = 10 * 1000 * 1000};
    while (access(stall, F_OK) == 0)
        nanosleep(&tick, NULL);
    unlink(stalled);
}
