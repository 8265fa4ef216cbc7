/* link_model.h -- a radio link between ground and satellite in simulated
 * time: a bit rate each way, packet loss, bit corruption, latency, and
 * contact windows (a pass of pass_ms every period_ms). A frame is sent
 * when its direction is free, must be on the air wholly inside a pass,
 * and arrives latency_ms after its last bit. Used by the link simulator
 * (in real time, scaled) and the benchmarks (simulated, never slept). */
#ifndef DIPP_LINK_MODEL_H
#define DIPP_LINK_MODEL_H

#include <stddef.h>
#include <stdint.h>

typedef struct link_cfg {
    double bit_rate;      /* bit/s each way */
    double loss;          /* probability a frame is lost */
    double corrupt;       /* probability a frame has a bit flipped */
    uint64_t latency_ms;
    uint64_t pass_ms, period_ms; /* period 0: always in contact */
} link_cfg;

enum link_dir { LINK_UP = 0, LINK_DOWN = 1 };

typedef struct link_model {
    link_cfg cfg;
    uint64_t busy_until[2]; /* ms */
    uint64_t rng;
    uint64_t sent[2], lost[2], bytes[2];
} link_model;

void link_model_init(link_model *l, const link_cfg *cfg, uint64_t seed);
/* Whether t is inside a pass; when the next pass starts (t if inside). */
int link_in_contact(const link_cfg *c, uint64_t t);
uint64_t link_next_pass(const link_cfg *c, uint64_t t);
/* Puts a frame of len bytes on the air in dir at time t: its arrival
 * time in *arrive and 0, or -1 when it is lost (out of a pass, or
 * dropped). It may flip a bit of frame (corruption). *done is when the
 * direction is free again. */
int link_model_send(link_model *l, int dir, uint64_t t, uint8_t *frame,
                    size_t len, uint64_t *arrive, uint64_t *done);

#endif
