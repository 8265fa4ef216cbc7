/* dsgen.h -- synthetic timestamped streams with known drift, for testing
 * triggers and selection where no dataset can be downloaded
 * (`aegis dataset gen`).
 *
 * Both kinds follow one drift schedule over N samples (keys 0..N-1):
 *   [0, N/4)        concept 0
 *   N/4             abrupt drift to concept 1
 *   [N/2, 5N/8)     gradual drift from concept 1 to concept 2
 *   3N/4            label shift: class 0 takes 70% of the samples
 * tabular: D features, K classes; class c's mean lies at radius 2 in each
 *   pair of features at angle 2*pi*c/K + p (p the pair's index) plus the
 *   concept's rotation (0, 60 and 120 degrees); unit Gaussian noise. One
 *   concept step moves every class mean by 2 standard deviations in each
 *   pair of features: the default drift size.
 * image: 32x32 float32 pixels in [0,1], class c a grating at angle
 *   pi*c/K; a concept step raises its frequency by 1.5 cycles, lowers its
 *   contrast by 0.1 and raises the brightness by 0.1 (noise sd 0.1).
 * The same options and seed give the same bytes on every machine.
 */
#ifndef AEGIS_PL_DSGEN_H
#define AEGIS_PL_DSGEN_H

#include <stddef.h>
#include <stdint.h>

#include "dsconf.h"

typedef enum pl_gen_kind { PL_GEN_TABULAR, PL_GEN_IMAGE } pl_gen_kind;

typedef struct pl_gen_opts {
    pl_gen_kind kind;
    pl_format format;
    const char *out;     /* folder, created when missing */
    uint64_t samples;    /* N */
    uint32_t files;      /* binary/csv: the samples split over this many */
    uint32_t dim;        /* tabular: features (image: 1024) */
    uint32_t classes;    /* K */
    uint64_t seed;
    int64_t start_ts;    /* first sample's timestamp */
    int64_t interval_s;  /* between samples' timestamps */
} pl_gen_opts;

/* Features per sample of the kind (dim, or 32*32). */
uint32_t pl_gen_dim(const pl_gen_opts *o);

/* Writes the stream's files and drift.json into o->out. 0; -1 with err
 * naming the file where a write failed; or PL_GEN_BAD_OUT with err naming
 * o->out where it cannot be used: not a folder (a link is not followed),
 * another user's, writable by others, or holding files already (the
 * files of another stream would be left beside this one's). */
#define PL_GEN_BAD_OUT (-2)
int pl_gen_write(const pl_gen_opts *o, char *err, size_t errlen);

/* The generator alone: sample i's features (pl_gen_dim of them) and label.
 * Samples must be drawn in order 0, 1, ... from one state. */
typedef struct pl_gen_state {
    uint64_t rng;
    const pl_gen_opts *opts;
} pl_gen_state;

void pl_gen_init(pl_gen_state *g, const pl_gen_opts *o);
void pl_gen_sample(pl_gen_state *g, uint64_t i, float *x, int32_t *label);

/* The concept at sample i (0, 1, 2, fractional inside the gradual drift),
 * and whether the label shift is in force. */
double pl_gen_concept(uint64_t n, uint64_t i);
int pl_gen_label_shifted(uint64_t n, uint64_t i);

#endif
