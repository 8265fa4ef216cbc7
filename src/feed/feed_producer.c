/* feed_producer.c -- the producer side of a feed: publish batches into the
 * ring under backpressure, reap dead consumers, mark epochs.
 *
 * CUDA tensors are copied into the slot's own device buffer, never shared
 * from the caller's memory: the buffer, like the host slot, is rewritten
 * only when backpressure says nobody holds it, and it lives (so consumers'
 * cached mappings stay good) until feed_close. That fixes TensorSocket's
 * reuse of a GPU pool block a consumer still read, and its leak of IPC
 * mappings opened per batch.
 *
 * Invariant relied on by the consumers' late join: a publish of sequence n
 * overwrites sequence n - nslots, and nslots > replay, so while the current
 * epoch has published at most `replay` batches its first batch is intact. */
#define _GNU_SOURCE /* close_range */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "feed_shm.h"

struct feed_producer {
    feed_map m;
    char name[FEED_NAME_MAX + 1];
    pid_t janitor;      /* child that unlinks the segment if we die */
    int janitor_fd;     /* its pipe: EOF tells it we are gone */
    uint64_t reaped_ns; /* last liveness sweep over the consumers */
    int consumer_wait_ms; /* feed_config's */
    uint64_t lonely_ns; /* since when publishes lack consumers; 0: not */
    uint64_t announced_ns; /* since when batch 0 waits for announced
                              consumers; 0: not yet */
    int cuda_device;    /* GPU of the device buffers; -1 before the first */
    uint64_t *cuda_buf; /* device buffer per slot; 0 until first needed */
};

/* The janitor only waits for EOF on its pipe, then unlinks the segment if
 * it is still ours. Between fork and _exit it calls only async-signal-safe
 * functions, since the parent may be a threaded Python process. */
static void janitor_main(int rfd, const char *path, const feed_map *m) {
    struct sigaction ign = {.sa_handler = SIG_IGN};
    sigaction(SIGINT, &ign, NULL);
    sigaction(SIGTERM, &ign, NULL);
    sigaction(SIGHUP, &ign, NULL);
    /* Hold no inherited descriptor: a test's pipe or ctest's output must
     * not stay open because of us. */
    dup2(rfd, 0);
    close_range(1, ~0U, 0);
    char c;
    while (read(0, &c, 1) < 0 && errno == EINTR) {
    }
    struct stat st;
    if (stat(path, &st) == 0 && st.st_dev == m->dev && st.st_ino == m->ino)
        unlink(path);
    _exit(0);
}

static int start_janitor(feed_producer *p, feed_err *err) {
    char path[FEED_NAME_MAX + 64];
    int fds[2];
    feed_shm_path(path, sizeof path, p->name);
    if (pipe(fds) < 0) {
        feed_seterr(err, FEED_ESYS, "feed %s: janitor pipe: %s", p->name,
                    strerror(errno));
        return FEED_ESYS;
    }
    pid_t pid = fork();
    if (pid < 0) {
        feed_seterr(err, FEED_ESYS, "feed %s: janitor fork: %s", p->name,
                    strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return FEED_ESYS;
    }
    if (pid == 0) janitor_main(fds[0], path, &p->m);
    close(fds[0]);
    p->janitor = pid;
    p->janitor_fd = fds[1];
    return FEED_OK;
}

/* Take the name over from a producer of ours that died, or refuse if it
 * lives or the segment is another user's. */
static int replace_stale(const char *name, feed_err *err) {
    feed_map old = {0};
    int rc = feed_shm_open(&old, name, FEED_OWNER_SELF, err);
    if (rc == FEED_ENOENT || rc == FEED_EINVAL) {
        feed_seterr(err, FEED_EEXIST,
                    "feed %s: a %s segment exists; run aegis feed gc", name,
                    rc == FEED_ENOENT ? "half-made" : "corrupt");
        return FEED_EEXIST;
    }
    if (rc != FEED_OK) return rc;
    int alive = feed_proc_alive(&old.hdr->producer);
    int32_t pid = old.hdr->producer.pid;
    if (!alive) feed_shm_unlink_if_ours(&old, name);
    feed_shm_unmap(&old);
    if (alive) {
        feed_seterr(err, FEED_EEXIST, "feed %s: producer pid %d is alive",
                    name, (int)pid);
        return FEED_EEXIST;
    }
    return FEED_OK;
}

feed_producer *feed_create(const feed_config *cfg_in, feed_err *err) {
    feed_config cfg = *cfg_in;
    if (!feed_name_valid(cfg.name) || cfg.slot_bytes == 0 ||
        cfg.ahead == 0 || cfg.user_meta_len > FEED_META_MAX) {
        feed_seterr(err, FEED_EINVAL,
                    "feed %s: need a name of [A-Za-z0-9._-]{1,%d}, "
                    "slot_bytes > 0, ahead > 0 and user_meta of at most %d "
                    "bytes (got %zu)",
                    cfg.name ? cfg.name : "(null)", FEED_NAME_MAX,
                    FEED_META_MAX, cfg.user_meta_len);
        return NULL;
    }
    /* one slot more than ahead for an end-of-epoch marker (see
     * wait_for_space) */
    if (cfg.slots < cfg.ahead + 1) cfg.slots = cfg.ahead + 1;
    if (cfg.slots < cfg.replay + 1) cfg.slots = cfg.replay + 1;

    feed_producer *p = calloc(1, sizeof *p);
    if (!p) {
        feed_seterr(err, FEED_ESYS, "feed %s: out of memory", cfg.name);
        return NULL;
    }
    snprintf(p->name, sizeof p->name, "%s", cfg.name);
    p->consumer_wait_ms = cfg.consumer_wait_ms;
    p->cuda_device = -1;
    p->cuda_buf = calloc(cfg.slots, sizeof *p->cuda_buf);
    int rc = p->cuda_buf ? feed_shm_create(&p->m, &cfg, err) : FEED_ESYS;
    if (!p->cuda_buf) feed_seterr(err, rc, "feed %s: out of memory", p->name);
    if (rc == FEED_EEXIST && replace_stale(cfg.name, err) == FEED_OK)
        rc = feed_shm_create(&p->m, &cfg, err);
    if (rc == FEED_OK) rc = start_janitor(p, err);
    if (rc != FEED_OK) {
        if (p->m.hdr) {
            feed_shm_unlink_if_ours(&p->m, p->name);
            feed_shm_unmap(&p->m);
        }
        free(p->cuda_buf);
        free(p);
        return NULL;
    }
    feed_shm_publish_ready(&p->m);
    return p;
}

/* Free the records of consumers that died; locked. Their holds go with
 * them. Rate-limited because each check reads /proc. */
static void reap_dead(feed_producer *p, int force) {
    uint64_t now = feed_now_ns();
    if (!force && now - p->reaped_ns < FEED_POLL_MS * 1000000ULL) return;
    p->reaped_ns = now;
    feed_shm *h = p->m.hdr;
    for (int i = 0; i < FEED_MAX_CONSUMERS; i++)
        if (h->consumers[i].in_use && !feed_proc_alive(&h->consumers[i].proc))
            h->consumers[i].in_use = 0;
}

static int live_consumers(const feed_shm *h, uint64_t *min_low) {
    int n = 0;
    *min_low = h->head;
    for (int i = 0; i < FEED_MAX_CONSUMERS; i++) {
        const feed_shm_consumer *c = &h->consumers[i];
        if (!c->in_use) continue;
        n++;
        if (c->low < *min_low) *min_low = c->low;
    }
    return n;
}

int feed_consumers(feed_producer *p) {
    uint64_t low;
    feed_lock(p->m.hdr);
    reap_dead(p, 1);
    int n = live_consumers(p->m.hdr, &low);
    feed_unlock(p->m.hdr);
    return n;
}

int feed_peers(feed_producer *p, feed_peer *out, int max) {
    const feed_shm *h = p->m.hdr;
    int n = 0;
    feed_lock(p->m.hdr);
    reap_dead(p, 1);
    for (int i = 0; i < FEED_MAX_CONSUMERS && n < max; i++) {
        const feed_shm_consumer *r = &h->consumers[i];
        if (!r->in_use) continue;
        memcpy(out[n].id, r->id, sizeof out[n].id);
        out[n].pid = r->proc.pid;
        out[n].batch_size = r->batch_size;
        out[n].batches = r->batches;
        n++;
    }
    feed_unlock(p->m.hdr);
    return n;
}

/* Consumers a publish waits for: min_consumers before the feed started,
 * then any one; locked. */
static int consumers_needed(const feed_shm *h) {
    if (h->started || h->min_consumers < 1) return 1;
    return (int)h->min_consumers;
}

/* FEED_ENOCONSUMER once publishes have lacked consumers for longer than
 * consumer_wait_ms, else FEED_OK; locked. */
static int check_lonely(feed_producer *p, int have, int need, uint64_t now,
                        feed_err *err) {
    if (!p->lonely_ns) p->lonely_ns = now;
    double waited_s = (double)(now - p->lonely_ns) / 1e9;
    if (p->consumer_wait_ms <= 0 ||
        waited_s * 1000.0 < (double)p->consumer_wait_ms)
        return FEED_OK;
    if (p->m.hdr->started)
        feed_seterr(err, FEED_ENOCONSUMER,
                    "feed %s: no consumer attached for %.1f s (all that "
                    "read it left or died)",
                    p->name, waited_s);
    else
        feed_seterr(err, FEED_ENOCONSUMER,
                    "feed %s: %d of the %d consumers it waits for "
                    "(min_consumers) attached after %.1f s",
                    p->name, have, need, waited_s);
    return FEED_ENOCONSUMER;
}

/* Consumers announced as waiting for this feed (feed_announce.c) that
 * have not attached yet: before the first batch, and for at most
 * FEED_ANNOUNCE_MS after the first were seen, so that one stopped before
 * it attached delays the feed only so long. Locked. */
static int announced_waiting(feed_producer *p, uint64_t now) {
    if (p->m.hdr->started) return 0;
    if (p->announced_ns &&
        now - p->announced_ns >= FEED_ANNOUNCE_MS * 1000000ULL)
        return 0;
    int n = feed_announced(p->name, p->m.hdr);
    if (n && !p->announced_ns) p->announced_ns = now;
    return n;
}

/* Wait until slot `head` may be written: enough consumers, none of those
 * announced before batch 0 still on its way, and space (see
 * feed_has_space). */
static int wait_for_space(feed_producer *p, int timeout_ms, feed_err *err) {
    feed_shm *h = p->m.hdr;
    uint64_t deadline = feed_now_ns() + (uint64_t)timeout_ms * 1000000ULL;
    int rc = FEED_OK;
    feed_lock(h);
    for (;;) {
        reap_dead(p, 0);
        uint64_t low, now = feed_now_ns();
        int n = live_consumers(h, &low), need = consumers_needed(h);
        if (n >= need && announced_waiting(p, now)) {
            /* they attach within milliseconds and wake us then */
        } else if (n >= need) {
            h->started = 1;
            p->lonely_ns = 0;
            if (feed_has_space(&p->m, low)) break;
        } else if ((rc = check_lonely(p, n, need, now, err)) != FEED_OK) {
            break;
        }
        if (timeout_ms >= 0 && now >= deadline) {
            if (n < need)
                feed_seterr(err, FEED_TIMEOUT,
                            "feed %s: %d of %d consumers attached after %d ms",
                            p->name, n, need, timeout_ms);
            else
                feed_seterr(err, FEED_TIMEOUT,
                            "feed %s: no space after %d ms", p->name,
                            timeout_ms);
            rc = FEED_TIMEOUT;
            break;
        }
        int ms = FEED_POLL_MS;
        if (timeout_ms >= 0 && (deadline - now) / 1000000ULL < (uint64_t)ms)
            ms = (int)((deadline - now) / 1000000ULL) + 1;
        feed_wait(h, &h->space, ms);
    }
    feed_unlock(h);
    return rc;
}

/* The device buffer of slot `seq` on `device`, made on first use. All of
 * a feed's buffers live on one GPU, named in the header by PCI bus id. */
static int cuda_slot(feed_producer *p, uint64_t seq, feed_shm_slot *s,
                     int device, uint64_t *buf, feed_err *err) {
    feed_shm *h = p->m.hdr;
    if (p->cuda_device < 0) {
        int rc = feed_cuda_bus_id(p->name, device, h->cuda_bus, err);
        if (rc != FEED_OK) return rc;
        p->cuda_device = device;
    } else if (device != p->cuda_device) {
        feed_seterr(err, FEED_EINVAL,
                    "feed %s: tensor on cuda:%d, but the feed's device "
                    "buffers are on cuda:%d",
                    p->name, device, p->cuda_device);
        return FEED_EINVAL;
    }
    uint64_t *b = &p->cuda_buf[seq % p->m.nslots];
    int rc = *b ? FEED_OK
                : feed_cuda_alloc(p->name, device, p->m.slot_bytes, b, s->ipc,
                                  err);
    *buf = *b;
    return rc;
}

/* Copy tensor t to `off` in the slot: host bytes into the shared segment,
 * CUDA bytes into the slot's device buffer. */
static int copy_tensor(feed_producer *p, uint64_t seq, feed_shm_slot *s,
                       const feed_tensor *t, uint64_t off, feed_err *err) {
    if (t->device == FEED_HOST) {
        memcpy(feed_slot_data(&p->m, seq) + off, t->data, t->nbytes);
        return FEED_OK;
    }
    uint64_t buf;
    int rc = cuda_slot(p, seq, s, t->device_id, &buf, err);
    if (rc != FEED_OK) return rc;
    return feed_cuda_copy(p->name, t->device_id, buf + off,
                          (uint64_t)(uintptr_t)t->data, t->nbytes, err);
}

/* Lay the tensors out in slot `seq`; FEED_ETOOBIG if they do not fit.
 * Host and CUDA tensors are packed separately, each from offset 0 of the
 * host slot or the device buffer, which are both slot_bytes long. */
static int fill_slot(feed_producer *p, uint64_t seq, const feed_tensor *t,
                     int n, feed_err *err) {
    feed_shm_slot *s = feed_slot_meta(&p->m, seq);
    uint64_t end[2] = {0, 0}, rows = 0; /* by device: FEED_HOST, FEED_CUDA */
    for (int i = 0; i < n; i++) {
        uint64_t bytes;
        if (feed_tensor_bytes(t[i].dtype, t[i].ndim, t[i].shape, &bytes) ||
            (t[i].device != FEED_HOST && t[i].device != FEED_CUDA) ||
            bytes != t[i].nbytes) {
            feed_seterr(err, FEED_EINVAL,
                        "feed %s: tensor %d: bad dtype, shape, device or "
                        "byte count",
                        p->name, i);
            return FEED_EINVAL;
        }
        uint64_t r = t[i].ndim ? (uint64_t)t[i].shape[0] : 0;
        if (i > 0 && t[i].ndim && r != rows) {
            feed_seterr(err, FEED_EINVAL,
                        "feed %s: tensor %d has %llu rows, tensor 0 has %llu",
                        p->name, i, (unsigned long long)r,
                        (unsigned long long)rows);
            return FEED_EINVAL;
        }
        if (i == 0 || !rows) rows = r;
        uint64_t off = (end[t[i].device] + FEED_DATA_ALIGN - 1) /
                       FEED_DATA_ALIGN * FEED_DATA_ALIGN;
        if (off + t[i].nbytes > p->m.slot_bytes) {
            feed_seterr(err, FEED_ETOOBIG,
                        "feed %s: batch needs more than the %llu %s bytes of "
                        "a slot",
                        p->name, (unsigned long long)p->m.slot_bytes,
                        t[i].device == FEED_CUDA ? "device" : "host");
            return FEED_ETOOBIG;
        }
        feed_shm_tensor *st = &s->t[i];
        memcpy(st->key, t[i].key, sizeof st->key);
        st->key[FEED_KEY_MAX - 1] = '\0';
        st->dtype = t[i].dtype;
        st->device = t[i].device;
        st->ndim = t[i].ndim;
        memcpy(st->shape, t[i].shape, sizeof st->shape);
        st->offset = off;
        st->nbytes = t[i].nbytes;
        int rc = copy_tensor(p, seq, s, &t[i], off, err);
        if (rc != FEED_OK) return rc;
        end[t[i].device] = off + t[i].nbytes;
    }
    s->ntensors = (uint32_t)n;
    s->rows = rows;
    return FEED_OK;
}

/* Make slot `head` visible and wake the consumers. */
static void commit(feed_producer *p, feed_shm_slot *s, int end_of_epoch) {
    feed_shm *h = p->m.hdr;
    feed_lock(h);
    s->seq = h->head;
    s->epoch = h->epoch;
    s->index = h->head - h->epoch_start;
    s->end_of_epoch = (uint32_t)end_of_epoch;
    s->publish_ns = feed_now_ns();
    h->head++;
    if (end_of_epoch) {
        h->epoch++;
        h->epoch_start = h->head;
    }
    feed_wake(&h->data);
    feed_unlock(h);
}

int feed_publish(feed_producer *p, const feed_tensor *t, int n,
                 int timeout_ms, feed_err *err) {
    if (n < 1 || n > FEED_MAX_TENSORS) {
        feed_seterr(err, FEED_EINVAL, "feed %s: %d tensors (1..%d allowed)",
                    p->name, n, FEED_MAX_TENSORS);
        return FEED_EINVAL;
    }
    int rc = wait_for_space(p, timeout_ms, err);
    if (rc != FEED_OK) return rc;
    uint64_t seq = p->m.hdr->head; /* only we move head */
    rc = fill_slot(p, seq, t, n, err);
    if (rc != FEED_OK) return rc;
    commit(p, feed_slot_meta(&p->m, seq), 0);
    return FEED_OK;
}

int feed_end_epoch(feed_producer *p, int timeout_ms, feed_err *err) {
    int rc = wait_for_space(p, timeout_ms, err);
    if (rc != FEED_OK) return rc;
    feed_shm_slot *s = feed_slot_meta(&p->m, p->m.hdr->head);
    s->ntensors = 0;
    s->rows = 0;
    commit(p, s, 1);
    return FEED_OK;
}

/* Wait until no live consumer maps a device buffer (feed_detach unmaps,
 * death unmaps); see feed_close. */
static void wait_unmapped(feed_producer *p) {
    feed_shm *h = p->m.hdr;
    feed_lock(h);
    for (;;) {
        reap_dead(p, 1);
        int mapped = 0;
        for (int i = 0; i < FEED_MAX_CONSUMERS; i++)
            mapped |= h->consumers[i].in_use && h->consumers[i].cuda_maps;
        if (!mapped) break;
        feed_wait(h, &h->space, FEED_POLL_MS);
    }
    feed_unlock(h);
}

/* Ends the feed, `how` (FEED_CLOSED or FEED_FAILED, then `why`), and
 * frees p. */
static void close_as(feed_producer *p, uint32_t how, const char *why) {
    if (!p) return;
    feed_shm *h = p->m.hdr;
    feed_lock(h);
    if (how == FEED_FAILED)
        snprintf(h->fail_why, sizeof h->fail_why, "%s",
                 why ? why : "its source failed");
    h->closed = how;
    feed_wake(&h->data);
    feed_unlock(h);
    /* Attached consumers keep their mapping and drain what is left. */
    feed_shm_unlink_if_ours(&p->m, p->name);
    if (p->cuda_device >= 0) {
        wait_unmapped(p);
        for (uint32_t i = 0; i < p->m.nslots; i++)
            if (p->cuda_buf[i]) feed_cuda_free(p->cuda_device, p->cuda_buf[i]);
    }
    feed_shm_unmap(&p->m);
    free(p->cuda_buf);
    close(p->janitor_fd);
    while (waitpid(p->janitor, NULL, 0) < 0 && errno == EINTR) {
    }
    free(p);
}

void feed_close(feed_producer *p) { close_as(p, FEED_CLOSED, NULL); }

void feed_fail(feed_producer *p, const char *why) {
    close_as(p, FEED_FAILED, why);
}
