/* feed_shm.h -- the layout of a feed's shared-memory segment, shared by the
 * producer, the consumers and the admin tools (ls, gc).
 *
 *   [feed_shm header | consumer records | slot metadata ... | pad | slot data]
 *
 * Everything after `lock` marked "locked" is read and written only with
 * `lock` held; `lock` is a robust process-shared mutex, so a process killed
 * inside a critical section cannot wedge the others. Waits are Linux futexes
 * on two sequence words, not process-shared condition variables: glibc's
 * condition variable counts its waiters in the shared memory, and a waiter
 * killed inside pthread_cond_timedwait leaves a count that the next
 * broadcast waits for ever to drain. A futex keeps no state of a waiter
 * outside the kernel's queue, which drops a dead one. Each word counts
 * its sleepers beside it, under the lock, so that a change nobody waits
 * for costs no system call (feed_wake). The header is ready to use once
 * `magic` reads FEED_MAGIC (written last by the creator). */
#ifndef AEGIS_FEED_SHM_H
#define AEGIS_FEED_SHM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "feed.h"
#include "feed_cuda.h"
#include "feed_trust.h"

#define FEED_SHM_PREFIX "aegis-feed-"
#define FEED_SHM_DIR "/dev/shm/"
/* The layout's version: a peer of another layout takes the segment for
 * one not made yet (the consumer waits, ls lists it as corrupt).
 * "aegfeed4": futex words replaced the condition variables; "aegfeed5":
 * each futex word has its count of waiters. */
#define FEED_MAGIC 0x3564656566676561ULL /* "aegfeed5" */
/* Waits are cut into slices this long so a dead peer is noticed within one
 * slice: the issue asks for under a second. */
#define FEED_POLL_MS 100
#define FEED_DATA_ALIGN 64 /* tensor start alignment: a cache line, and
                              enough for any SIMD load of any dtype */

/* feed_shm.closed: how the producer ended the feed. */
enum { FEED_CLOSED = 1, FEED_FAILED = 2 };

/* A process identity that survives pid reuse: pid plus its start time. */
typedef struct {
    int32_t pid;
    uint64_t start_ticks; /* field 22 of /proc/PID/stat */
} feed_proc;

typedef struct {
    char key[FEED_KEY_MAX];
    int32_t dtype, device, ndim;
    int64_t shape[FEED_MAX_DIMS];
    uint64_t offset; /* from the start of the slot's host data or,
                        for FEED_CUDA, of its device buffer */
    uint64_t nbytes;
} feed_shm_tensor;

typedef struct {
    uint64_t seq;        /* which batch the slot holds now */
    uint64_t epoch;
    uint64_t index;      /* batch index within the epoch */
    uint64_t publish_ns;
    uint64_t rows;       /* dim 0 shared by all tensors; 0 when ndim 0 */
    uint32_t end_of_epoch; /* 1: a marker, not a batch */
    uint32_t ntensors;
    /* The slot's device buffer (slot_bytes on the feed's GPU), exported;
     * valid once a batch with a CUDA tensor used the slot. Written once,
     * before that batch is committed, and never changed: consumers cache
     * their mapping of it. */
    unsigned char ipc[FEED_CUDA_IPC_BYTES];
    feed_shm_tensor t[FEED_MAX_TENSORS];
} feed_shm_slot;

typedef struct {
    uint32_t in_use;      /* 0: free record (a dead consumer's is freed) */
    uint32_t batch_size;  /* rows per consumer batch; 0 = whole batches */
    feed_proc proc;
    uint64_t start_epoch; /* batches of earlier epochs are skipped */
    uint64_t pos;         /* sequence of the batch being read or next */
    uint64_t low;         /* oldest sequence still held (<= pos) */
    uint64_t batches;     /* producer batches read, for ls */
    uint64_t seen_ns;     /* last feed_next/feed_release, for ls */
    uint32_t cuda_maps;   /* device buffers it has mapped: feed_close
                             waits for it to unmap them */
    uint8_t id[FEED_ID_BYTES]; /* random, drawn at attach (feed_peers) */
} feed_shm_consumer;

/* A futex word and who sleeps on it (feed_wait, feed_wake). */
typedef struct {
    _Atomic uint32_t seq; /* bumped under the lock after each change a
                             waiter may wait for; read without it */
    uint32_t waiters;     /* locked: callers of feed_wait between their
                             unlock and lock; one too many for each
                             process killed there, which costs only a
                             wake for nobody */
} feed_futex;

typedef struct {
    _Atomic uint64_t magic;
    uint32_t nslots;
    uint32_t ahead, replay, min_consumers, user_flags;
    uint64_t batch_rows, epoch_batches, epoch_rows; /* see feed_config */
    uint32_t user_meta_len; /* readers clamp it to FEED_META_MAX */
    unsigned char user_meta[FEED_META_MAX];
    uint64_t slot_bytes;
    uint64_t data_offset;  /* from the segment start, page aligned */
    uint64_t total_bytes;
    feed_proc producer;
    char name[FEED_NAME_MAX + 1];
    /* PCI bus id of the GPU holding the device buffers, "" until the
     * first CUDA tensor; set before that batch is committed. */
    char cuda_bus[FEED_CUDA_BUS_MAX];

    pthread_mutex_t lock;
    feed_futex data;  /* producer -> consumers: published, closed */
    feed_futex space; /* consumers -> producer: attached, released, left */
    /* locked: */
    uint64_t head;        /* sequence the next publish gets */
    uint64_t epoch;       /* epoch of the next publish */
    uint64_t epoch_start; /* sequence of that epoch's first batch */
    uint32_t closed;      /* FEED_CLOSED or FEED_FAILED once the
                             producer closed it; 0 before */
    uint32_t started;     /* min_consumers were attached once */
    /* with closed == FEED_FAILED: what failed, as feed_fail was told
     * ("its loader raised ..."); readers clamp it to its size */
    char fail_why[FEED_WHY_MAX];
    feed_shm_consumer consumers[FEED_MAX_CONSUMERS];
    feed_shm_slot slots[]; /* nslots of them */
} feed_shm;

/* A mapped segment. Its geometry is kept here as checked when it was
 * made or opened, and never read from the header again: whoever may write
 * the segment could change it there under the reader. */
typedef struct {
    feed_shm *hdr;
    size_t size;
    uint32_t nslots;
    uint64_t slot_bytes, data_offset;
    dev_t dev; /* identity of the file, so we unlink only our own */
    ino_t ino;
    uid_t uid; /* its owner */
} feed_map;

/* Whose segment an opener accepts, judged by the owner of the file it
 * opened (fstat), never by the name: feed names are one namespace shared
 * by every user, so bob may make a segment under the name alice's jobs
 * read. A consumer reads only its own user's feeds and those of the users
 * AEGIS_FEED_TRUST names; a producer takes over only its own. (ls and
 * gc map no segment: they read a copy, see feed_admin.c.) */
enum {
    FEED_OWNER_TRUSTED, /* this process's user or one AEGIS_FEED_TRUST names */
    FEED_OWNER_SELF,    /* this process's user only */
};

int feed_name_valid(const char *name);
void feed_shm_path(char *buf, size_t len, const char *name);
uint64_t feed_now_ns(void);

/* The size of a segment of nslots slots of slot_bytes (a multiple of
 * FEED_DATA_ALIGN) each, and in *data_off where their data starts; 0 if
 * that does not fit in 64 bits. */
uint64_t feed_shm_size(uint32_t nslots, uint64_t slot_bytes,
                       uint64_t *data_off);
/* Whether a ready header describes the size-byte segment it heads, as its
 * creator wrote it: 0, else -1 with why it does not in why. For readers of
 * a segment whose owner may have written anything there. */
int feed_shm_check(const feed_shm *h, uint64_t size, char *why, size_t len);

/* Create a fresh segment (O_EXCL) sized for cfg and map it; the header is
 * initialised except for magic, which feed_shm_publish_ready sets. */
int feed_shm_create(feed_map *m, const feed_config *cfg, feed_err *err);
void feed_shm_publish_ready(feed_map *m);
/* Map an existing ready segment whose owner `owners` (FEED_OWNER_*)
 * accepts. FEED_ENOENT if absent or not ready yet; FEED_EPERM, naming the
 * owner, if it belongs to a user not accepted or cannot be opened for
 * want of permission. */
int feed_shm_open(feed_map *m, const char *name, int owners, feed_err *err);
void feed_shm_unmap(feed_map *m);
/* Unlink NAME only if it is still the segment m maps. Returns 0 when it
 * did, else an errno (ESTALE: the name is another segment's by now). */
int feed_shm_unlink_if_ours(const feed_map *m, const char *name);


void feed_lock(feed_shm *h);
void feed_unlock(feed_shm *h);
/* Called locked: let go of the lock, sleep until f's word changes from
 * what it is now (feed_wake) or ms milliseconds pass, take the lock
 * again. Spurious returns happen; callers re-check their condition. */
void feed_wait(feed_shm *h, feed_futex *f, int ms);
/* Called locked, after a change waiters on f wait for: bump its word and
 * wake them all, when there are any. */
void feed_wake(feed_futex *f);

feed_proc feed_proc_self(void);
int feed_proc_alive(const feed_proc *p);

unsigned char *feed_slot_data(const feed_map *m, uint64_t seq);
feed_shm_slot *feed_slot_meta(const feed_map *m, uint64_t seq);
/* Whether the producer may write sequence `head` while the oldest batch
 * any consumer holds is `low`: at most ahead - 1 batches since low, not
 * counting end-of-epoch markers, so that a consumer holding the last batch
 * of an epoch while it waits for the next one cannot stall the feed
 * (ahead + 1 slots fit one marker); and fewer than nslots sequences, so
 * nobody holds the slot's previous batch. Locked. */
int feed_has_space(const feed_map *m, uint64_t low);

/* Consumers announced (feed_announce.c) for feed `name` whose process lives and holds no
 * record of h yet; locked. Removes dead processes' announcements. */
int feed_announced(const char *name, const feed_shm *h);
/* How long a producer holds its first batch for announced consumers that
 * have not attached: they find the segment within milliseconds, so only
 * a stopped or starved one takes this long. */
#define FEED_ANNOUNCE_MS 5000

void feed_seterr(feed_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
