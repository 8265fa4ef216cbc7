/* cgroup.c -- per-job cgroups, v1 and v2 (cgroup.h). Only files under
 * the root it is given: the tests point it at a folder of their own. */
#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The CFS period aegisd sets a quota against, microseconds (the
 * kernel's default). */
#define CG_PERIOD_US 100000

static bool cg_exists(const char *dir, const char *name) {
    char path[768];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

cg_version cg_detect(const char *root) {
    char memory[512], cpu[512];
    if (!root || !root[0]) return CG_NONE;
    if (cg_exists(root, "cgroup.controllers")) return CG_V2;
    snprintf(memory, sizeof(memory), "%s/memory", root);
    snprintf(cpu, sizeof(cpu), "%s/cpu", root);
    return cg_exists(memory, "memory.limit_in_bytes") &&
                   cg_exists(cpu, "cpu.cfs_quota_us")
               ? CG_V1
               : CG_NONE;
}

/* Writes text to dir/name; 0, or -1 with why in err. */
static int cg_write(const char *dir, const char *name, const char *text,
                    char *err, size_t errlen) {
    char path[768];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    size_t len = strlen(text);
    bool ok = fd >= 0 && write(fd, text, len) == (ssize_t)len;
    int saved = errno;
    if (fd >= 0) close(fd);
    if (ok) return 0;
    snprintf(err, errlen, "%s: cannot write '%s': %s", path, text,
             strerror(saved));
    errno = saved;
    return -1;
}

/* Makes dir (an existing one will do); 0, or -1 with why in err. */
static int cg_mkdir(const char *dir, char *err, size_t errlen) {
    if (mkdir(dir, 0755) == 0 || errno == EEXIST) return 0;
    snprintf(err, errlen, "%s: cannot make the cgroup: %s", dir,
             strerror(errno));
    return -1;
}

/* parent/aegis and parent/aegis/job-ID.ATT into dir. */
static int cg_make_job_dir(const char *parent, int64_t id, int attempt,
                           char *dir, size_t len, char *err, size_t errlen) {
    char base[512];
    snprintf(base, sizeof(base), "%s/aegis", parent);
    snprintf(dir, len, "%s/job-%lld.%d", base, (long long)id, attempt);
    return cg_mkdir(base, err, errlen) || cg_mkdir(dir, err, errlen) ? -1 : 0;
}

/* aegisd's own cgroup path in the unified tree ("/system.slice/x"),
 * from /proc/self/cgroup's "0::" line; "" when none. */
static void cg_self_path(char *out, size_t len) {
    char line[1024];
    FILE *f = fopen("/proc/self/cgroup", "re");
    out[0] = '\0';
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, "0::", 3) == 0) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(out, len, "%s", strcmp(line + 3, "/") ? line + 3 : "");
        }
    if (f) fclose(f);
}

/* The folder under root that aegisd divides in v2: its own cgroup, or
 * that one's parent once it moved itself into the leaf "aegisd". */
static void cg_v2_base(const char *root, char *out, size_t len) {
    char self[512];
    cg_self_path(self, sizeof(self));
    size_t n = strlen(self);
    if (n >= 7 && strcmp(self + n - 7, "/aegisd") == 0) self[n - 7] = '\0';
    snprintf(out, len, "%s%s", root, self);
}

/* Moves the process pid into dir's cgroup; one that has ended meanwhile
 * (ESRCH) needs no moving. 0, or -1 with why in err. */
static int cg_move(const char *dir, pid_t pid, char *err, size_t errlen) {
    char text[32];
    snprintf(text, sizeof(text), "%d", (int)pid);
    return cg_write(dir, "cgroup.procs", text, err, errlen) == 0 ||
                   errno == ESRCH
               ? 0
               : -1;
}

int cg_v2_delegate(const char *root, pid_t also, char *out, size_t len,
                   char *err, size_t errlen) {
    char leaf[600];
    cg_v2_base(root, out, len);
    snprintf(leaf, sizeof(leaf), "%s/aegisd", out);
    return cg_mkdir(leaf, err, errlen) != 0 ||
                   cg_write(leaf, "cgroup.procs", "0", err, errlen) != 0 ||
                   (also > 0 && cg_move(leaf, also, err, errlen) != 0) ||
                   cg_write(out, "cgroup.subtree_control", "+memory +cpu",
                            err, errlen) != 0
               ? -1
               : 0;
}

static int cg_create_v2(const char *root, int64_t id, int attempt, int cpus,
                        double mem_mib, cg_job *out, char *err,
                        size_t errlen) {
    char base[512], text[64];
    snprintf(base, sizeof(base), "%s/aegis", root);
    if (cg_mkdir(base, err, errlen) != 0 ||
        cg_write(base, "cgroup.subtree_control", "+memory +cpu", err,
                 errlen) != 0 ||
        cg_make_job_dir(root, id, attempt, out->memory, sizeof(out->memory),
                        err, errlen) != 0)
        return -1;
    if (mem_mib > 0) {
        snprintf(text, sizeof(text), "%.0f", mem_mib * 1048576.0);
        if (cg_write(out->memory, "memory.max", text, err, errlen) != 0 ||
            (cg_exists(out->memory, "memory.swap.max") &&
             cg_write(out->memory, "memory.swap.max", "0", err, errlen) != 0))
            return -1;
    }
    snprintf(text, sizeof(text), "%d %d", cpus * CG_PERIOD_US, CG_PERIOD_US);
    return cpus > 0 ? cg_write(out->memory, "cpu.max", text, err, errlen) : 0;
}

static int cg_create_v1(const char *root, int64_t id, int attempt, int cpus,
                        double mem_mib, cg_job *out, char *err,
                        size_t errlen) {
    char tree[512], text[64];
    if (mem_mib > 0) {
        snprintf(tree, sizeof(tree), "%s/memory", root);
        snprintf(text, sizeof(text), "%.0f", mem_mib * 1048576.0);
        if (cg_make_job_dir(tree, id, attempt, out->memory,
                            sizeof(out->memory), err, errlen) != 0 ||
            cg_write(out->memory, "memory.limit_in_bytes", text, err,
                     errlen) != 0 ||
            (cg_exists(out->memory, "memory.memsw.limit_in_bytes") &&
             cg_write(out->memory, "memory.memsw.limit_in_bytes", text, err,
                      errlen) != 0))
            return -1;
    }
    if (cpus <= 0) return 0;
    snprintf(tree, sizeof(tree), "%s/cpu", root);
    snprintf(text, sizeof(text), "%d", cpus * CG_PERIOD_US);
    return cg_make_job_dir(tree, id, attempt, out->cpu, sizeof(out->cpu), err,
                           errlen) != 0 ||
                   cg_write(out->cpu, "cpu.cfs_period_us", "100000", err,
                            errlen) != 0 ||
                   cg_write(out->cpu, "cpu.cfs_quota_us", text, err,
                            errlen) != 0
               ? -1
               : 0;
}

int cg_job_create(const char *root, cg_version v, int64_t id, int attempt,
                  int cpus, double host_mem_mib, cg_job *out, char *err,
                  size_t errlen) {
    memset(out, 0, sizeof(*out));
    if (cpus <= 0 && host_mem_mib <= 0) return 0;
    int rc = -1;
    if (v == CG_V2)
        rc = cg_create_v2(root, id, attempt, cpus, host_mem_mib, out, err,
                          errlen);
    else if (v == CG_V1)
        rc = cg_create_v1(root, id, attempt, cpus, host_mem_mib, out, err,
                          errlen);
    else
        snprintf(err, errlen, "no writable cgroup hierarchy under %s",
                 root && root[0] ? root : "(cgroup_root is empty)");
    if (rc != 0) cg_job_remove(out);
    return rc;
}

/* parent/aegis/job-ID.ATT into out when that folder exists, else "". */
static void cg_find_dir(const char *parent, int64_t id, int attempt,
                        char *out, size_t len) {
    struct stat st;
    snprintf(out, len, "%s/aegis/job-%lld.%d", parent, (long long)id,
             attempt);
    if (stat(out, &st) != 0 || !S_ISDIR(st.st_mode)) out[0] = '\0';
}

void cg_job_find(const char *root, int64_t id, int attempt, cg_job *out) {
    char tree[512];
    memset(out, 0, sizeof(*out));
    cg_version v = cg_detect(root);
    if (v == CG_V2) {
        cg_v2_base(root, tree, sizeof(tree));
        cg_find_dir(tree, id, attempt, out->memory, sizeof(out->memory));
    } else if (v == CG_V1) {
        snprintf(tree, sizeof(tree), "%s/memory", root);
        cg_find_dir(tree, id, attempt, out->memory, sizeof(out->memory));
        snprintf(tree, sizeof(tree), "%s/cpu", root);
        cg_find_dir(tree, id, attempt, out->cpu, sizeof(out->cpu));
    }
}

void cg_job_procs(const cg_job *cg, char *out, size_t len) {
    snprintf(out, len, "%s%s%s%s%s", cg->memory,
             cg->memory[0] ? "/cgroup.procs" : "",
             cg->memory[0] && cg->cpu[0] ? ":" : "", cg->cpu,
             cg->cpu[0] ? "/cgroup.procs" : "");
}

/* The number after `key ` in dir/name's lines, or 0. */
static long long cg_count(const char *dir, const char *name,
                          const char *key) {
    char path[768], line[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "re");
    long long n = 0;
    size_t klen = strlen(key);
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
            n = atoll(line + klen + 1);
    if (f) fclose(f);
    return n;
}

bool cg_job_any(const cg_job *cg) {
    return cg->memory[0] || cg->cpu[0];
}

bool cg_oom_killed(const cg_job *cg) {
    if (!cg || !cg->memory[0]) return false;
    return cg_count(cg->memory, "memory.events", "oom_kill") > 0 ||
           cg_count(cg->memory, "memory.oom_control", "oom_kill") > 0;
}

void cg_job_remove(const cg_job *cg) {
    if (!cg) return;
    if (cg->memory[0]) rmdir(cg->memory);
    if (cg->cpu[0]) rmdir(cg->cpu);
}

int cg_join(const char *procs) {
    for (const char *p = procs; p && *p;) {
        size_t n = strcspn(p, ":");
        char path[1024];
        snprintf(path, sizeof(path), "%.*s", (int)n, p);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        bool ok = fd >= 0 && write(fd, "0", 1) == 1;
        int saved = errno;
        if (fd >= 0) close(fd);
        if (!ok) {
            errno = saved;
            return -1;
        }
        p += n + (p[n] == ':');
    }
    return 0;
}
