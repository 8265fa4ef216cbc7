/* feed_admin.c -- list the feeds in /dev/shm with their consumers, and
 * remove the ones nobody will ever use again.
 *
 * A feed is garbage once its producer is dead: consumers still attached
 * keep their mapping, so unlinking the name takes nothing from them. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h> /* shm_open */
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "feed_admin.h"
#include "feed_shm.h"

/* A creator that has not finished within this long has died. A segment
 * read as corrupt gets as long before gc removes it, so that a header
 * caught while its creator writes it is never taken for garbage. */
#define FEED_HALF_MADE_S 10

/* What a reading of a segment found. */
enum { SEG_READY, SEG_HALF_MADE, SEG_CORRUPT };

/* Reads into *copy a private copy of the header and consumer table of the
 * segment open on fd (st: its fstat). The segment is its owner's, who may
 * truncate it or write anything in it at any moment, so it is neither
 * mapped (a truncation would kill us with SIGBUS) nor locked (its lock is
 * his memory too): a truncation makes a short read, and every size in the
 * copy is checked before anything rests on it. Read without the lock, the
 * copy may be torn between two updates (a consumer's position read a
 * moment after the head, say): a listing is a momentary, maybe slightly
 * inconsistent, picture, and no decision rests on those counts. Returns
 * SEG_*, with why filled for SEG_CORRUPT. */
static int read_header(int fd, const struct stat *st, feed_shm *copy,
                       char *why, size_t len) {
    if (st->st_size == 0) return SEG_HALF_MADE; /* before its ftruncate */
    ssize_t got = pread(fd, copy, sizeof *copy, 0);
    if (got < 0) {
        snprintf(why, len, "read: %s", strerror(errno));
        return SEG_CORRUPT;
    }
    if ((size_t)got < sizeof *copy) {
        snprintf(why, len, "%zd bytes, short of a header's %zu", got,
                 sizeof *copy);
        return SEG_CORRUPT;
    }
    uint64_t magic = atomic_load_explicit(&copy->magic, memory_order_relaxed);
    if (magic == 0) return SEG_HALF_MADE; /* not yet published ready */
    if (magic != FEED_MAGIC) {
        snprintf(why, len, "no feed header (magic %#llx)",
                 (unsigned long long)magic);
        return SEG_CORRUPT;
    }
    return feed_shm_check(copy, (uint64_t)st->st_size, why, len) == 0
               ? SEG_READY
               : SEG_CORRUPT;
}

/* Fills fi from a copy read_header found ready. The counts it shows may
 * be torn, never out of range: a position past the head shows a lag of 0,
 * a last read in the future an idle time of 0. */
static void read_info(const feed_shm *h, feed_info *fi) {
    uint64_t now = feed_now_ns();
    fi->ready = 1;
    fi->producer_pid = h->producer.pid;
    fi->producer_alive = feed_proc_alive(&h->producer);
    fi->slots = h->nslots;
    fi->closed = (int)h->closed;
    fi->head = h->head;
    fi->epoch = h->epoch;
    fi->epoch_index = h->head > h->epoch_start ? h->head - h->epoch_start : 0;
    for (int i = 0; i < FEED_MAX_CONSUMERS; i++) {
        const feed_shm_consumer *r = &h->consumers[i];
        if (!r->in_use) continue;
        feed_consumer_info *ci = &fi->consumers[fi->nconsumers++];
        ci->pid = r->proc.pid;
        ci->alive = feed_proc_alive(&r->proc);
        ci->batch_size = r->batch_size;
        ci->epoch = r->start_epoch;
        ci->pos = r->pos;
        ci->lag = h->head > r->pos ? h->head - r->pos : 0;
        ci->batches = r->batches;
        ci->idle_s = now > r->seen_ns ? (double)(now - r->seen_ns) / 1e9 : 0;
    }
}

/* Fills fi for the feed `name` and, with gc, removes it if it is dead.
 * Returns whether fi belongs in the answer: every feed for ls; for gc the
 * dead ones and those this user may not look into. */
static int visit(const char *name, feed_info *fi, int gc) {
    char nm[FEED_NAME_MAX + 32], path[FEED_NAME_MAX + 64];
    struct stat st;
    feed_shm copy;
    snprintf(nm, sizeof nm, "/" FEED_SHM_PREFIX "%s", name);
    feed_shm_path(path, sizeof path, name);
    /* O_NONBLOCK: a FIFO planted under a feed's name would block a read
     * open until a writer came (shm_open adds O_NOFOLLOW); only a regular
     * file is a feed */
    int fd = shm_open(nm, O_RDONLY | O_NONBLOCK, 0);
    int opened = fd >= 0 && fstat(fd, &st) == 0;
    /* Unopened, it is another user's (or gone since readdir): say whose. */
    if ((!opened && lstat(path, &st) < 0) || !S_ISREG(st.st_mode)) {
        if (fd >= 0) close(fd);
        return 0;
    }
    snprintf(fi->name, sizeof fi->name, "%s", name);
    feed_user_name(st.st_uid, fi->owner, sizeof fi->owner);
    fi->readable = opened;
    fi->bytes = (uint64_t)st.st_size;
    if (!opened) { /* listed by ls and gc alike, left alone */
        if (fd >= 0) close(fd);
        return 1;
    }
    int seg = read_header(fd, &st, &copy, fi->corrupt, sizeof fi->corrupt);
    close(fd);
    if (seg == SEG_READY) read_info(&copy, fi);
    int dead = seg == SEG_READY ? !fi->producer_alive
                                : time(NULL) - st.st_mtime > FEED_HALF_MADE_S;
    if (gc && dead) {
        /* Only the identity of what we read: nothing is mapped. */
        feed_map read = {.dev = st.st_dev, .ino = st.st_ino};
        fi->gc_errno = feed_shm_unlink_if_ours(&read, name);
        fi->removed = fi->gc_errno == 0;
    }
    return !gc || dead;
}

/* Visit every feed; when gc is set, unlink the dead ones and keep only
 * those visit() reports in *out. */
static int scan(feed_info **out, size_t *n, int gc, feed_err *err) {
    DIR *d = opendir(FEED_SHM_DIR);
    size_t cap = 8;
    *n = 0;
    *out = NULL;
    if (!d) {
        feed_seterr(err, FEED_ESYS, "opendir %s: %s", FEED_SHM_DIR,
                    strerror(errno));
        return FEED_ESYS;
    }
    feed_info *list = calloc(cap, sizeof *list);
    struct dirent *e;
    size_t plen = strlen(FEED_SHM_PREFIX);
    while (list && (e = readdir(d))) {
        const char *name = e->d_name + plen;
        if (strncmp(e->d_name, FEED_SHM_PREFIX, plen) || !feed_name_valid(name))
            continue;
        if (*n == cap) {
            feed_info *bigger = realloc(list, 2 * cap * sizeof *list);
            if (!bigger) break;
            memset(bigger + cap, 0, cap * sizeof *list);
            list = bigger;
            cap *= 2;
        }
        if (visit(name, &list[*n], gc))
            (*n)++;
        else
            memset(&list[*n], 0, sizeof *list);
    }
    closedir(d);
    if (!list) {
        feed_seterr(err, FEED_ESYS, "feed list: out of memory");
        return FEED_ESYS;
    }
    *out = list;
    return FEED_OK;
}

int feed_list(feed_info **out, size_t *n, feed_err *err) {
    return scan(out, n, 0, err);
}

int feed_gc(feed_info **out, size_t *n, feed_err *err) {
    return scan(out, n, 1, err);
}

const char *feed_producer_state(const feed_info *fi) {
    if (!fi->readable) return "unreadable";
    if (fi->corrupt[0]) return "corrupt";
    if (!fi->ready) return "half-made";
    if (fi->closed) return "closed";
    return fi->producer_alive ? "alive" : "dead";
}

static void print_table(FILE *f, const feed_info *fi) {
    fprintf(f, "%-20s user %-10s producer %d (%s)  ", fi->name, fi->owner,
            (int)fi->producer_pid, feed_producer_state(fi));
    if (fi->corrupt[0])
        fprintf(f, "%s", fi->corrupt);
    else
        fprintf(f, "epoch %llu  batch %llu", (unsigned long long)fi->epoch,
                (unsigned long long)fi->epoch_index);
    fprintf(f, "  slots %u  %.1f MiB\n", fi->slots,
            (double)fi->bytes / (1024.0 * 1024.0));
    for (int i = 0; i < fi->nconsumers; i++) {
        const feed_consumer_info *c = &fi->consumers[i];
        fprintf(f, "  consumer %-8d %-5s batch_size %-5u position %-8llu "
                   "lag %-4llu idle %.1fs\n",
                (int)c->pid, c->alive ? "alive" : "dead", c->batch_size,
                (unsigned long long)c->pos, (unsigned long long)c->lag,
                c->idle_s);
    }
}

void feed_print(FILE *f, const feed_info *feeds, size_t n) {
    for (size_t i = 0; i < n; i++)
        print_table(f, &feeds[i]);
}

const char *feed_gc_failure(const feed_info *fi, char *buf, size_t len) {
    if (fi->removed) return NULL;
    if (!fi->readable)
        snprintf(buf, len, "user %s's, which you may not open", fi->owner);
    else if (fi->gc_errno == ESTALE)
        snprintf(buf, len, "a new segment took the name meanwhile");
    else
        snprintf(buf, len, "user %s's, dead, but unlinking failed: %s",
                 fi->owner, strerror(fi->gc_errno));
    return buf;
}

void feed_print_gc(FILE *f, const feed_info *feeds, size_t n) {
    char why[160];
    for (size_t i = 0; i < n; i++) {
        const feed_info *fi = &feeds[i];
        const char *failure = feed_gc_failure(fi, why, sizeof why);
        if (failure)
            fprintf(f, "left %s: %s\n", fi->name, failure);
        else
            fprintf(f, "removed %s\n", fi->name);
    }
}
