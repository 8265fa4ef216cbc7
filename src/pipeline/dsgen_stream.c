/* dsgen_stream.c -- the synthetic streams' samples (dsgen.h): the drift
 * schedule, the Gaussian-mixture rows and the grating images. */
#include "dsgen.h"

#include <math.h>

#define PI 3.14159265358979323846
#define IMAGE_SIDE 32
#define RADIUS 2.0            /* class means' distance from the origin */
#define ROTATION (PI / 3.0)   /* one concept step: 60 degrees */
#define SHIFTED_SHARE 0.7     /* class 0's share after the label shift */

/* splitmix64: small, fast and the same everywhere. */
static uint64_t next_u64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *s) {
    return (double)(next_u64(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* Box-Muller; the second value is dropped to keep the stream simple. */
static double gaussian(uint64_t *s) {
    double u = uniform01(s), v = uniform01(s);
    return sqrt(-2.0 * log(u > 0 ? u : 1e-300)) * cos(2.0 * PI * v);
}

double pl_gen_concept(uint64_t n, uint64_t i) {
    uint64_t abrupt = n / 4, grad_start = n / 2, grad_end = 5 * n / 8;
    if (i < abrupt)
        return 0.0;
    if (i < grad_start)
        return 1.0;
    if (i < grad_end)
        return 1.0 + (double)(i - grad_start) / (double)(grad_end - grad_start);
    return 2.0;
}

int pl_gen_label_shifted(uint64_t n, uint64_t i) { return i >= 3 * n / 4; }

uint32_t pl_gen_dim(const pl_gen_opts *o) {
    return o->kind == PL_GEN_IMAGE ? IMAGE_SIDE * IMAGE_SIDE : o->dim;
}

void pl_gen_init(pl_gen_state *g, const pl_gen_opts *o) {
    g->rng = o->seed;
    g->opts = o;
}

/* Uniform over the classes, or class 0 at SHIFTED_SHARE after the shift. */
static int32_t draw_label(pl_gen_state *g, uint64_t i) {
    uint32_t k = g->opts->classes;
    if (pl_gen_label_shifted(g->opts->samples, i) && k > 1) {
        if (uniform01(&g->rng) < SHIFTED_SHARE)
            return 0;
        return 1 + (int32_t)(next_u64(&g->rng) % (k - 1));
    }
    return (int32_t)(next_u64(&g->rng) % k);
}

static void tabular_row(pl_gen_state *g, double concept, int32_t label,
                        float *x) {
    uint32_t dim = g->opts->dim;
    double base = 2.0 * PI * label / g->opts->classes + concept * ROTATION;
    for (uint32_t d = 0; d < dim; d++) {
        uint32_t pair = d / 2;
        double mean = 0.0;
        if (pair * 2 + 1 < dim || dim % 2 == 0) {
            double angle = base + pair;
            mean = RADIUS * (d % 2 ? sin(angle) : cos(angle));
        }
        x[d] = (float)(mean + gaussian(&g->rng));
    }
}

static void grating(pl_gen_state *g, double concept, int32_t label, float *x) {
    double angle = PI * label / g->opts->classes;
    double cycles = 2.0 + 1.5 * concept, contrast = 0.4 - 0.1 * concept;
    double bright = 0.5 + 0.1 * concept;
    double phase = 2.0 * PI * uniform01(&g->rng);
    double cx = cos(angle) / IMAGE_SIDE, cy = sin(angle) / IMAGE_SIDE;
    for (int y = 0; y < IMAGE_SIDE; y++)
        for (int xx = 0; xx < IMAGE_SIDE; xx++) {
            double wave = sin(2.0 * PI * cycles * (xx * cx + y * cy) + phase);
            double v = bright + contrast * wave + 0.1 * gaussian(&g->rng);
            x[y * IMAGE_SIDE + xx] = (float)(v < 0 ? 0 : v > 1 ? 1 : v);
        }
}

void pl_gen_sample(pl_gen_state *g, uint64_t i, float *x, int32_t *label) {
    double concept = pl_gen_concept(g->opts->samples, i);
    *label = draw_label(g, i);
    if (g->opts->kind == PL_GEN_IMAGE)
        grating(g, concept, *label, x);
    else
        tabular_row(g, concept, *label, x);
}
