/* tgpu.h -- the state the test GPUs share: their shape, read from the
 * environment, and the allocation files fake jobs leave in a folder.
 *
 * The stand-in NVML library (testnvml.c) reads this state and the fake
 * training job (fakegpu.c) writes it; they never talk otherwise, so a test
 * can run any number of both. State files, all in $AEGIS_TEST_GPU_DIR:
 *
 *   gpu<i>.<pid>   one allocation: "<MiB> <smact>[ <gi> <ci>][ mps]\n",
 *                  e.g. "1000 0.5000", with <gi> and <ci> the MIG GPU and
 *                  compute instance it is charged to when the job was given
 *                  a MIG device, and "mps" when the job is an MPS client
 *                  (NVML lists it in the MPS process list, not the
 *                  compute one);
 *                  written to a dot-named temp file and renamed into place,
 *                  so a reader sees a whole file or none
 *   energy<i>      GPU i's energy counter: "<unix ns> <mJ> <mW>\n" (time of
 *                  the last update, energy so far, power since then)
 *   mig<i>         GPU i's MIG state (testmig.c): "mode <0|1>", "pending
 *                  <0|1>" while a mode change waits, then
 *                  "gi <id> <profileId> <start> <MiB>" and "ci <gi id>
 *                  <ci id> <ci profileId>" lines
 *   lock           flock()ed while a job checks and writes its allocation,
 *                  and while a reader updates an energy counter
 *   stall          while it exists, every NVML query of a GPU waits, as a
 *                  real one does while its GPU recovers (a reset after an
 *                  Xid error takes seconds); the first query held makes
 *                  `stalled`, and removes it when let go, so that a test
 *                  knows its caller is held
 *
 * An allocation whose pid no longer exists is ignored and removed by the
 * next reader: a job killed with SIGKILL cannot clean up after itself.
 */
#ifndef AEGIS_TGPU_H
#define AEGIS_TGPU_H

#include <stddef.h>
#include <sys/types.h>

/* GPUs one test server may have; the daemon's core manages at most 64. */
#define TGPU_MAX_GPUS 64

/* Largest GPU memory accepted, MiB (16 TiB): far past any real GPU, and
 * small enough that bytes fit an unsigned long long with room to spare. */
#define TGPU_MAX_MIB (1L << 24)

/* Allocations one scan reports per GPU; more are summed but not listed. A
 * test GPU holds a handful of fake jobs, never hundreds. */
#define TGPU_MAX_ALLOCS 256

/* AEGIS_TEST_GPUS when the environment does not set it: the 3 x A100-40GB
 * server the AEGIS measurements were taken on. */
#define TGPU_DEFAULT_SHAPE "3x40960"

#define TGPU_UUID_PREFIX "GPU-aegis-test-0000-"
/* A MIG device's UUID: this, then "<gpu>-<gi id>-<ci id>". */
#define TGPU_MIG_UUID_PREFIX "MIG-aegis-test-"
#define TGPU_NAME "aegis test GPU"

typedef struct tgpu_config {
    int ngpus;
    long mib;               /* memory of each GPU */
    char dir[4096];         /* $AEGIS_TEST_GPU_DIR */
} tgpu_config;

typedef struct tgpu_alloc {
    pid_t pid;
    long mib;
    double smact;           /* 0..1: the share of SMs this job keeps busy */
    int mig_gi;             /* the MIG GPU instance it is charged to; 0:
                               the whole GPU (GI ids start at 1) */
    int mig_ci;             /* with mig_gi: its compute instance */
    int mps;                /* 1: an MPS client */
} tgpu_alloc;

typedef struct tgpu_usage {
    long used_mib;          /* sum over live allocations */
    double smact;           /* sum over live allocations, not capped */
    int nallocs;            /* live allocations, listed or not */
} tgpu_usage;

/* Parses "<count>x<MiB>" into *ngpus and *mib. Returns 0, or -1 with a
 * message naming the value in err. */
int tgpu_parse_shape(const char *spec, int *ngpus, long *mib, char *err,
                     size_t errlen);

/* Fills c from AEGIS_TEST_GPUS (default TGPU_DEFAULT_SHAPE) and
 * AEGIS_TEST_GPU_DIR (required, an existing folder). Returns 0, or -1 with
 * a message in err. */
int tgpu_config_load(tgpu_config *c, char *err, size_t errlen);

/* Lists GPU `gpu`'s live allocations into out (up to max; out may be NULL
 * when max is 0) and sums all of them into *sum, removing the files of
 * dead processes. Returns the number listed, or -1 (errno set) when the
 * folder cannot be read. */
int tgpu_scan(const tgpu_config *c, int gpu, tgpu_alloc *out, int max,
              tgpu_usage *sum);

/* Replaces the file `name` in the state folder with `text`, atomically.
 * Returns 0, or -1 with errno set. */
int tgpu_write_file(const tgpu_config *c, const char *name, const char *text);

int tgpu_alloc_write(const tgpu_config *c, int gpu, const tgpu_alloc *a);
void tgpu_alloc_remove(const tgpu_config *c, int gpu, pid_t pid);

/* Takes the folder's lock, waiting for it. Returns a descriptor to close()
 * to release it, or -1 with errno set. */
int tgpu_lock(const tgpu_config *c);

/* Holds the caller while the folder's `stall` file exists (above). */
void tgpu_stall(const tgpu_config *c);

/* A stand-in library's last failure, said in full: tgpu_fail() records it
 * and returns rc; tgpu_why(rc) gives it back while rc is the last failure's
 * code (else NULL), so the library's error-string call can name the cause
 * (a missing AEGIS_TEST_GPU_DIR, say) where the real one names the code. */
int tgpu_fail(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *tgpu_why(int rc);

/* GPU i's UUID, TGPU_UUID_PREFIX followed by i. */
void tgpu_uuid(int gpu, char *buf, size_t len);

/* The GPU a CUDA_VISIBLE_DEVICES entry names (a UUID from tgpu_uuid or an
 * index), or -1 when it names none of c's GPUs. */
int tgpu_find(const tgpu_config *c, const char *entry);

/* The MIG device a CUDA_VISIBLE_DEVICES entry names (TGPU_MIG_UUID_PREFIX
 * form): 0 with its GPU, GPU and compute instance ids and memory (MiB)
 * when mig<gpu> holds that compute instance, else -1. */
int tgpu_mig_find(const tgpu_config *c, const char *entry, int *gpu,
                  int *gi, int *ci, long *mib);

#endif
