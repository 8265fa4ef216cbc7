/* dish_sim.c -- the simulated satellite (dish_sim.h). Orbit: circular,
 * 94 min, inclined 97.4 degrees, under an Earth turning once a sidereal
 * day; sunlight over 62 % of each orbit; a fix every second of local
 * time once the receiver has one. */
#include "dish_sim.h"

#include <assert.h>
#include <math.h>
#include <string.h>
#include <time.h>

#define PI 3.14159265358979323846
#define ORBIT_S 5640.0
#define INCL_DEG 97.4
#define EARTH_DEG_S (360.0 / 86164.0)
#define GNSS_EPOCH_MS 1400000000000LL /* GNSS time when the simulation starts */
#define STATION_LAT 78.2
#define STATION_LON 15.4

static dish_sim *ctx_sim(void *ctx) {
    return ctx;
}

/* True time since the start, from the drifting local clock. */
static double true_s(const dish_sim *s) {
    return (double)s->local_ms / 1000.0 / (1.0 + s->drift_ppm * 1e-6);
}

static double orbit_angle(const dish_sim *s) {
    return 2.0 * PI * true_s(s) / ORBIT_S;
}

static void ground_track(const dish_sim *s, double *lat, double *lon) {
    double u = orbit_angle(s), i = INCL_DEG * PI / 180.0;
    *lat = asin(sin(i) * sin(u)) * 180.0 / PI;
    double l = atan2(cos(i) * sin(u), cos(u)) * 180.0 / PI - EARTH_DEG_S * true_s(s);
    *lon = fmod(fmod(l + 180.0, 360.0) + 360.0, 360.0) - 180.0;
}

static int32_t to_fix(double deg) {
    return (int32_t)lround(deg * DISH_FIX_ONE);
}

/* ---- the platform's functions ---- */

static int64_t sim_now(void *ctx) {
    return ctx_sim(ctx)->local_ms;
}

static int has_fix(const dish_sim *s) {
    return s->local_ms >= s->fix_after_ms && s->local_ms >= s->gnss_off_until;
}

static void sim_gnss(void *ctx, dish_fix *f) {
    dish_sim *s = ctx_sim(ctx);
    double lat, lon;
    memset(f, 0, sizeof *f);
    if (!has_fix(s))
        return;
    ground_track(s, &lat, &lon);
    *f = (dish_fix){1, to_fix(lat), to_fix(lon), GNSS_EPOCH_MS + llround(true_s(s) * 1000.0)};
}

static int sim_param_get(void *ctx, int node, int id, int32_t *v) {
    dish_sim *s = ctx_sim(ctx);
    if (node < 0 || node >= DISH_NODES || id < 0 || id >= DISH_PARAMS ||
        (s->down_nodes >> node & 1))
        return -1;
    *v = s->params[node][id];
    return 0;
}

static int sim_param_set(void *ctx, int node, int id, int32_t v) {
    dish_sim *s = ctx_sim(ctx);
    if (node < 0 || node >= DISH_NODES || id < 0 || id >= DISH_PARAMS ||
        (s->down_nodes >> node & 1))
        return -1;
    s->params[node][id] = v;
    return 0;
}

static void end_awake(dish_sim *s) {
    if (s->nawake < DISH_SIM_INTERVALS) {
        s->awake_ms[s->nawake][0] = s->awake_since;
        s->awake_ms[s->nawake][1] = s->local_ms;
    }
    s->nawake++;
    s->awake_total_ms += s->local_ms - s->awake_since;
}

static void sim_power(void *ctx, int awake) {
    dish_sim *s = ctx_sim(ctx);
    if (awake == s->awake)
        return;
    s->awake = awake;
    if (awake) {
        s->awake_since = s->local_ms;
        return;
    }
    end_awake(s);
    for (int p = 1; p <= DISH_PIPELINES; p++) /* a pipeline dies with its cores */
        if (s->pipes[p].status == DISH_PIPE_RUNNING)
            s->pipes[p].status = DISH_PIPE_FAILED;
}

static int sim_pipe_start(void *ctx, int p) {
    dish_sim *s = ctx_sim(ctx);
    if (p < 1 || p > DISH_PIPELINES || !s->awake || s->pipes[p].status == DISH_PIPE_RUNNING)
        return -1;
    s->pipes[p] = (dish_sim_pipe){DISH_PIPE_RUNNING, s->local_ms + s->pipe_ms};
    if (s->fail_next > 0) { /* it will report a failure when done */
        s->fail_next--;
        s->pipes[p].done_at = -s->pipes[p].done_at;
    }
    return 0;
}

static int sim_pipe_status(void *ctx, int p) {
    dish_sim *s = ctx_sim(ctx);
    return p < 1 || p > DISH_PIPELINES ? DISH_PIPE_IDLE : s->pipes[p].status;
}

int dish_tlm_format(char *out, size_t cap, const dish_tlm *t) {
    static const char *kinds[] = {"tm", "start", "end", "fault", "clock"};
    unsigned kind = (unsigned)t->kind < sizeof kinds / sizeof *kinds ? (unsigned)t->kind : 0;
    return snprintf(out, cap, "%10.3f run %2d slot %2d %-5s %d %d", (double)t->t_ms / 1000.0,
                    t->run, t->slot, kinds[kind], t->code, t->value);
}

void dish_sim_print(FILE *f, const dish_tlm *t) {
    char line[128];
    dish_tlm_format(line, sizeof line, t);
    fprintf(f, "%s\n", line);
}

static void sim_telemetry(void *ctx, const dish_tlm *t) {
    dish_sim *s = ctx_sim(ctx);
    s->tlm[s->ntlm++ % DISH_SIM_TLM] = *t;
    if (s->print)
        dish_sim_print(s->print, t);
}

/* ---- time passing ---- */

/* Once a second: the parameters that follow the orbit; PARAM when one
 * changed. */
static unsigned orbit_params(dish_sim *s) {
    double lat, lon;
    ground_track(s, &lat, &lon);
    int sun = cos(orbit_angle(s)) > -0.37;
    int view = fabs(lat - STATION_LAT) < 12.0 && fabs(lon - STATION_LON) < 45.0;
    s->battery += sun ? 0.004 : 0.0;
    s->battery -= s->awake ? 0.01 : 0.001;
    s->battery = s->battery > 100.0 ? 100.0 : s->battery < 0.0 ? 0.0 : s->battery;
    int32_t now[3] = {(int32_t)s->battery, sun, view}, *at[3] = {
        &s->params[2][1], &s->params[3][1], &s->params[6][1]};
    unsigned ev = 0;
    for (int k = 0; k < 3; k++) {
        ev |= *at[k] != now[k] ? DISH_EV_PARAM : 0;
        *at[k] = now[k];
    }
    return ev;
}

/* The first pipeline event after the clock, or INT64_MAX. */
static int64_t next_pipe(const dish_sim *s) {
    int64_t t = INT64_MAX;
    for (int p = 1; p <= DISH_PIPELINES; p++) {
        int64_t d = s->pipes[p].done_at < 0 ? -s->pipes[p].done_at : s->pipes[p].done_at;
        if (s->pipes[p].status == DISH_PIPE_RUNNING && d < t)
            t = d;
    }
    return t;
}

static unsigned finish_pipes(dish_sim *s) {
    unsigned ev = 0;
    for (int p = 1; p <= DISH_PIPELINES; p++) {
        dish_sim_pipe *q = &s->pipes[p];
        int64_t d = q->done_at < 0 ? -q->done_at : q->done_at;
        if (q->status == DISH_PIPE_RUNNING && s->local_ms >= d) {
            q->status = q->done_at < 0 ? DISH_PIPE_FAILED : DISH_PIPE_OK;
            ev |= DISH_EV_PIPE;
        }
    }
    return ev;
}

static void pace(const dish_sim *s, int64_t ms) {
    if (s->speed <= 0 || ms <= 0)
        return;
    double real = (double)ms / 1000.0 / s->speed;
    struct timespec ts = {(time_t)real, (long)((real - (double)(time_t)real) * 1e9)};
    nanosleep(&ts, NULL);
}

int64_t dish_sim_next(const dish_sim *s) {
    int64_t pipe = next_pipe(s);
    return pipe < s->next_fix_ms ? pipe : s->next_fix_ms;
}

unsigned dish_sim_advance(dish_sim *s, int64_t to) {
    int64_t next = dish_sim_next(s);
    to = to < next ? to : next;   /* no event is passed over */
    if (to > s->local_ms)         /* and the clock never goes back */
        s->local_ms = to;
    unsigned ev = finish_pipes(s);
    if (s->local_ms >= s->next_fix_ms) {
        s->next_fix_ms += 1000;
        ev |= orbit_params(s) | (has_fix(s) ? DISH_EV_GNSS : 0);
    }
    return ev;
}

static unsigned sim_wait(void *ctx, int64_t until) {
    dish_sim *s = ctx_sim(ctx);
    int64_t next = dish_sim_next(s), to = until < next ? until : next;
    if (until <= s->local_ms)
        return 0;
    pace(s, to - s->local_ms);
    return dish_sim_advance(s, to);
}

void dish_sim_pipe_result(dish_sim *s, int p, int ok) {
    assert(p >= 1 && p <= DISH_PIPELINES);
    dish_sim_pipe *q = &s->pipes[p];
    int64_t d = q->done_at < 0 ? -q->done_at : q->done_at;
    if (q->status == DISH_PIPE_RUNNING)
        q->done_at = ok ? d : -d;
}

void dish_sim_init(dish_sim *s) {
    memset(s, 0, sizeof *s);
    s->drift_ppm = 40.0;
    s->fix_after_ms = 30000;
    s->pipe_ms = 20000;
    s->battery = 80.0;
    s->next_fix_ms = 1000;
    for (int p = 1; p <= DISH_PIPELINES; p++)
        s->pipes[p].status = DISH_PIPE_IDLE;
    orbit_params(s);
    s->pl = (dish_platform){s, sim_now, sim_wait, sim_param_get, sim_param_set, sim_gnss,
                            sim_power, sim_pipe_start, sim_pipe_status, sim_telemetry};
}

void dish_sim_gnss_outage(dish_sim *s, int64_t until_ms) {
    s->gnss_off_until = until_ms;
}

const dish_tlm *dish_sim_find(const dish_sim *s, dish_tlm_kind kind, int32_t code) {
    int first = s->ntlm > DISH_SIM_TLM ? s->ntlm - DISH_SIM_TLM : 0;
    for (int k = s->ntlm - 1; k >= first; k--) {
        const dish_tlm *t = &s->tlm[k % DISH_SIM_TLM];
        if (t->kind == kind && (code < 0 || t->code == code))
            return t;
    }
    return NULL;
}
