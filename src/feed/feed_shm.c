/* feed_shm.c -- create, map and lock a feed's shared-memory segment, and
 * tell whether a process that touches it is still alive.
 *
 * Liveness is checked by pid and start time rather than by heartbeat: a
 * training step may legitimately keep a consumer away from the feed for
 * seconds, while a killed process is gone (or a zombie) at once. */
#define _GNU_SOURCE /* syscall(SYS_futex) */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "feed_shm.h"

void feed_seterr(feed_err *err, int code, const char *fmt, ...) {
    if (!err) return;
    va_list ap;
    va_start(ap, fmt);
    err->code = code;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
}

size_t feed_dtype_size(int dtype) {
    static const size_t size[FEED_NDTYPES] = {
        [FEED_U8] = 1, [FEED_I8] = 1, [FEED_I16] = 2, [FEED_I32] = 4,
        [FEED_I64] = 8, [FEED_F16] = 2, [FEED_BF16] = 2, [FEED_F32] = 4,
        [FEED_F64] = 8, [FEED_BOOL] = 1,
    };
    return dtype >= 0 && dtype < FEED_NDTYPES ? size[dtype] : 0;
}

int feed_tensor_bytes(int dtype, int ndim, const int64_t *shape,
                      uint64_t *bytes) {
    uint64_t n = feed_dtype_size(dtype);
    if (!n || ndim < 0 || ndim > FEED_MAX_DIMS) return -1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0 ||
            (shape[d] > 0 && n > UINT64_MAX / (uint64_t)shape[d]))
            return -1;
        n *= (uint64_t)shape[d];
    }
    *bytes = n;
    return 0;
}

int feed_name_valid(const char *name) {
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > FEED_NAME_MAX) return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = name[i];
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                 (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
                 ch == '-';
        if (!ok) return 0;
    }
    return name[0] != '.';
}

void feed_shm_path(char *buf, size_t len, const char *name) {
    snprintf(buf, len, FEED_SHM_DIR FEED_SHM_PREFIX "%s", name);
}

static void shm_name(char *buf, size_t len, const char *name) {
    snprintf(buf, len, "/" FEED_SHM_PREFIX "%s", name);
}

uint64_t feed_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

/* The lock; the futex words need nothing but the zeroes ftruncate left. */
static int init_sync(feed_shm *h, feed_err *err) {
    pthread_mutexattr_t ma;
    int rc = pthread_mutexattr_init(&ma);
    rc = rc ? rc : pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    rc = rc ? rc : pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    rc = rc ? rc : pthread_mutex_init(&h->lock, &ma);
    pthread_mutexattr_destroy(&ma);
    if (rc) {
        feed_seterr(err, FEED_ESYS, "feed %s: process-shared lock: %s",
                    h->name, strerror(rc));
        return FEED_ESYS;
    }
    return FEED_OK;
}

static int map_fd(feed_map *m, int fd, size_t size, const char *name,
                  feed_err *err) {
    struct stat st;
    if (fstat(fd, &st) < 0) {
        feed_seterr(err, FEED_ESYS, "feed %s: fstat: %s", name,
                    strerror(errno));
        return FEED_ESYS;
    }
    if (size == 0) size = (size_t)st.st_size;
    if (size < sizeof(feed_shm) || (size_t)st.st_size < size) {
        feed_seterr(err, FEED_ENOENT, "feed %s: segment not ready", name);
        return FEED_ENOENT;
    }
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        feed_seterr(err, FEED_ESYS, "feed %s: mmap %zu bytes: %s", name,
                    size, strerror(errno));
        return FEED_ESYS;
    }
    m->hdr = p;
    m->size = size;
    m->dev = st.st_dev;
    m->ino = st.st_ino;
    m->uid = st.st_uid;
    return FEED_OK;
}

uint64_t feed_shm_size(uint32_t nslots, uint64_t slot_bytes,
                       uint64_t *data_off) {
    uint64_t meta = sizeof(feed_shm) + (uint64_t)nslots * sizeof(feed_shm_slot);
    uint64_t data, total;
    *data_off = align_up(meta, 4096);
    if (__builtin_mul_overflow(nslots, slot_bytes, &data) ||
        __builtin_add_overflow(*data_off, data, &total))
        return 0;
    return total;
}

int feed_shm_check(const feed_shm *h, uint64_t size, char *why, size_t len) {
    uint64_t data_off;
    uint64_t total = feed_shm_size(h->nslots, h->slot_bytes, &data_off);
    if (h->nslots == 0 || h->slot_bytes == 0 ||
        h->slot_bytes % FEED_DATA_ALIGN)
        snprintf(why, len, "header: %u slots of %llu bytes", h->nslots,
                 (unsigned long long)h->slot_bytes);
    else if (total == 0 || total != h->total_bytes ||
             data_off != h->data_offset)
        snprintf(why, len,
                 "header: %u slots of %llu bytes take %llu bytes, data at "
                 "%llu, not %llu at %llu",
                 h->nslots, (unsigned long long)h->slot_bytes,
                 (unsigned long long)total, (unsigned long long)data_off,
                 (unsigned long long)h->total_bytes,
                 (unsigned long long)h->data_offset);
    else if (h->total_bytes != size)
        snprintf(why, len, "header says %llu bytes, the segment has %llu",
                 (unsigned long long)h->total_bytes,
                 (unsigned long long)size);
    else if (h->producer.pid <= 0 || h->closed > FEED_FAILED)
        snprintf(why, len, "header: producer pid %d, closed %u",
                 (int)h->producer.pid,
                 h->closed);
    else
        return 0;
    return -1;
}

int feed_shm_create(feed_map *m, const feed_config *cfg, feed_err *err) {
    char nm[FEED_NAME_MAX + 32];
    uint64_t data_off;
    size_t slot_bytes = align_up(cfg->slot_bytes, FEED_DATA_ALIGN);
    size_t total = feed_shm_size(cfg->slots, slot_bytes, &data_off);
    if (total == 0) {
        feed_seterr(err, FEED_EINVAL, "feed %s: %u slots of %zu bytes: too "
                    "large", cfg->name, cfg->slots, slot_bytes);
        return FEED_EINVAL;
    }

    shm_name(nm, sizeof nm, cfg->name);
    int fd = shm_open(nm, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        int code = errno == EEXIST ? FEED_EEXIST : FEED_ESYS;
        feed_seterr(err, code, "feed %s: shm_open: %s", cfg->name,
                    strerror(errno));
        return code;
    }
    /* The space is taken now: a segment only ftruncate'd gets its pages
     * when they are first written, and a /dev/shm too small for it (64 MB
     * in a container by default) then kills the producer with SIGBUS
     * halfway through an epoch. */
    int space = ftruncate(fd, (off_t)total) < 0
                    ? errno
                    : posix_fallocate(fd, 0, (off_t)total);
    if (space != 0) {
        feed_seterr(err, FEED_ESYS, "feed %s: %zu bytes in %s: %s%s",
                    cfg->name, total, FEED_SHM_DIR, strerror(space),
                    space == ENOSPC ? " (make /dev/shm larger, or give the "
                                      "feed fewer or smaller slots)" : "");
        close(fd);
        shm_unlink(nm);
        return FEED_ESYS;
    }
    int rc = map_fd(m, fd, total, cfg->name, err);
    close(fd);
    if (rc != FEED_OK) {
        shm_unlink(nm);
        return rc;
    }
    feed_shm *h = m->hdr; /* ftruncate zero-filled it */
    m->nslots = h->nslots = cfg->slots;
    m->slot_bytes = slot_bytes;
    m->data_offset = data_off;
    h->ahead = cfg->ahead;
    h->replay = cfg->replay;
    h->min_consumers = cfg->min_consumers;
    h->user_flags = cfg->user_flags;
    h->batch_rows = cfg->batch_rows;
    h->epoch_batches = cfg->epoch_batches;
    h->epoch_rows = cfg->epoch_rows;
    h->user_meta_len = (uint32_t)cfg->user_meta_len;
    if (cfg->user_meta_len)
        memcpy(h->user_meta, cfg->user_meta, cfg->user_meta_len);
    h->slot_bytes = slot_bytes;
    h->data_offset = data_off;
    h->total_bytes = total;
    h->producer = feed_proc_self();
    snprintf(h->name, sizeof h->name, "%s", cfg->name);
    rc = init_sync(h, err);
    if (rc != FEED_OK) {
        feed_shm_unmap(m);
        shm_unlink(nm);
    }
    return rc;
}

void feed_shm_publish_ready(feed_map *m) {
    atomic_store_explicit(&m->hdr->magic, FEED_MAGIC, memory_order_release);
}

static int owner_accepted(uid_t uid, int owners) {
    if (uid == geteuid()) return 1;
    return owners == FEED_OWNER_TRUSTED &&
           feed_trust_names(getenv("AEGIS_FEED_TRUST"), uid);
}

/* FEED_EPERM for segment `name`, owned by uid. */
static int refuse_owner(const char *name, uid_t uid, int owners,
                        feed_err *err) {
    char user[64];
    feed_user_shown(uid, user, sizeof user);
    if (owners == FEED_OWNER_TRUSTED)
        feed_seterr(err, FEED_EPERM,
                    "feed %s: its segment belongs to user %s (uid %lu), not "
                    "to you; set AEGIS_FEED_TRUST=%s to read it",
                    name, user, (unsigned long)uid, user);
    else
        feed_seterr(err, FEED_EPERM,
                    "feed %s: the name is taken by a segment of user %s "
                    "(uid %lu); pick another name",
                    name, user, (unsigned long)uid);
    return FEED_EPERM;
}

int feed_shm_open(feed_map *m, const char *name, int owners, feed_err *err) {
    char nm[FEED_NAME_MAX + 32], path[FEED_NAME_MAX + 64];
    struct stat st;
    shm_name(nm, sizeof nm, name);
    int fd = shm_open(nm, O_RDWR, 0);
    if (fd < 0 && errno == EACCES) {
        /* Not ours, or not made for us: say whose it is. */
        feed_shm_path(path, sizeof path, name);
        if (stat(path, &st) == 0 && st.st_uid != geteuid())
            return refuse_owner(name, st.st_uid, owners, err);
        errno = EACCES;
    }
    if (fd < 0) {
        int code = errno == ENOENT ? FEED_ENOENT : FEED_ESYS;
        feed_seterr(err, code, "feed %s: shm_open: %s", name,
                    strerror(errno));
        return code;
    }
    int rc = map_fd(m, fd, 0, name, err);
    close(fd);
    if (rc != FEED_OK) return rc;
    if (!owner_accepted(m->uid, owners)) {
        feed_shm_unmap(m);
        return refuse_owner(name, m->uid, owners, err);
    }
    feed_shm *h = m->hdr;
    if (atomic_load_explicit(&h->magic, memory_order_acquire) != FEED_MAGIC ||
        h->total_bytes != m->size) {
        feed_shm_unmap(m);
        feed_seterr(err, FEED_ENOENT, "feed %s: segment not ready", name);
        return FEED_ENOENT;
    }
    /* one read of the geometry, checked, then kept */
    feed_shm geometry;
    memcpy(&geometry, h, sizeof geometry);
    char why[256];
    if (feed_shm_check(&geometry, m->size, why, sizeof why) != 0) {
        feed_shm_unmap(m);
        feed_seterr(err, FEED_EINVAL, "feed %s: corrupt segment: %s", name,
                    why);
        return FEED_EINVAL;
    }
    m->nslots = geometry.nslots;
    m->slot_bytes = geometry.slot_bytes;
    m->data_offset = geometry.data_offset;
    return FEED_OK;
}

void feed_shm_unmap(feed_map *m) {
    if (m->hdr) munmap(m->hdr, m->size);
    m->hdr = NULL;
}

int feed_shm_unlink_if_ours(const feed_map *m, const char *name) {
    char path[FEED_NAME_MAX + 64], nm[FEED_NAME_MAX + 32];
    struct stat st;
    feed_shm_path(path, sizeof path, name);
    shm_name(nm, sizeof nm, name);
    if (stat(path, &st) < 0) return errno;
    /* A new producer may have taken the name since; leave its segment. */
    if (st.st_dev != m->dev || st.st_ino != m->ino) return ESTALE;
    return shm_unlink(nm) == 0 ? 0 : errno;
}

void feed_lock(feed_shm *h) {
    if (pthread_mutex_lock(&h->lock) == EOWNERDEAD)
        pthread_mutex_consistent(&h->lock);
}

void feed_unlock(feed_shm *h) { pthread_mutex_unlock(&h->lock); }

/* The word is read, and the waiter counted, while the lock is still
 * held, in the same critical section as the caller's check of its
 * condition. A change made after that check (it needs the lock) thus
 * both bumps the word past `seen`, so that FUTEX_WAIT returns at once
 * instead of sleeping through it, and finds the waiter counted, so that
 * feed_wake calls FUTEX_WAKE: the lock orders the count before the
 * waker's read of it, with no fence of its own. The futex is not
 * FUTEX_PRIVATE: the word is in a segment other processes map.
 * FUTEX_WAIT's timeout is relative (monotonic). */
void feed_wait(feed_shm *h, feed_futex *f, int ms) {
    uint32_t seen = atomic_load_explicit(&f->seq, memory_order_acquire);
    struct timespec ts = {.tv_sec = ms / 1000,
                          .tv_nsec = (long)(ms % 1000) * 1000000L};
    f->waiters++;
    feed_unlock(h);
    /* EAGAIN (changed already), ETIMEDOUT and EINTR all mean: re-check */
    syscall(SYS_futex, (uint32_t *)&f->seq, FUTEX_WAIT, seen, &ts, NULL, 0);
    feed_lock(h);
    f->waiters--;
}

/* The word is bumped even with no waiter: one that counts itself later
 * reads the new value as its `seen`. A count left high by a killed waiter
 * costs a FUTEX_WAKE for nobody on each change, as every change did
 * before the count. */
void feed_wake(feed_futex *f) {
    atomic_fetch_add_explicit(&f->seq, 1, memory_order_release);
    if (f->waiters)
        syscall(SYS_futex, (uint32_t *)&f->seq, FUTEX_WAKE, INT_MAX, NULL,
                NULL, 0);
}

/* Reads state and start time from /proc/PID/stat; 0 if unreadable. */
static int read_proc_stat(int32_t pid, char *state, uint64_t *start) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name may hold spaces and parens: parse after the last ')'. */
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ') return 0;
    p += 2;
    *state = *p;
    for (int field = 3; field < 22; field++) {
        p = strchr(p, ' ');
        if (!p) return 0;
        p++;
    }
    *start = strtoull(p, NULL, 10);
    return 1;
}

feed_proc feed_proc_self(void) {
    feed_proc me = {.pid = (int32_t)getpid(), .start_ticks = 0};
    char state;
    read_proc_stat(me.pid, &state, &me.start_ticks);
    return me;
}

int feed_proc_alive(const feed_proc *p) {
    if (p->pid <= 0) return 0;
    if (kill(p->pid, 0) < 0 && errno == ESRCH) return 0;
    char state;
    uint64_t start;
    if (!read_proc_stat(p->pid, &state, &start)) return 1; /* no /proc */
    if (state == 'Z' || state == 'X') return 0; /* killed, not yet reaped */
    return start == p->start_ticks;              /* else the pid was reused */
}

unsigned char *feed_slot_data(const feed_map *m, uint64_t seq) {
    return (unsigned char *)m->hdr + m->data_offset +
           (seq % m->nslots) * m->slot_bytes;
}

feed_shm_slot *feed_slot_meta(const feed_map *m, uint64_t seq) {
    return &m->hdr->slots[seq % m->nslots];
}

int feed_has_space(const feed_map *m, uint64_t low) {
    const feed_shm *h = m->hdr;
    if (h->head - low >= m->nslots) return 0;
    uint64_t batches = 0;
    for (uint64_t seq = low; seq < h->head; seq++)
        batches += !feed_slot_meta(m, seq)->end_of_epoch;
    return batches < h->ahead;
}
