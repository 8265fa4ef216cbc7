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

static void read_info(const feed_map *m, feed_info *fi) {
    feed_shm *h = m->hdr;
    uint64_t now = feed_now_ns();
    feed_lock(h);
    fi->ready = 1;
    fi->producer_pid = h->producer.pid;
    fi->producer_alive = feed_proc_alive(&h->producer);
    fi->closed = (int)h->closed;
    fi->head = h->head;
    fi->epoch = h->epoch;
    fi->epoch_index = h->head - h->epoch_start;
    fi->slots = h->nslots;
    fi->bytes = h->total_bytes;
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

static int half_made_and_old(const char *name) {
    char path[FEED_NAME_MAX + 64];
    struct stat st;
    feed_shm_path(path, sizeof path, name);
    return stat(path, &st) == 0 &&
           time(NULL) - st.st_mtime > FEED_HALF_MADE_S;
}

/* Visit every feed; when gc is set, unlink the dead ones and keep only
 * those in *out. */
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
        feed_info *fi = &list[*n];
        feed_map m = {0};
        snprintf(fi->name, sizeof fi->name, "%s", name);
        int opened = feed_shm_open(&m, name, NULL) == FEED_OK;
        if (opened) read_info(&m, fi);
        int dead = opened ? !fi->producer_alive : half_made_and_old(name);
        if (gc && dead) {
            char nm[FEED_NAME_MAX + 32];
            snprintf(nm, sizeof nm, "/" FEED_SHM_PREFIX "%s", name);
            if (opened)
                feed_shm_unlink_if_ours(&m, name);
            else
                shm_unlink(nm);
        }
        if (opened) feed_shm_unmap(&m);
        if (!gc || dead)
            (*n)++;
        else
            memset(fi, 0, sizeof *fi);
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
    if (!fi->ready) return "half-made";
    if (fi->closed) return "closed";
    return fi->producer_alive ? "alive" : "dead";
}

static void print_json(FILE *f, const feed_info *fi) {
    fprintf(f,
            "{\"name\":\"%s\",\"producer_pid\":%d,\"producer\":\"%s\","
            "\"epoch\":%llu,\"epoch_batches\":%llu,\"published\":%llu,"
            "\"slots\":%u,\"bytes\":%llu,\"consumers\":[",
            fi->name, (int)fi->producer_pid, producer_state(fi),
            (unsigned long long)fi->epoch,
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
    fprintf(f, "%-20s producer %d (%s)  epoch %llu  batch %llu  slots %u  "
               "%.1f MiB\n",
            fi->name, (int)fi->producer_pid, producer_state(fi),
            (unsigned long long)fi->epoch,
            (unsigned long long)fi->epoch_index, fi->slots,
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
