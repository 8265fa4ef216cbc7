/* loaders.h -- the CPU a server's data loading costs (docs/simulator.md,
 * "Data loading").
 *
 * A job's data loader keeps load_cpus cores busy while the job runs (its
 * trace row says how many). A job that reads no feed pays that alone; the
 * jobs of one feed on one GPU share one loader, the feed's producer, and
 * pay it once: its cores are those of the job that opened it. Jobs of one
 * feed on different GPUs each pay their GPU's loader, as a producer
 * publishes its batches into one GPU's memory (CUDA IPC) and serves the
 * jobs there.
 *
 * The server has `cores` CPUs. While its loaders want more, the kernel's
 * fair scheduler gives each the same fraction of what it wants,
 * sim_loaders_share(): cores over the CPUs wanted. A loader with that
 * fraction of its CPUs makes batches at that fraction of the pace its
 * job trains at alone, so the job, whose step waits for its next batch
 * (prefetching hides loading only while loading keeps up), goes no faster
 * than that (replay.c). The CPU-seconds counted are those the CPUs give:
 * at most cores a second.
 */
#ifndef AEGIS_LOADERS_H
#define AEGIS_LOADERS_H

#include <stdint.h>

/* A server's CPUs per GPU unless told (aegis sim --server-cpus): what the
 * servers of the A100 40 GB that the catalog was measured on have, 12
 * vCPUs per GPU, in AWS's p4d.24xlarge (96 for 8 GPUs) and Google
 * Cloud's a2-highgpu shapes (12 for 1 GPU up to 96 for 8). */
#define SIM_CPUS_PER_GPU 12

typedef struct sim_loader {
    uint32_t feed;              /* the feed's id (trace_job.feed) */
    int gpu;                    /* the GPU its jobs run on */
    int jobs;                   /* its jobs running */
    double cpus;                /* cores it keeps busy */
} sim_loader;

typedef struct sim_loaders {
    sim_loader *shared;         /* the feeds' loaders in use, n of them */
    int n, cap;
    double cpus;                /* cores the loaders want now */
    double cores;               /* the server's CPUs; 0: as many as wanted */
    double since;               /* cpu_s counted up to here */
    double cpu_s;               /* CPU-seconds of loading so far */
} sim_loaders;

/* A job starts at t on GPU gpu: feed 0 for its own loader of cpus cores,
 * else its feed's. Returns 0, or -1 when out of memory. */
int sim_loaders_join(sim_loaders *l, uint32_t feed, int gpu, double cpus,
                     double t);
/* The job that joined with these arguments ends at t. */
void sim_loaders_leave(sim_loaders *l, uint32_t feed, int gpu, double cpus,
                       double t);
/* The fraction of the cores they want the loaders get now: 1 while the
 * server has them. */
double sim_loaders_share(const sim_loaders *l);
void sim_loaders_free(sim_loaders *l);

#endif
