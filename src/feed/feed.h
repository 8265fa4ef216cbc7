/* feed.h -- the shared data feed: one producer, many zero-copy consumers.
 *
 * A producer publishes batches (one or more tensors: dtype, shape, bytes)
 * into a ring of slots in one POSIX shared-memory segment named
 * /dev/shm/aegis-feed-NAME. Consumer processes attach by NAME and read the
 * batches in place. The one idea to hold: every batch has a global sequence
 * number; a consumer's position and the oldest batch it still holds are
 * published in the segment, and the producer never writes a slot whose
 * sequence some live consumer may still read (backpressure), nor runs more
 * than `ahead` batches past the slowest live consumer.
 *
 * Ownership: feed_create()/feed_attach() return handles the caller owns and
 * frees with feed_close()/feed_detach(). Tensor data pointers in a
 * feed_batch point into the shared segment and stay valid until the batch is
 * released with feed_release() (or the consumer detaches). Errors fill a
 * caller-owned feed_err with a code and a message naming the feed.
 *
 * GPU batches (CUDA IPC): each ring slot also owns one device buffer of
 * slot_bytes, allocated by the producer the first time a CUDA tensor goes
 * into that slot and freed by feed_close; the producer copies CUDA tensors
 * into it. Consumers map each slot's buffer once (cached until
 * feed_detach, which unmaps them all), and read it in place: a CUDA
 * tensor's data in a feed_batch is a device address in the consumer's
 * process, valid under the same hold as host data. */
#ifndef AEGIS_FEED_H
#define AEGIS_FEED_H

#include <stddef.h>
#include <stdint.h>

#define FEED_MAX_TENSORS 16 /* tuple/dict entries per batch: (x, y, ids...) */
#define FEED_MAX_DIMS 8     /* enough for NCHW video batches and more */
#define FEED_KEY_MAX 32     /* dict key length, NUL included */
#define FEED_NAME_MAX 48    /* feed name length, NUL excluded */
#define FEED_MAX_CONSUMERS 64 /* far above the jobs one server collocates */
#define FEED_META_MAX 256   /* bytes of a producer's description (user_meta) */
#define FEED_ID_BYTES 16    /* a consumer's id: random, a UUID's size */
#define FEED_WHY_MAX 160    /* what failed (feed_fail), NUL included */

/* Return codes. Non-negative codes are outcomes, negative ones errors. */
enum {
    FEED_OK = 0,
    FEED_EPOCH_END = 1, /* feed_next: the epoch is over for this consumer */
    FEED_END = 2,       /* feed_next: the producer closed the feed */
    FEED_TIMEOUT = 3,   /* a bounded wait ran out; call again */
    FEED_ESYS = -1,     /* a system call failed (errno in the message) */
    FEED_EINVAL = -2,   /* bad argument */
    FEED_ENOENT = -3,   /* no such feed */
    FEED_EEXIST = -4,   /* a live producer already owns this name */
    FEED_EPRODUCER = -5, /* the producer died */
    FEED_ETOOBIG = -6,  /* a batch does not fit in a slot */
    FEED_EFULL = -7,    /* all consumer records are taken */
    FEED_ECUDA = -8,    /* CUDA is absent or a driver call failed (the
                           message names the call and CUDA's error) */
    FEED_EPERM = -9,    /* the segment belongs to a user not trusted */
    FEED_ENOCONSUMER = -10, /* consumer_wait_ms passed with too few
                               consumers attached */
    FEED_EHELD = -11,   /* feed_next: this consumer holds so many batches
                           that the producer cannot publish the next */
};

typedef struct {
    int code;
    char msg[256];
} feed_err;

/* Element types; the numbering is ours, the Python module maps it to numpy
 * format characters and DLPack codes. */
typedef enum {
    FEED_U8, FEED_I8, FEED_I16, FEED_I32, FEED_I64,
    FEED_F16, FEED_BF16, FEED_F32, FEED_F64, FEED_BOOL,
    FEED_NDTYPES
} feed_dtype;

size_t feed_dtype_size(int dtype);

/* The bytes a tensor of this dtype and shape holds, into *bytes: 0, or -1
 * where the dtype is unknown, ndim is outside 0..FEED_MAX_DIMS, a
 * dimension is negative or the product does not fit 64 bits. */
int feed_tensor_bytes(int dtype, int ndim, const int64_t *shape,
                      uint64_t *bytes);

/* Where a tensor's bytes live. Host tensors travel inside the slot's shared
 * memory, CUDA tensors inside the slot's device buffer. A build without the
 * CUDA headers, or a process without a driver, refuses CUDA tensors with
 * FEED_ECUDA and the reason. */
enum { FEED_HOST = 0, FEED_CUDA = 1 };

typedef struct {
    char key[FEED_KEY_MAX];   /* dict key; "" for tuple members */
    int dtype;                /* feed_dtype */
    int device;               /* FEED_HOST or FEED_CUDA */
    int device_id;            /* CUDA device ordinal (this process's) */
    int ndim;                 /* 0..FEED_MAX_DIMS; dim 0 is the batch dim */
    int64_t shape[FEED_MAX_DIMS];
    void *data;               /* host or device address; borrowed */
    size_t nbytes;            /* bytes of this (view of the) tensor */
} feed_tensor;

/* A consumer batch: a view of rows [first_row, first_row + rows) of one
 * producer batch. */
typedef struct {
    uint64_t seq;       /* the producer batch's sequence number */
    uint64_t epoch;     /* epoch it belongs to, from 0 */
    uint64_t index;     /* producer batch index within the epoch */
    uint64_t first_row; /* first row of the view within the producer batch */
    uint64_t rows;      /* rows in the view (the consumer batch size, or
                           fewer at the end of a producer batch) */
    uint64_t publish_ns; /* CLOCK_MONOTONIC time the producer published it */
    int ntensors;
    feed_tensor t[FEED_MAX_TENSORS];
} feed_batch;

typedef struct {
    const char *name;     /* feed name: [A-Za-z0-9._-], 1..FEED_NAME_MAX */
    uint32_t slots;       /* ring slots; raised to max(ahead, replay) + 1 */
    uint64_t slot_bytes;  /* host bytes per slot, for all tensors + padding */
    uint32_t ahead;       /* K: most batches published past the slowest
                             live consumer's oldest hold */
    uint32_t replay;      /* rubber band: batches of an epoch a late joiner
                             may still replay */
    uint32_t min_consumers; /* the first publish waits for this many (at
                             least 1); later ones for any one: a consumer
                             that dies or leaves never stops the others */
    uint32_t user_flags;  /* opaque to the library; the Python module keeps
                             the batch kind (tuple/dict, numpy/torch) here */
    int consumer_wait_ms; /* > 0: a publish fails with FEED_ENOCONSUMER once
                             it has waited this long for the consumers it
                             needs; 0: it waits for them for ever */
    /* What the producer knows of its batches, 0 where it does not: */
    uint64_t batch_rows;    /* rows of a full producer batch; consumers
                               must take a batch size dividing it */
    uint64_t epoch_batches; /* producer batches per epoch */
    uint64_t epoch_rows;    /* samples per epoch */
    /* Opaque to the library, like user_flags: up to FEED_META_MAX bytes
     * the producer leaves for its consumers to read (the Python module
     * keeps what TensorSocket's consumers are told there: the loader's
     * length and batch size). */
    const void *user_meta;
    size_t user_meta_len;
} feed_config;

/* A live consumer as its producer sees it. */
typedef struct {
    uint8_t id[FEED_ID_BYTES]; /* drawn at attach: feed_consumer_id's */
    int32_t pid;
    uint32_t batch_size;       /* 0: whole producer batches */
    uint64_t batches;          /* producer batches it has read */
} feed_peer;

typedef struct feed_producer feed_producer;
typedef struct feed_consumer feed_consumer;

/* Producer. feed_create makes the segment (replacing one of this user's
 * whose producer is dead) and forks a small janitor process that unlinks
 * it if this process dies without feed_close. A name whose segment belongs
 * to another user is refused with FEED_EPERM, naming that user: feed names
 * are one namespace for all users. */
feed_producer *feed_create(const feed_config *cfg, feed_err *err);
/* Copy one batch into the next slot. Blocks (at most timeout_ms, < 0 for no
 * limit) for backpressure. Tensors must share dim 0 (the rows). CUDA
 * tensors must be C-contiguous, all on one device for the feed's life, and
 * complete (the caller has synchronised the stream that wrote them); the
 * copy is complete when feed_publish returns, so the caller may reuse its
 * memory at once. */
int feed_publish(feed_producer *p, const feed_tensor *t, int n,
                 int timeout_ms, feed_err *err);
/* Mark the end of the current epoch; the next publish starts a new one. */
int feed_end_epoch(feed_producer *p, int timeout_ms, feed_err *err);
/* Tell consumers the stream is over, unlink the segment, free p. With
 * device buffers, first wait until every consumer that mapped them has
 * detached or died: freeing memory another process still maps is
 * undefined in CUDA. */
void feed_close(feed_producer *p);
/* feed_close() for a producer whose source failed (its loader raised):
 * its consumers read what was published, then feed_next() gives them
 * FEED_EPRODUCER saying so, not FEED_END, so a cut epoch is never taken
 * for a whole one. `why` (cut to FEED_WHY_MAX - 1 bytes; NULL: "its
 * source failed") says what failed, e.g. "pack_fn raised ValueError: x",
 * and their error quotes it. */
void feed_fail(feed_producer *p, const char *why);
/* Live consumers right now (after reaping dead ones). */
int feed_consumers(feed_producer *p);
/* The live consumers (after reaping dead ones), at most max of them into
 * out, in the order of their records; returns how many it wrote. */
int feed_peers(feed_producer *p, feed_peer *out, int max);

/* Consumer. batch_size 0 means whole producer batches; otherwise each
 * producer batch is cut into views of batch_size rows, the last one of a
 * batch shorter where batch_size does not divide it. A batch_size larger
 * than the producer's batch_rows is FEED_EINVAL, saying so (unchecked
 * where the producer did not give batch_rows). Waits up to timeout_ms (< 0: forever) for
 * the feed to appear. Reads only a segment owned (by the opened file's
 * owner, not by its name) by this process's user or by one the environment
 * variable AEGIS_FEED_TRUST names (user names or uids, comma-separated);
 * another user's is refused with FEED_EPERM, naming that user, so nobody
 * can feed another user's jobs data of his own under their feed's name. */
feed_consumer *feed_attach(const char *name, uint32_t batch_size,
                           int timeout_ms, feed_err *err);
/* While feed_attach waits for a feed not made yet, it announces this
 * process as a consumer of it (feed_announce), and a producer then made
 * holds its first batch (at most 5 s) until every announced consumer has
 * attached, so that all of them start with epoch 0. feed_announce returns
 * 1 if it made the announcement, which its maker withdraws with
 * feed_unannounce; 0 if there was one already (or it could not be made:
 * it is a hint). A caller that waits in a loop of short feed_attach calls
 * announces around the loop, so it stays counted between them;
 * feed_attach withdraws only the announcement it made. */
int feed_announce(const char *name);
void feed_unannounce(const char *name);
/* Next batch. FEED_OK fills *out and takes a hold on out->seq that lasts
 * until feed_release(c, out->seq); FEED_EPOCH_END, FEED_END, FEED_TIMEOUT or
 * an error code otherwise. */
int feed_next(feed_consumer *c, feed_batch *out, int timeout_ms,
              feed_err *err);
void feed_release(feed_consumer *c, uint64_t seq);
uint32_t feed_user_flags(const feed_consumer *c);
/* The producer's user_meta: copies it into buf (FEED_META_MAX bytes) and
 * returns its length. */
size_t feed_user_meta(const feed_consumer *c, void *buf);
/* This consumer's id, the one its producer's feed_peers shows. */
void feed_consumer_id(const feed_consumer *c, uint8_t id[FEED_ID_BYTES]);
/* Batches this consumer gets per epoch at its batch size, from what the
 * producer said of its epoch; 0 if it said nothing. */
uint64_t feed_consumer_len(const feed_consumer *c);
/* The epoch this consumer is in or will start with. */
uint64_t feed_consumer_epoch(const feed_consumer *c);
/* Release every hold, unmap the device buffers, free the consumer record,
 * free c. */
void feed_detach(feed_consumer *c);

#endif
