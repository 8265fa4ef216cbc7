/* top_view.h -- what `aegis top` shows, laid out for a terminal of a
 * given size: data and a size in, lines of text out. Pure (no terminal,
 * no aegisd), so the unit tests check the layout alone.
 */
#ifndef AEGIS_TOP_VIEW_H
#define AEGIS_TOP_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef struct top_gpu {
    int index;
    char name[96];
    char sharing[16];   /* naive, mps, mig, exclusive... */
    double used_mib, total_mib;
    double util;        /* 0..1; < 0 unknown */
    double power_w;     /* < 0 unknown */
    bool drained, ok;
} top_gpu;

typedef struct top_job {
    long long id;
    char user[64];
    char label[256];    /* its name, else its command ("-" when hidden) */
    char reason[256];   /* why a queued job waits (REASON), or "" */
    uint64_t gpus;      /* a running job's GPUs: bit i for GPU i */
    double mem_mib;     /* its --mem; 0 when not given */
    double used_mib;    /* what its processes hold, as aegisd measured
                           it, and */
    double sm_pct;      /*   their SM share (percent of the GPU), each
                           per GPU, averaged over its GPUs; < 0 unknown */
    bool running;
} top_job;

/* One screen's worth: the GPUs and the queued and running jobs, or the
 * error that kept aegis top from getting them. */
typedef struct top_screen {
    time_t now;
    double delay_s;             /* the refresh period, shown in the title */
    const top_gpu *gpus;
    size_t ngpus;
    const top_job *jobs;        /* in submission order */
    size_t njobs;
    const char *error;          /* non-NULL: shown instead of the above */
} top_screen;

typedef struct top_lines {
    char **line;
    size_t n, cap;
    bool oom;                   /* a line could not be stored */
} top_lines;

/* Lays s out in at most rows lines of at most cols characters each into
 * out (emptied first). When it does not fit, the longest lists (a GPU's
 * jobs, the queue) are cut first, each to a "+ N more" line; when even
 * the GPUs do not fit, the last line says how many rows were cut.
 * Control characters in names and commands show as '?'. Returns 0, or
 * -1 when out of memory. */
int top_layout(const top_screen *s, int rows, int cols, top_lines *out);
void top_lines_free(top_lines *out);

#endif
