/* feed_admin.c -- list the feeds in /dev/shm with their consumers, and
 * remove the ones nobody will ever use again.
 *
 * A feed is garbage once its producer is dead: consumers still attached
 * keep their mapping, so unlinking the name takes nothing from them. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "feed_admin.h"
#include "feed_shm.h"

/* A creator that has not finished within this long has died. */
#define FEED_HALF_MADE_S 10
/* The longest ls or gc waits for one feed's lock. A feed's user may hold
 * it for as long as he likes (it lies in his own segment), so this only
 * spares a reading of a feed whose producer or consumer is in the middle
 * of an update, which takes microseconds. */
#define FEED_ADMIN_LOCK_MS 20

static void read_info(const feed_map *m, feed_info *fi) {
    feed_shm *h = m->hdr;
    uint64_t now = feed_now_ns();
    /* Written before the segment was made ready and never changed: read
     * without the lock. */
    fi->ready = 1;
    fi->producer_pid = h->producer.pid;
    fi->producer_alive = feed_proc_alive(&h->producer);
    fi->slots = h->nslots;
    fi->bytes = h->total_bytes;
    if (feed_lock_within(h, FEED_ADMIN_LOCK_MS) < 0) {
        fi->busy = 1;
        return;
    }
    fi->closed = (int)h->closed;
    fi->head = h->head;
    fi->epoch = h->epoch;
    fi->epoch_index = h->head - h->epoch_start;
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
        ci->idle_s = (double)(now - r->seen_ns) / 1e9;
    }
    feed_unlock(h);
}

/* Unlinks the segment of a feed that could not be mapped (half-made);
 * returns 0 or an errno. */
static int unlink_unmapped(const char *name) {
    char nm[FEED_NAME_MAX + 32];
    snprintf(nm, sizeof nm, "/" FEED_SHM_PREFIX "%s", name);
    return shm_unlink(nm) == 0 ? 0 : errno;
}

/* Fills fi for the feed `name` and, with gc, removes it if it is dead.
 * Returns whether fi belongs in the answer: every feed for ls; for gc the
 * dead ones and those this user may not look into. */
static int visit(const char *name, feed_info *fi, int gc) {
    char path[FEED_NAME_MAX + 64];
    struct stat st;
    feed_map m = {0};
    feed_shm_path(path, sizeof path, name);
    if (stat(path, &st) < 0) return 0; /* removed since readdir */
    snprintf(fi->name, sizeof fi->name, "%s", name);
    feed_user_name(st.st_uid, fi->owner, sizeof fi->owner);
    int rc = feed_shm_open(&m, name, FEED_OWNER_ANY, NULL);
    fi->readable = rc == FEED_OK || rc == FEED_ENOENT;
    if (rc == FEED_OK) read_info(&m, fi);
    int dead = rc == FEED_OK ? !fi->producer_alive
                             : rc == FEED_ENOENT &&
                                   time(NULL) - st.st_mtime > FEED_HALF_MADE_S;
    if (gc && dead) {
        fi->gc_errno = rc == FEED_OK ? feed_shm_unlink_if_ours(&m, name)
                                     : unlink_unmapped(name);
        fi->removed = fi->gc_errno == 0;
    }
    if (rc == FEED_OK) feed_shm_unmap(&m);
    return !gc || dead || !fi->readable;
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

static const char *producer_state(const feed_info *fi) {
    if (!fi->readable) return "unreadable";
    if (!fi->ready) return "half-made";
    if (fi->closed) return "closed";
    return fi->producer_alive ? "alive" : "dead";
}

static void print_json(FILE *f, const feed_info *fi) {
    fprintf(f,
            "{\"name\":\"%s\",\"owner\":\"%s\",\"producer_pid\":%d,"
            "\"producer\":\"%s\",\"busy\":%s,"
            "\"epoch\":%llu,\"epoch_batches\":%llu,\"published\":%llu,"
            "\"slots\":%u,\"bytes\":%llu,\"consumers\":[",
            fi->name, fi->owner, (int)fi->producer_pid, producer_state(fi),
            fi->busy ? "true" : "false", (unsigned long long)fi->epoch,
            (unsigned long long)fi->epoch_index,
            (unsigned long long)fi->head, fi->slots,
            (unsigned long long)fi->bytes);
    for (int i = 0; i < fi->nconsumers; i++) {
        const feed_consumer_info *c = &fi->consumers[i];
        fprintf(f,
                "%s{\"pid\":%d,\"alive\":%s,\"batch_size\":%u,\"epoch\":%llu,"
                "\"position\":%llu,\"lag\":%llu,\"batches\":%llu,"
                "\"idle_s\":%.3f}",
                i ? "," : "", (int)c->pid, c->alive ? "true" : "false",
                c->batch_size, (unsigned long long)c->epoch,
                (unsigned long long)c->pos, (unsigned long long)c->lag,
                (unsigned long long)c->batches, c->idle_s);
    }
    fprintf(f, "]}\n");
}

static void print_table(FILE *f, const feed_info *fi) {
    fprintf(f, "%-20s user %-10s producer %d (%s)  ", fi->name, fi->owner,
            (int)fi->producer_pid, producer_state(fi));
    if (fi->busy)
        fprintf(f, "busy (its lock is held)");
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

void feed_print(FILE *f, const feed_info *feeds, size_t n, int json) {
    for (size_t i = 0; i < n; i++)
        (json ? print_json : print_table)(f, &feeds[i]);
}

/* Why gc left fi in place; NULL when it removed it. */
static const char *gc_failure(const feed_info *fi, char *buf, size_t len) {
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

void feed_print_gc(FILE *f, const feed_info *feeds, size_t n, int json) {
    char why[160];
    for (size_t i = 0; i < n; i++) {
        const feed_info *fi = &feeds[i];
        const char *failure = gc_failure(fi, why, sizeof why);
        if (json && failure)
            fprintf(f, "{\"name\":\"%s\",\"owner\":\"%s\",\"removed\":false,"
                       "\"error\":\"%s\"}\n",
                    fi->name, fi->owner, failure);
        else if (json)
            fprintf(f, "{\"name\":\"%s\",\"owner\":\"%s\",\"removed\":true}\n",
                    fi->name, fi->owner);
        else if (failure)
            fprintf(f, "left %s: %s\n", fi->name, failure);
        else
            fprintf(f, "removed %s\n", fi->name);
    }
}
