/* loaders.h -- the CPU a server's data loading costs (docs/simulator.md,
 * "Data loading").
 *
 * A job's data loader keeps load_cpus cores busy while the job runs (its
 * trace row says how many). A job that reads no feed pays that alone; the
 * jobs of one feed on one GPU share one loader, the feed's producer, and
 * pay it once: its cores are those of the job that opened it. Jobs of one
 * feed on different GPUs each pay their GPU's loader, as a producer
 * publishes its batches into one GPU's memory (CUDA IPC) and serves the
 * jobs there. The model counts CPU-seconds; it does not slow a job down
 * for want of CPU.
 */
#ifndef AEGIS_LOADERS_H
#define AEGIS_LOADERS_H

#include <stdint.h>

typedef struct sim_loader {
    uint32_t feed;              /* the feed's id (trace_job.feed) */
    int gpu;                    /* the GPU its jobs run on */
    int jobs;                   /* its jobs running */
    double cpus;                /* cores it keeps busy */
} sim_loader;

typedef struct sim_loaders {
    sim_loader *shared;         /* the feeds' loaders in use, n of them */
    int n, cap;
    double cpus;                /* cores busy now */
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
void sim_loaders_free(sim_loaders *l);

#endif
