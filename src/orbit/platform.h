/* platform.h -- everything DIPP's runtime asks of the operating system,
 * behind one small interface so the portable core (batches, definitions,
 * slots, the runner's logic) builds unchanged for another target: a board
 * port replaces platform_posix.c, platform_forksrv_posix.c,
 * platform_sandbox_linux.c and platform_fs_posix.c only.
 *
 * Groups: time; files (whole-file read, crash-safe replace); shared memory
 * (anonymous, passed as a descriptor); loadable libraries; the fork server
 * that runs a function in sandboxed workers with a deadline and limits. */
#ifndef DIPP_PLATFORM_H
#define DIPP_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

/* ---- time ---- */
uint64_t plat_now_ms(void); /* monotonic */
uint64_t plat_now_us(void); /* the same clock, in microseconds */
/* Milliseconds from now to end, a plat_now_ms() time; 0 once past. A
 * wait that passes over messages it does not want waits what is left
 * of it, not its whole length again: else a stream of such messages
 * (damaged frames, answers to other questions) held it for as long as
 * they came. */
static inline int plat_ms_left(uint64_t end) {
    uint64_t now = plat_now_ms();
    return now >= end ? 0 : (int)(end - now);
}

/* ---- files ---- */
/* Every file the runtime keeps (slots, the update store) goes through
 * these, so a test can put a power-cut fault layer under them
 * (plat_fs_use). */
/* Reads all of path into a malloc'ed buffer (NUL-terminated, *len without
 * it). 0 or -errno. */
int plat_file_read(const char *path, uint8_t **data, size_t *len);
/* Replaces dir/name with data so that after a power cut at any moment the
 * file holds either its old or its new content: write to a temporary in
 * dir, fsync, rename over name, fsync dir. 0 or -errno. */
int plat_file_replace(const char *dir, const char *name, const void *data,
                      size_t len);
/* Writes len bytes at off into dir/name (created when missing), then
 * syncs the file and, for a new one, dir: once it returns 0 the bytes
 * survive a power cut. 0 or -errno. */
int plat_file_write_synced(const char *dir, const char *name, uint64_t off,
                           const void *data, size_t len);
/* Removes dir/name and syncs dir; a missing file is no error. 0 or -errno. */
int plat_file_remove(const char *dir, const char *name);

/* The operations above, as a table: the OS's by default. */
typedef struct plat_fs {
    int (*read)(const char *path, uint8_t **data, size_t *len);
    int (*replace)(const char *dir, const char *name, const void *data,
                   size_t len);
    int (*write_synced)(const char *dir, const char *name, uint64_t off,
                        const void *data, size_t len);
    int (*remove)(const char *dir, const char *name);
} plat_fs;
/* Routes the file operations through fs from now on; NULL: the OS's. */
void plat_fs_use(const plat_fs *fs);
/* Tests only: plat_file_replace kills its process (SIGKILL, no cleanup)
 * just before step n: 1 half the data written, 2 before fsync, 3 before
 * rename, 4 before the folder's fsync. 0 (the default) never. */
extern int plat_crash_step;

/* ---- shared memory ---- */
/* A new anonymous shared memory object of size bytes (sparse: pages cost
 * memory only once written), as a descriptor to map or pass on. */
int plat_shm_create(const char *tag, uint64_t size);
/* A new descriptor of shared memory object fd that only reads: what a
 * reader is given, since a mapping of it cannot be made writable. -errno
 * on error. */
int plat_shm_reader(int fd);
/* Maps fd's size bytes, writable or read-only. NULL on error. */
/* The size of shared memory object fd, or 0 on error. */
uint64_t plat_shm_size(int fd);
void *plat_shm_map(int fd, uint64_t size, int writable);
void plat_shm_unmap(void *p, uint64_t size);
/* Fills the page tables of the first len bytes of mapping p at once (a
 * hint: where the OS cannot, pages fault in one by one as read). */
void plat_shm_prefault(void *p, uint64_t len);
void plat_close(int fd);

/* ---- loadable libraries (modules) ---- */
void *plat_lib_open(const char *path, char *err, size_t errlen);
void *plat_lib_sym(void *lib, const char *name);

/* ---- sandboxed workers ---- */
typedef struct plat_limits {
    uint32_t timeout_ms; /* wall clock of one call, from its request to its result */
    uint64_t mem_bytes;  /* private memory the worker may add once sandboxed */
} plat_limits;

/* Enters the sandbox in a worker: memory limit, then the system call
 * filter (no open*, socket, exec, fork...). After this the worker can only
 * compute, map memory and use descriptors it holds or is sent. 0 or
 * -errno. */
int plat_sandbox_enter(const plat_limits *lim);
/* What plat_sandbox_enter's filter allows beyond the flight one, in words
 * (the sanitizer build's looser filter), or NULL. */
const char *plat_sandbox_loosening(void);

/* How a call ended. */
typedef enum plat_end {
    PLAT_END_RESULT = 0,  /* the worker sent a result */
    PLAT_END_NORESULT,    /* it exited (status) without a result */
    PLAT_END_SIGNAL,      /* killed by signal */
    PLAT_END_TIMEOUT,     /* past its deadline: killed by the watchdog */
    PLAT_END_SPAWN,       /* the fork server could not fork it */
} plat_end;

typedef struct plat_outcome {
    plat_end end;
    int status;      /* exit status or signal number */
    uint32_t ms;     /* wall time of the call */
    uint32_t calls;  /* calls the worker has served, this one included (1: new) */
    int started_on;  /* the CPU the call started on, or PLAT_CPU_ANY where it
                        was not placed (or the call never started) */
    size_t result_len;
} plat_outcome;

#define PLAT_MAX_FDS 4
#define PLAT_MAX_REQ 4096
#define PLAT_MAX_RESULT 512
#define PLAT_MAX_KEY 1200
#define PLAT_MAX_WORKERS 8

/* Runs in a worker, once per call: req is the caller's request, fds the
 * descriptors it passed (closed by the worker after the call), lim the
 * call's limits (the function enters the sandbox with them on its first
 * call), result where its result goes (at most PLAT_MAX_RESULT bytes).
 * Returns the result's length; sets *keep to 0 when the worker must end
 * after this call (a failed call: nothing of it is trusted with the next). */
typedef size_t (*plat_child_fn)(const void *req, size_t req_len,
                                const int *fds, int nfds,
                                const plat_limits *lim, void *result, int *keep);

/* The CPU the caller runs on now, or PLAT_CPU_ANY where the system cannot
 * tell. A call sent with it starts where its input was just written, so
 * the module reads that input from the CPU's cache rather than from memory
 * (docs/benchmarks.md, "DIPP's decomposition"). */
#define PLAT_CPU_ANY (-1)
int plat_cpu_now(void);

typedef struct plat_forksrv {
    int sock;  /* the caller's end */
    int pid;   /* the fork server */
} plat_forksrv;

/* Starts the fork server: a small process forked now, before the caller
 * grows, that dlopens the preload libraries (NULL-terminated list of
 * sonames; a missing one is skipped) once, so every worker has them mapped
 * before its filter. 0 or -errno.
 *
 * The server forks one worker per key (a module and its file's identity)
 * and sends it every call with that key while it lives, so a module is
 * loaded, sandboxed and given its mappings once, not once a batch. A
 * worker ends after a failed call, a crash or a timeout (the next call
 * gets a new one), when its module left a thread running after a call,
 * and when PLAT_MAX_WORKERS others are newer. */
int plat_forksrv_start(plat_forksrv *s, plat_child_fn fn,
                       const char *const *preload);
/* Runs one call in key's worker, started on CPU cpu where the worker may
 * use it (PLAT_CPU_ANY: wherever the system puts it): sends req and fds,
 * waits for its outcome. result gets at most PLAT_MAX_RESULT bytes. 0, or
 * -errno when the server is gone. */
int plat_forksrv_call(plat_forksrv *s, const char *key, const void *req,
                      size_t req_len, const int *fds, int nfds,
                      const plat_limits *lim, int cpu, plat_outcome *out,
                      void *result);
void plat_forksrv_stop(plat_forksrv *s);

#endif
