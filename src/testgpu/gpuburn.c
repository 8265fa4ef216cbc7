/* gpuburn.c -- aegis-gpuburn, a training job on a real GPU without PyTorch.
 *
 * It does on NVIDIA hardware what aegis-fakegpu does on the test GPUs, with
 * the same options, first line and out-of-memory error, so a test or an
 * example switches between the two by name: it takes --mib MiB with
 * cuMemAlloc on every device CUDA_VISIBLE_DEVICES leaves it, and keeps them
 * busy at about --smact for --seconds. NVML then sees what it would see of
 * a training job: a compute process holding memory, kernels running part
 * of the time, power drawn.
 *
 * Busy "at about --smact" is a duty cycle: every BURN_PERIOD_S each device
 * runs the spin kernel (gpuburn_spin.ptx) for smact of the period on one
 * warp per SM, which is what DCGM's SMACT counts (the share of time an SM
 * has a warp), and idles for the rest.
 *
 * The driver is loaded at run time (dlopen of libcuda.so.1, or of
 * $AEGIS_CUDA_LIBRARY: tests use a stand-in), so this builds anywhere and
 * says plainly, exit 77, where there is no driver or no GPU.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudrv.h"
#include "gpuburn_ptx.h" /* gpuburn_spin_ptx: gpuburn_spin.ptx, generated */
#include "jobargs.h"

#define BURN_PERIOD_S 0.1       /* one duty cycle: fine for 1 s sampling */
#define BURN_MAX_DEVICES 64     /* CUDA devices one job uses at most */
#define BURN_MAX_MIB (1L << 24) /* --mib at most: 16 TiB, past any GPU */
#define BURN_BLOCK_THREADS 32   /* one warp per block, one block per SM */
#define BURN_EXIT_NO_GPU 77     /* no driver, or the driver sees no GPU */

static const char usage[] =
    "usage: aegis-gpuburn --mib M --seconds S [--smact X] [--oom-over]\n"
    "                     [--until FILE] [--linger FILE]\n"
    "\n"
    "Behaves like a training job on real NVIDIA GPUs, without PyTorch:\n"
    "takes M MiB with cuMemAlloc on each CUDA device it sees (those of\n"
    "CUDA_VISIBLE_DEVICES), keeps them busy at SMACT X (0..1, default 0.5:\n"
    "a spin kernel on every SM for that share of each 0.1 s) for S\n"
    "seconds, then frees them and exits 0. When M MiB do not fit it prints\n"
    "PyTorch's CUDA out-of-memory error and exits 1. With --oom-over the\n"
    "job's peak comes later: halfway through it asks for M MiB more, and\n"
    "fails then if they do not fit. With --until FILE it runs on past S\n"
    "seconds until FILE exists, and asks for --oom-over's M MiB more only\n"
    "once it exists. SIGTERM frees the memory and exits 143 (SIGINT:\n"
    "130); with --linger FILE, only once FILE exists. The options are\n"
    "aegis-fakegpu's, and so is the first line of stdout:\n"
    "  aegis-gpuburn: devices=... mps_pipe=DIR|- threads=PCT|- pinned=...|-\n"
    "\n"
    "The CUDA driver is loaded at run time: libcuda.so.1, or the library\n"
    "$AEGIS_CUDA_LIBRARY names. The kernel is PTX the driver compiles.\n"
    "\n"
    "exit status: 0 done, 1 out of memory or a CUDA error, 2 bad usage,\n"
    "77 no usable CUDA driver or no GPU (the reason on stderr).\n";

/* One CUDA device of the job. */
typedef struct burn_device {
    cudrv_device dev;
    cudrv_context ctx;          /* its primary context, retained */
    cudrv_module module;        /* the spin kernel, JIT-compiled for it */
    cudrv_function spin;
    unsigned int sms;           /* multiprocessors: the kernel's grid */
    int nbufs;
    cudrv_ptr bufs[2];          /* --mib, and --oom-over's second --mib */
} burn_device;

typedef struct burn_job {
    job_args a;
    cudrv_api cu;
    const char *lib;            /* the driver's path, for messages */
    int ndevs;                  /* devices set up so far */
    burn_device devs[BURN_MAX_DEVICES];
    long held_mib;              /* MiB held on each device */
} burn_job;

/* "CUDA_ERROR_X (what it means)" for rc. */
static void burn_describe(const burn_job *job, cudrv_result rc, char *buf,
                          size_t len) {
    const char *name = NULL, *what = NULL;
    if (job->cu.get_error_name && job->cu.get_error_name(rc, &name) != 0)
        name = NULL;
    if (job->cu.get_error_string && job->cu.get_error_string(rc, &what) != 0)
        what = NULL;
    if (name)
        snprintf(buf, len, "%s (%s)", name, what ? what : "no description");
    else
        snprintf(buf, len, "CUDA error %u", rc);
}

/* Says that `call` failed on device k (-1: before any device), as PyTorch
 * reports a CUDA error; returns `status`, the exit status to use. */
static int burn_fail(const burn_job *job, const char *call, int k,
                     cudrv_result rc, int status) {
    char what[160], where[32] = "";
    burn_describe(job, rc, what, sizeof what);
    if (k >= 0)
        snprintf(where, sizeof where, " on device %d", k);
    fprintf(stderr, "RuntimeError: CUDA error: %s (aegis-gpuburn: %s%s, "
            "driver %s)\n", what, call, where, job->lib);
    return status;
}

/* Loads the driver and initialises it. Returns 0, or BURN_EXIT_NO_GPU
 * after saying why there is no usable driver. */
static int burn_load_driver(burn_job *job) {
    static const struct {
        const char *name;
        size_t slot;
    } syms[] = {
#define BURN_SYM(member, symbol) {#symbol, offsetof(cudrv_api, member)},
        CUDRV_CALLS(BURN_SYM)
#undef BURN_SYM
    };
    job->lib = getenv("AEGIS_CUDA_LIBRARY");
    if (!job->lib || !*job->lib)
        job->lib = "libcuda.so.1";
    void *lib = dlopen(job->lib, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        fprintf(stderr, "aegis-gpuburn: no CUDA driver: %s (is the NVIDIA "
                "driver installed?)\n", why ? why : job->lib);
        return BURN_EXIT_NO_GPU;
    }
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *addr = dlsym(lib, syms[i].name);
        if (!addr) {
            fprintf(stderr, "aegis-gpuburn: no usable CUDA driver: %s has no "
                    "%s (not a CUDA driver, or older than CUDA 11)\n",
                    job->lib, syms[i].name);
            return BURN_EXIT_NO_GPU;
        }
        /* POSIX guarantees data and function pointers convert via dlsym. */
        memcpy((char *)&job->cu + syms[i].slot, &addr, sizeof addr);
    }
    int count = 0;
    cudrv_result rc = job->cu.init(0);
    if (rc == CUDRV_SUCCESS)
        rc = job->cu.device_get_count(&count);
    if (rc != CUDRV_SUCCESS)
        return burn_fail(job, "cuInit", -1, rc, BURN_EXIT_NO_GPU);
    if (count < 1) {
        fprintf(stderr, "aegis-gpuburn: the CUDA driver %s sees no GPU "
                "(CUDA_VISIBLE_DEVICES=%s)\n", job->lib,
                getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES")
                                               : "unset");
        return BURN_EXIT_NO_GPU;
    }
    job->ndevs = count < BURN_MAX_DEVICES ? count : BURN_MAX_DEVICES;
    return 0;
}

/* Makes device k's context current. Returns 0, or the exit status. */
static int burn_use(const burn_job *job, int k) {
    cudrv_result rc = job->cu.ctx_set_current(job->devs[k].ctx);
    return rc == CUDRV_SUCCESS ? 0 : burn_fail(job, "cuCtxSetCurrent", k, rc, 1);
}

/* Retains device k's primary context and compiles the spin kernel there.
 * Returns 0, or the exit status after saying what failed. */
static int burn_open_device(burn_job *job, int k) {
    burn_device *d = &job->devs[k];
    int sms = 0;
    cudrv_result rc = job->cu.device_get(&d->dev, k);
    if (rc != CUDRV_SUCCESS)
        return burn_fail(job, "cuDeviceGet", k, rc, 1);
    rc = job->cu.device_get_attribute(
        &sms, CUDRV_ATTRIBUTE_MULTIPROCESSOR_COUNT, d->dev);
    if (rc != CUDRV_SUCCESS)
        return burn_fail(job, "cuDeviceGetAttribute", k, rc, 1);
    d->sms = sms > 0 ? (unsigned)sms : 1;
    rc = job->cu.primary_ctx_retain(&d->ctx, d->dev);
    if (rc != CUDRV_SUCCESS) {
        d->ctx = NULL;
        return burn_fail(job, "cuDevicePrimaryCtxRetain", k, rc, 1);
    }
    int status = burn_use(job, k);
    if (status)
        return status;
    rc = job->cu.module_load_data(&d->module, gpuburn_spin_ptx);
    if (rc != CUDRV_SUCCESS) {
        d->module = NULL;
        return burn_fail(job, "cuModuleLoadData (the spin kernel's PTX)", k,
                         rc, 1);
    }
    rc = job->cu.module_get_function(&d->spin, d->module, "aegis_spin");
    return rc == CUDRV_SUCCESS
               ? 0 : burn_fail(job, "cuModuleGetFunction aegis_spin", k, rc, 1);
}

/* Takes `mib` more MiB on every device. Returns 0, or 1 after printing
 * PyTorch's out-of-memory error (or the CUDA error) for the first device
 * that cannot give them; what the others took stays held until the end. */
static int burn_allocate(burn_job *job, long mib) {
    for (int k = 0; k < job->ndevs; k++) {
        burn_device *d = &job->devs[k];
        int status = burn_use(job, k);
        if (status)
            return status;
        cudrv_ptr p = 0;
        cudrv_result rc = job->cu.mem_alloc(&p, (size_t)mib << 20);
        if (rc == CUDRV_ERROR_OUT_OF_MEMORY) {
            size_t freeb = 0, total = 0;
            job->cu.mem_get_info(&freeb, &total);
            job_print_oom(k, (double)mib, (double)(total - freeb) / 1048576.0,
                          (double)total / 1048576.0, (double)job->held_mib);
            return 1;
        }
        if (rc != CUDRV_SUCCESS)
            return burn_fail(job, "cuMemAlloc", k, rc, 1);
        d->bufs[d->nbufs++] = p;
    }
    job->held_mib += mib;
    return 0;
}

/* Runs the spin kernel for spin_ns on every device at once, and waits for
 * them all. Returns 0, or 1 after saying which device failed. */
static int burn_spin(const burn_job *job, unsigned long long spin_ns) {
    void *params[] = {&spin_ns};
    for (int k = 0; k < job->ndevs; k++) {
        const burn_device *d = &job->devs[k];
        int status = burn_use(job, k);
        if (status)
            return status;
        cudrv_result rc = job->cu.launch_kernel(
            d->spin, d->sms, 1, 1, BURN_BLOCK_THREADS, 1, 1, 0, NULL, params,
            NULL);
        if (rc != CUDRV_SUCCESS)
            return burn_fail(job, "cuLaunchKernel aegis_spin", k, rc, 1);
    }
    for (int k = 0; k < job->ndevs; k++) {
        int status = burn_use(job, k);
        if (status)
            return status;
        cudrv_result rc = job->cu.ctx_synchronize();
        if (rc != CUDRV_SUCCESS)
            return burn_fail(job, "cuCtxSynchronize", k, rc, 1);
    }
    return 0;
}

/* Keeps the devices busy at --smact until `until` or a stop signal.
 * Returns 0, or 1 on a CUDA error. */
static int burn_until(const burn_job *job, double until) {
    while (!job_stop) {
        double now = job_now(), left = until - now;
        if (left <= 0)
            return 0;
        double period = left < BURN_PERIOD_S ? left : BURN_PERIOD_S;
        double busy = job->a.smact * period;
        if (busy > 0 && burn_spin(job, (unsigned long long)(busy * 1e9)) != 0)
            return 1;
        job_sleep_until(now + period);
    }
    return 0;
}

/* Frees what the job holds, unloads its kernels and releases its
 * contexts: what PyTorch leaves to the driver at exit, done here so that a
 * stand-in driver can check that nothing leaked. */
static void burn_close(burn_job *job) {
    for (int k = 0; k < job->ndevs; k++) {
        burn_device *d = &job->devs[k];
        if (!d->ctx)
            continue;
        job->cu.ctx_set_current(d->ctx);
        for (int i = 0; i < d->nbufs; i++)
            job->cu.mem_free(d->bufs[i]);
        if (d->module)
            job->cu.module_unload(d->module);
        job->cu.primary_ctx_release(d->dev);
    }
}

/* With --until, burns on as it is until its file exists (or a stop
 * signal comes). Returns 0, or 1 after a CUDA error. */
static int burn_hold(const burn_job *job) {
    int status = 0;
    while (status == 0 && !job_stop && !job_released(&job->a))
        status = burn_until(job, job_now() + BURN_PERIOD_S);
    return status;
}

/* Runs the job once the driver is loaded. Returns the exit status. */
static int burn_run(burn_job *job) {
    int status = 0, opened = job->ndevs;
    job->ndevs = 0;
    while (status == 0 && job->ndevs < opened) {
        status = burn_open_device(job, job->ndevs);
        job->ndevs++; /* closed by burn_close even when half open */
    }
    double start = job_now();
    if (status == 0)
        status = burn_allocate(job, job->a.mib);
    if (status == 0 && job->a.oom_over) {
        status = burn_until(job, start + job->a.seconds / 2);
        if (status == 0)
            status = burn_hold(job);
        if (status == 0 && !job_stop)
            status = burn_allocate(job, job->a.mib);
    }
    if (status == 0)
        status = burn_until(job, start + job->a.seconds);
    if (status == 0)
        status = burn_hold(job);
    job_linger(&job->a);
    burn_close(job);
    if (status == 0 && job_stop)
        return 128 + job_stop;
    return status;
}

int main(int argc, char **argv) {
    static burn_job job = {.a.smact = 0.5};
    int rc = job_parse_args("aegis-gpuburn", argc, argv, BURN_MAX_MIB, &job.a);
    if (rc != 0) {
        fputs(usage, rc > 0 ? stdout : stderr);
        return rc > 0 ? 0 : 2;
    }
    job_print_env("aegis-gpuburn");
    job_catch_stop();
    rc = burn_load_driver(&job);
    return rc ? rc : burn_run(&job);
}
