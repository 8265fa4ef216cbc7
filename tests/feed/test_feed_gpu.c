/* test_feed_gpu.c -- CUDA IPC end to end, on a machine with a GPU; exits
 * 77 (ctest: skipped) where the driver cannot be loaded or sees no GPU.
 *
 * The parent produces two epochs of mixed batches (x on the GPU, ids in
 * host memory) through a ring of 3 slots (ahead 2, plus one for an epoch
 * marker), so every slot's device buffer is rewritten many times and each
 * consumer's cached mapping is reused. The
 * consumers are fresh processes (fork then exec of this binary with
 * `consume NAME BATCH_SIZE`): CUDA does not survive a fork, and IPC handles
 * cannot be opened by the process that exported them. Each consumer copies
 * x back to the host and checks it against ids, so a batch overwritten
 * under a hold, or a stale mapping, shows as wrong rows. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "feed.h"
#include "feed_cuda.h"

#define ROWS 128 /* producer batch size */
#define COLS 4
#define BATCHES 8 /* per epoch */
#define EPOCHS 2
#define SKIP 77

static int fail(const char *what, const feed_err *err) {
    fprintf(stderr, "test_feed_gpu: %s: %s\n", what, err ? err->msg : "");
    return 1;
}

/* Child: read every epoch; 0 if each row of x matches its id. */
static int consume(const char *name, uint32_t batch_size) {
    feed_err err;
    feed_consumer *c = feed_attach(name, batch_size, 10000, &err);
    if (!c) return fail("feed_attach", &err);
    static float x[ROWS][COLS];
    int rc = 0;
    for (int e = 0; e < EPOCHS && !rc; e++) {
        feed_batch b;
        int n = 0;
        const unsigned char *prev_end = NULL;
        while (!rc && (rc = feed_next(c, &b, 10000, &err)) == FEED_OK) {
            const feed_tensor *tx = &b.t[0], *ids = &b.t[1];
            if (tx->device != FEED_CUDA || ids->device != FEED_HOST)
                return fail("devices of x and ids", NULL);
            /* views of one producer batch are windows of one mapping */
            if (b.first_row && tx->data != prev_end)
                return fail("a view is not the next window (a copy?)", NULL);
            prev_end = (const unsigned char *)tx->data + tx->nbytes;
            rc = feed_cuda_copy(name, tx->device_id, (uint64_t)(uintptr_t)x,
                                (uint64_t)(uintptr_t)tx->data, tx->nbytes,
                                &err);
            if (rc) return fail("copy x back to the host", &err);
            for (uint64_t r = 0; r < b.rows; r++) {
                int64_t id = ((const int64_t *)ids->data)[r];
                if (x[r][1] != (float)(id * 10 + 1))
                    return fail("x does not match ids", NULL);
            }
            n += (int)b.rows;
            feed_release(c, b.seq);
        }
        if (rc != FEED_EPOCH_END || n != ROWS * BATCHES)
            return fail("epoch incomplete", &err);
        rc = 0;
    }
    feed_detach(c); /* closes each mapping; feed_close waits for this */
    return rc;
}

static pid_t spawn(const char *self, const char *name, const char *bs) {
    pid_t pid = fork();
    if (pid == 0) {
        execl(self, self, "consume", name, bs, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static int produce(const char *name, int device) {
    feed_err err;
    feed_config cfg = {.name = name, .slots = 2, .ahead = 2,
                       .slot_bytes = 64 * 1024, .min_consumers = 2};
    feed_producer *p = feed_create(&cfg, &err);
    if (!p) return fail("feed_create", &err);
    /* The source tensor on the GPU, as a training pipeline would hold. */
    uint64_t src;
    unsigned char ipc[FEED_CUDA_IPC_BYTES];
    static float x[ROWS][COLS];
    static int64_t ids[ROWS];
    if (feed_cuda_alloc(name, device, sizeof x, &src, ipc, &err))
        return fail("allocate the source", &err);
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len < 0) return fail("readlink /proc/self/exe", NULL);
    self[len] = '\0';
    pid_t kids[2] = {spawn(self, name, "32"), spawn(self, name, "0")};
    int rc = 0;
    for (int e = 0; e < EPOCHS && !rc; e++) {
        for (int i = 0; i < BATCHES && !rc; i++) {
            for (int r = 0; r < ROWS; r++) {
                ids[r] = (int64_t)i * ROWS + r;
                for (int col = 0; col < COLS; col++)
                    x[r][col] = (float)(ids[r] * 10 + col);
            }
            rc = feed_cuda_copy(name, device, src, (uint64_t)(uintptr_t)x,
                                sizeof x, &err);
            feed_tensor t[2] = {
                {.key = "x", .dtype = FEED_F32, .device = FEED_CUDA,
                 .device_id = device, .ndim = 2, .shape = {ROWS, COLS},
                 .data = (void *)(uintptr_t)src, .nbytes = sizeof x},
                {.key = "ids", .dtype = FEED_I64, .ndim = 1,
                 .shape = {ROWS}, .data = ids, .nbytes = sizeof ids},
            };
            if (!rc) rc = feed_publish(p, t, 2, 30000, &err);
        }
        if (!rc) rc = feed_end_epoch(p, 30000, &err);
    }
    if (rc) fail("publish", &err);
    /* Close while the consumers may still be reading: it must wait for
     * them to unmap before it frees the slots' device buffers. */
    feed_close(p);
    for (int i = 0; i < 2; i++) {
        int st;
        waitpid(kids[i], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st)) {
            fprintf(stderr, "test_feed_gpu: consumer %d failed (status %d)\n",
                    i, st);
            rc = 1;
        }
    }
    feed_cuda_free(device, src);
    return rc != 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "consume"))
        return consume(argv[2], (uint32_t)atoi(argv[3]));
    feed_err err;
    char name[64], bus[FEED_CUDA_BUS_MAX];
    snprintf(name, sizeof name, "gpu%d", (int)getpid());
    if (feed_cuda_load(name, &err) || feed_cuda_bus_id(name, 0, bus, &err)) {
        printf("skipped: %s\n", err.msg);
        return SKIP;
    }
    printf("cuda:0 is %s\n", bus);
    int rc = produce(name, 0);
    printf("%s\n", rc ? "FAIL" : "ok: 2 consumers, 2 epochs, 3-slot ring");
    return rc;
}
