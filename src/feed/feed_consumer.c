/* feed_consumer.c -- the consumer side of a feed: attach (with late join),
 * hand out views of producer batches, keep track of what is still held.
 *
 * A consumer batch is a view of some rows of one producer batch. The
 * consumer holds a producer batch while it is slicing it and while any view
 * of it is unreleased; the oldest such sequence is published as `low`, the
 * number the producer's backpressure reads.
 *
 * A slot's device buffer is mapped (cuIpcOpenMemHandle, which is costly)
 * the first time a batch in that slot carries a CUDA tensor, and the
 * mapping is kept for every later batch in the slot: the producer never
 * replaces a slot's buffer. feed_detach closes each mapping exactly once. */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h> /* getpid */
#include <time.h>

#include "feed_shm.h"

typedef struct {
    uint64_t seq;
    uint32_t refs;
} hold;

struct feed_consumer {
    feed_map m;
    char name[FEED_NAME_MAX + 1];
    feed_shm_consumer *rec; /* our record in the segment */
    uint32_t batch_size;
    uint64_t start_epoch; /* earlier epochs are skipped (joined too late) */
    uint64_t pos;         /* batch being sliced, or the next to read */
    int slicing;          /* pos is a batch we are cutting views from */
    uint64_t row_off;     /* next row of it to hand out */
    uint64_t checked_ns;  /* last producer liveness check */
    int announced;        /* feed_attach announced us (feed_announce.c) */
    hold *holds;          /* unreleased views, by producer sequence */
    uint32_t nholds, cap;
    int cuda_device;      /* local ordinal of the feed's GPU; -1: unmapped */
    uint64_t *cuda_map;   /* mapped device buffer per slot; 0: not yet */
    feed_shm_slot slot;   /* batch pos's metadata, copied and checked
                             (take_slot()) before any of it is used */
};

/* Pick where a newcomer starts; locked. Inside the replay window it
 * replays the current epoch from its first batch, otherwise it waits for
 * the next epoch, so either way it sees each sample of an epoch once. */
static void join_position(const feed_shm *h, feed_shm_consumer *r) {
    uint64_t published = h->head - h->epoch_start;
    if (published <= h->replay) {
        r->pos = h->epoch_start;
        r->start_epoch = h->epoch;
    } else {
        r->pos = h->head;
        r->start_epoch = h->epoch + 1;
    }
    r->low = r->pos;
}

/* A random id for a new record: getrandom's, or where that fails (a
 * kernel before 3.17) one made of our pid and the time, unique enough to
 * tell the consumers of one feed apart. */
static void draw_id(uint8_t id[FEED_ID_BYTES]) {
    if (getrandom(id, FEED_ID_BYTES, 0) == FEED_ID_BYTES) return;
    uint64_t now = feed_now_ns(), pid = (uint64_t)getpid();
    memcpy(id, &now, sizeof now);
    memcpy(id + sizeof now, &pid, sizeof pid);
}

static int take_record(feed_consumer *c, feed_err *err) {
    feed_shm *h = c->m.hdr;
    int rc = FEED_OK;
    uint8_t id[FEED_ID_BYTES];
    draw_id(id); /* outside the lock: it may read the kernel's pool */
    feed_lock(h);
    if (h->closed) {
        feed_seterr(err, FEED_ENOENT, "feed %s: producer has closed it",
                    c->name);
        rc = FEED_ENOENT;
    }
    for (int i = 0; rc == FEED_OK && i < FEED_MAX_CONSUMERS; i++) {
        feed_shm_consumer *r = &h->consumers[i];
        if (r->in_use) continue;
        memset(r, 0, sizeof *r);
        r->proc = feed_proc_self();
        r->batch_size = c->batch_size;
        r->seen_ns = feed_now_ns();
        memcpy(r->id, id, sizeof r->id);
        join_position(h, r);
        r->in_use = 1;
        c->rec = r;
        c->pos = r->pos;
        c->start_epoch = r->start_epoch;
        feed_wake(&h->space); /* may meet min_consumers */
        break;
    }
    if (rc == FEED_OK && !c->rec) {
        feed_seterr(err, FEED_EFULL, "feed %s: all %d consumer records taken",
                    c->name, FEED_MAX_CONSUMERS);
        rc = FEED_EFULL;
    }
    feed_unlock(h);
    return rc;
}

static void sleep_ms(int ms) {
    struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* Map the segment, waiting for the producer to create it, announced
 * (feed_announce.c) while it waits. */
static int open_when_ready(feed_consumer *c, int timeout_ms, feed_err *err) {
    uint64_t deadline = feed_now_ns() + (uint64_t)timeout_ms * 1000000ULL;
    for (int tries = 0;; tries++) {
        int rc = feed_shm_open(&c->m, c->name, FEED_OWNER_TRUSTED, err);
        if (rc != FEED_ENOENT) return rc;
        if (tries == 0) c->announced = feed_announce(c->name);
        if (timeout_ms >= 0 && feed_now_ns() >= deadline) return rc;
        sleep_ms(10); /* no event exists for "a file appeared in /dev/shm" */
    }
}

static int producer_gone(feed_consumer *c, feed_err *err) {
    if (feed_proc_alive(&c->m.hdr->producer)) return 0;
    feed_seterr(err, FEED_EPRODUCER, "feed %s: producer pid %d died",
                c->name, (int)c->m.hdr->producer.pid);
    feed_shm_unlink_if_ours(&c->m, c->name);
    return 1;
}

/* Refuse a batch size larger than the producer's batches: views never
 * straddle producer batches (they are cut in place), so it could only be
 * served short. One that does not divide them is served in pieces of
 * that size and one shorter piece of each batch's rest: every sample
 * once, where TensorSocket drops the rest. */
static int check_batch_size(const feed_consumer *c, feed_err *err) {
    uint64_t rows = c->m.hdr->batch_rows, bs = c->batch_size;
    if (!rows || bs <= rows) return FEED_OK;
    feed_seterr(err, FEED_EINVAL,
                "feed %s: batch size %llu is larger than the producer's "
                "batches of %llu rows; have the producer combine loader "
                "batches (producer_batch_size) or take at most %llu",
                c->name, (unsigned long long)bs, (unsigned long long)rows,
                (unsigned long long)rows);
    return FEED_EINVAL;
}

feed_consumer *feed_attach(const char *name, uint32_t batch_size,
                           int timeout_ms, feed_err *err) {
    if (!feed_name_valid(name)) {
        feed_seterr(err, FEED_EINVAL, "feed %s: bad name",
                    name ? name : "(null)");
        return NULL;
    }
    feed_consumer *c = calloc(1, sizeof *c);
    if (!c) {
        feed_seterr(err, FEED_ESYS, "feed %s: out of memory", name);
        return NULL;
    }
    snprintf(c->name, sizeof c->name, "%s", name);
    c->batch_size = batch_size;
    c->cuda_device = -1;
    int rc = open_when_ready(c, timeout_ms, err);
    if (rc == FEED_OK && producer_gone(c, err)) rc = FEED_EPRODUCER;
    if (rc == FEED_OK) rc = check_batch_size(c, err);
    if (rc == FEED_OK) {
        c->cap = c->m.nslots + 1; /* held seqs span at most ahead+1 */
        c->holds = calloc(c->cap, sizeof *c->holds);
        c->cuda_map = calloc(c->m.nslots, sizeof *c->cuda_map);
        rc = c->holds && c->cuda_map ? take_record(c, err) : FEED_ESYS;
        if (rc == FEED_ESYS)
            feed_seterr(err, rc, "feed %s: out of memory", name);
    }
    /* attached (the producer sees our record by now), or gave up */
    if (c->announced) feed_unannounce(name);
    if (rc != FEED_OK) {
        feed_shm_unmap(&c->m);
        free(c->holds);
        free(c->cuda_map);
        free(c);
        return NULL;
    }
    return c;
}

static uint64_t oldest_hold(const feed_consumer *c) {
    uint64_t low = c->pos;
    for (uint32_t i = 0; i < c->nholds; i++)
        if (c->holds[i].seq < low) low = c->holds[i].seq;
    return low;
}

/* Publish pos and low, and wake the producer if it waits for space
 * (feed_wake wakes only a counted waiter). */
static void publish_progress(feed_consumer *c) {
    feed_shm *h = c->m.hdr;
    feed_lock(h);
    c->rec->pos = c->pos;
    c->rec->low = oldest_hold(c);
    c->rec->seen_ns = feed_now_ns();
    feed_wake(&h->space);
    feed_unlock(h);
}

static void take_hold(feed_consumer *c, uint64_t seq) {
    for (uint32_t i = 0; i < c->nholds; i++)
        if (c->holds[i].seq == seq) {
            c->holds[i].refs++;
            return;
        }
    /* cap > any span of live holds (see feed_attach and feed_next), so
     * this fits */
    assert(c->nholds < c->cap);
    c->holds[c->nholds++] = (hold){.seq = seq, .refs = 1};
}

void feed_release(feed_consumer *c, uint64_t seq) {
    for (uint32_t i = 0; i < c->nholds; i++) {
        if (c->holds[i].seq != seq) continue;
        if (--c->holds[i].refs == 0) {
            c->holds[i] = c->holds[--c->nholds];
            publish_progress(c);
        }
        return;
    }
}

/* Whether this consumer's own holds keep the producer from publishing
 * batch pos, the one it is about to wait for: then it would wait for ever,
 * since the producer waits for it to release one. Locked. */
static int held_back_by_self(const feed_consumer *c) {
    uint64_t low = oldest_hold(c);
    return low < c->pos && !feed_has_space(&c->m, low);
}

/* Wait until batch pos is published; drains what was published before the
 * producer closed or died. FEED_EHELD where this consumer holds so many
 * batches that the producer cannot publish it. */
static int wait_published(feed_consumer *c, int timeout_ms, feed_err *err) {
    feed_shm *h = c->m.hdr;
    uint64_t start = feed_now_ns();
    int rc = FEED_OK;
    feed_lock(h);
    while (h->head <= c->pos) {
        uint64_t now = feed_now_ns();
        if (h->closed == FEED_FAILED) {
            char why[FEED_WHY_MAX]; /* a copy, terminated: see feed_shm.h */
            memcpy(why, h->fail_why, sizeof why);
            why[sizeof why - 1] = '\0';
            feed_seterr(err, FEED_EPRODUCER, "feed %s: the producer failed "
                        "(%s) before it ended the feed", c->name, why);
            rc = FEED_EPRODUCER;
            break;
        }
        if (h->closed) {
            rc = FEED_END;
            break;
        }
        if (held_back_by_self(c)) {
            feed_seterr(err, FEED_EHELD, "feed %s: this consumer still holds "
                        "batch %llu and %u more; the producer publishes at "
                        "most %u (ahead) past the oldest batch held, so "
                        "release batches (drop them, or copy what you keep) "
                        "before taking more", c->name,
                        (unsigned long long)oldest_hold(c), c->nholds - 1,
                        h->ahead);
            rc = FEED_EHELD;
            break;
        }
        if (now - c->checked_ns >= FEED_POLL_MS * 1000000ULL) {
            c->checked_ns = now;
            if (producer_gone(c, err)) {
                rc = FEED_EPRODUCER;
                break;
            }
        }
        if (timeout_ms >= 0 && now - start >= (uint64_t)timeout_ms * 1000000ULL) {
            rc = FEED_TIMEOUT;
            break;
        }
        feed_wait(h, &h->data, FEED_POLL_MS);
    }
    feed_unlock(h);
    return rc;
}

/* What is wrong with the metadata of one tensor of a batch of `rows`
 * rows in slots of slot_bytes; NULL when nothing is. */
static const char *tensor_fault(const feed_shm_tensor *t, uint64_t rows,
                                uint64_t slot_bytes) {
    if (!memchr(t->key, '\0', sizeof t->key)) return "key not terminated";
    if (t->dtype < 0 || t->dtype >= FEED_NDTYPES) return "unknown dtype";
    if (t->device != FEED_HOST && t->device != FEED_CUDA)
        return "unknown device";
    if (t->ndim < 0 || t->ndim > FEED_MAX_DIMS) return "bad ndim";
    /* a view's shape is exported as it is (Python's buffer protocol,
     * DLPack), and read over nbytes */
    uint64_t bytes;
    if (feed_tensor_bytes(t->dtype, t->ndim, t->shape, &bytes) ||
        bytes != t->nbytes)
        return "shape unlike its bytes";
    if (t->nbytes > slot_bytes || t->offset > slot_bytes - t->nbytes)
        return "bytes outside the slot";
    if (t->ndim > 0 && rows > 0 &&
        ((uint64_t)t->shape[0] != rows || t->nbytes % rows != 0))
        return "rows unlike the batch's";
    return NULL;
}

/* Copies batch pos's metadata from its slot s into c->slot and checks
 * it: whoever may write the segment may have written anything there, and
 * the views are cut by it. FEED_OK, or FEED_EINVAL with why. */
static int take_slot(feed_consumer *c, const feed_shm_slot *s,
                     feed_err *err) {
    memcpy(&c->slot, s, sizeof c->slot);
    const feed_shm_slot *m = &c->slot;
    char why[64] = "";
    if (m->ntensors > FEED_MAX_TENSORS)
        snprintf(why, sizeof why, "%u tensors", m->ntensors);
    for (uint32_t i = 0; !why[0] && i < m->ntensors; i++) {
        const char *fault = tensor_fault(&m->t[i], m->rows, c->m.slot_bytes);
        if (fault) snprintf(why, sizeof why, "tensor %u: %s", i, fault);
    }
    if (!why[0]) return FEED_OK;
    feed_seterr(err, FEED_EINVAL, "feed %s: batch %llu: corrupt metadata "
                "(%s)", c->name, (unsigned long long)c->pos, why);
    return FEED_EINVAL;
}

/* Fill out with the next view of batch pos, rows [row_off, row_off+n). */
static void make_view(feed_consumer *c, const feed_shm_slot *s,
                      feed_batch *out) {
    uint64_t total = s->rows ? s->rows : 1;
    uint64_t step = c->batch_size ? c->batch_size : total;
    uint64_t n = total - c->row_off < step ? total - c->row_off : step;
    unsigned char *host = feed_slot_data(&c->m, c->pos);
    unsigned char *dev =
        (unsigned char *)(uintptr_t)c->cuda_map[c->pos % c->m.nslots];
    out->seq = c->pos;
    out->epoch = s->epoch;
    out->index = s->index;
    out->first_row = c->row_off;
    out->rows = s->rows ? n : 0;
    out->publish_ns = s->publish_ns;
    out->ntensors = (int)s->ntensors;
    for (uint32_t i = 0; i < s->ntensors; i++) {
        const feed_shm_tensor *st = &s->t[i];
        feed_tensor *t = &out->t[i];
        memcpy(t->key, st->key, sizeof t->key);
        t->dtype = st->dtype;
        t->device = st->device;
        t->device_id = st->device == FEED_CUDA ? c->cuda_device : 0;
        t->ndim = st->ndim;
        memcpy(t->shape, st->shape, sizeof t->shape);
        unsigned char *base = (st->device == FEED_CUDA ? dev : host) +
                              st->offset;
        t->data = base;
        t->nbytes = st->nbytes;
        if (st->ndim == 0 || s->rows == 0) continue; /* scalars: as is */
        size_t row_bytes = st->nbytes / (size_t)s->rows;
        t->shape[0] = (int64_t)n;
        t->data = base + c->row_off * row_bytes;
        t->nbytes = n * row_bytes;
    }
    c->row_off += n;
    take_hold(c, c->pos);
}

/* Map the device buffer of slot s if a tensor of its batch needs it and
 * this consumer has not mapped it yet. */
static int map_slot(feed_consumer *c, const feed_shm_slot *s,
                    feed_err *err) {
    int cuda = 0;
    for (uint32_t i = 0; i < s->ntensors; i++)
        cuda |= s->t[i].device == FEED_CUDA;
    uint64_t *map = &c->cuda_map[c->pos % c->m.nslots];
    if (!cuda || *map) return FEED_OK;
    int device;
    char bus[FEED_CUDA_BUS_MAX]; /* a copy, terminated: see feed_shm.h */
    memcpy(bus, c->m.hdr->cuda_bus, sizeof bus);
    bus[sizeof bus - 1] = '\0';
    int rc = feed_cuda_open(c->name, bus, s->ipc, &device, map, err);
    if (rc != FEED_OK) return rc;
    c->cuda_device = device;
    feed_lock(c->m.hdr);
    c->rec->cuda_maps++;
    feed_unlock(c->m.hdr);
    return FEED_OK;
}

int feed_next(feed_consumer *c, feed_batch *out, int timeout_ms,
              feed_err *err) {
    for (;;) {
        if (c->slicing) {
            const feed_shm_slot *s = &c->slot;
            make_view(c, s, out);
            if (c->row_off >= (s->rows ? s->rows : 1)) {
                /* its last view is out: move on, the view's hold stays */
                c->slicing = 0;
                c->pos++;
                publish_progress(c);
            }
            return FEED_OK;
        }
        int rc = wait_published(c, timeout_ms, err);
        if (rc != FEED_OK) return rc;
        const feed_shm_slot *s = feed_slot_meta(&c->m, c->pos);
        if (s->seq != c->pos) {
            feed_seterr(err, FEED_EINVAL,
                        "feed %s: batch %llu was overwritten (slot has %llu)",
                        c->name, (unsigned long long)c->pos,
                        (unsigned long long)s->seq);
            return FEED_EINVAL;
        }
        /* The producer publishes only fewer than nslots batches past
         * the oldest any consumer holds: a batch further on was written
         * over one this consumer holds, by someone else. */
        if (c->pos - oldest_hold(c) >= c->m.nslots) {
            feed_seterr(err, FEED_EINVAL, "feed %s: batch %llu was published "
                        "over batch %llu, which this consumer still holds",
                        c->name, (unsigned long long)c->pos,
                        (unsigned long long)oldest_hold(c));
            return FEED_EINVAL;
        }
        if (s->epoch < c->start_epoch) { /* joined after its window */
            c->pos++;
            publish_progress(c);
            continue;
        }
        if (s->end_of_epoch) {
            c->pos++;
            c->start_epoch = s->epoch + 1;
            publish_progress(c);
            return FEED_EPOCH_END;
        }
        rc = take_slot(c, s, err);
        if (rc == FEED_OK) rc = map_slot(c, &c->slot, err);
        if (rc != FEED_OK) return rc;
        c->slicing = 1;
        c->row_off = 0;
        c->rec->batches++;
    }
}

uint32_t feed_user_flags(const feed_consumer *c) {
    return c->m.hdr->user_flags;
}

size_t feed_user_meta(const feed_consumer *c, void *buf) {
    /* The owner may write anything in the header at any time: clamp. */
    size_t n = c->m.hdr->user_meta_len;
    if (n > FEED_META_MAX) n = FEED_META_MAX;
    memcpy(buf, c->m.hdr->user_meta, n);
    return n;
}

void feed_consumer_id(const feed_consumer *c, uint8_t id[FEED_ID_BYTES]) {
    memcpy(id, c->rec->id, FEED_ID_BYTES);
}

/* Views of bs rows of a batch of `rows` rows: the last may be shorter. */
static uint64_t views_of(uint64_t rows, uint64_t bs) {
    return (rows + bs - 1) / bs;
}

uint64_t feed_consumer_len(const feed_consumer *c) {
    const feed_shm *h = c->m.hdr;
    uint64_t bs = c->batch_size, batches = h->epoch_batches;
    uint64_t rows = h->batch_rows, samples = h->epoch_rows;
    if (!bs || !rows) return batches;
    /* Views never straddle producer batches: every batch of an epoch but
     * the last has batch_rows rows, the last has what is left. */
    if (!batches) return 0;
    if (!samples) return batches * views_of(rows, bs);
    uint64_t before_last, len;
    /* numbers that do not fit what the producer said of its batches (or
     * overflow: the owner may write anything in the header) get the best
     * guess, never a crash */
    if (__builtin_mul_overflow(batches - 1, rows, &before_last) ||
        samples <= before_last ||
        __builtin_mul_overflow(batches - 1, views_of(rows, bs), &len))
        return views_of(samples, bs);
    return len + views_of(samples - before_last, bs);
}

uint64_t feed_consumer_epoch(const feed_consumer *c) {
    return c->start_epoch;
}

void feed_detach(feed_consumer *c) {
    if (!c) return;
    feed_shm *h = c->m.hdr;
    for (uint32_t i = 0; i < c->m.nslots; i++)
        if (c->cuda_map[i]) feed_cuda_close(c->cuda_device, c->cuda_map[i]);
    feed_lock(h);
    c->rec->in_use = 0;
    feed_wake(&h->space);
    feed_unlock(h);
    feed_shm_unmap(&c->m);
    free(c->holds);
    free(c->cuda_map);
    free(c);
}
