/* link_model.c -- the simulated radio link (link_model.h). */
#include "link_model.h"

#include <string.h>

static double uniform(link_model *l) { /* xorshift64*: reproducible */
    l->rng ^= l->rng >> 12, l->rng ^= l->rng << 25, l->rng ^= l->rng >> 27;
    return (double)((l->rng * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

void link_model_init(link_model *l, const link_cfg *cfg, uint64_t seed) {
    memset(l, 0, sizeof *l);
    l->cfg = *cfg;
    l->rng = seed * 0x9E3779B97F4A7C15ull + 1;
}

int link_in_contact(const link_cfg *c, uint64_t t) {
    return c->period_ms == 0 || t % c->period_ms < c->pass_ms;
}

uint64_t link_next_pass(const link_cfg *c, uint64_t t) {
    if (link_in_contact(c, t))
        return t;
    return (t / c->period_ms + 1) * c->period_ms;
}

int link_model_send(link_model *l, int dir, uint64_t t, uint8_t *frame,
                    size_t len, uint64_t *arrive, uint64_t *done) {
    uint64_t start = t > l->busy_until[dir] ? t : l->busy_until[dir];
    uint64_t air = (uint64_t)((double)len * 8.0 * 1000.0 / l->cfg.bit_rate + 0.999);
    uint64_t end = start + air;
    l->busy_until[dir] = end;
    *done = end, *arrive = end + l->cfg.latency_ms;
    l->sent[dir]++, l->bytes[dir] += len;
    int in_pass = link_in_contact(&l->cfg, start) &&
                  (l->cfg.period_ms == 0 || link_in_contact(&l->cfg, end - (end > start)));
    if (!in_pass || uniform(l) < l->cfg.loss) {
        l->lost[dir]++;
        return -1;
    }
    if (len && uniform(l) < l->cfg.corrupt)
        frame[(size_t)(uniform(l) * (double)len) % len] ^= (uint8_t)(1u << (l->rng & 7u));
    return 0;
}
