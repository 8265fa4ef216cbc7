/* sat_frame.c -- one camera frame on board: every pipeline the slots hold
 * runs on it; a lost batch is counted and published as the last error,
 * and tells the update store which module failed (so an uploaded module
 * failing in a row is rolled back); the images of a good batch go to the
 * ring, the least cloudy first. A DISH procedure's capture runs one
 * pipeline on a frame of its own. */
#include <stdio.h>
#include <string.h>

#include "camera.h"
#include "errors.h"
#include "pdef.h"
#include "pipeline.h"
#include "sat.h"

static void note_ms(sat_stats *t, const char *name, uint32_t ms) {
    unsigned k = 0;
    while (k < t->mods && strcmp(t->mod_name[k], name) != 0)
        k++;
    if (k == SAT_TRACKED)
        return;
    if (k == t->mods)
        snprintf(t->mod_name[t->mods++], UP_NAME_MAX, "%s", name);
    t->mod_ms[k] = ms;
}

static void lost(sat *s, const pdef *d, const pipe_report *rep) {
    up_result r;
    s->st.batches_lost++;
    s->st.last_error = rep->number;
    snprintf(s->st.last_detail, sizeof s->st.last_detail, "%s: %s", rep->name, rep->detail);
    if (up_on_run(&s->up, rep->name, rep->code, &r) == DIPP_E_UP_ROLLBACK) {
        s->st.rollbacks++;
        s->st.last_error = dipp_error_number(r.code, d->id, rep->module);
        snprintf(s->st.last_detail, sizeof s->st.last_detail, "%s", r.detail);
    }
}

/* The batch's images into the ring: the cloud module's cover (per mille,
 * in value) makes a clear image worth more. */
static unsigned keep(sat *s, const pdef *d, const dbatch *out, const pipe_report *rep) {
    up_result r;
    unsigned kept = 0;
    for (uint32_t k = 0; k < d->count; k++) {
        note_ms(&s->st, d->step[k].name, rep->ms[k]);
        up_on_run(&s->up, d->step[k].name, 0, &r);
    }
    for (uint32_t k = 0; k < out->api.count; k++) {
        const dipp_image *i = &out->api.images[k];
        kept += ring_push(&s->images, 1000 - i->value, i->width, i->height, i->format,
                          i->data, i->size) != 0;
    }
    s->st.images += out->api.count;
    return kept;
}

static void skipped(void *ctx, const char *why) {
    sat *s = ctx;
    snprintf(s->st.last_detail, sizeof s->st.last_detail, "%s", why);
}

/* Shoots a frame into the camera's buffer, kept from frame to frame as a
 * camera's is, so that the first module's worker keeps it mapped. 0, or
 * -1 when there is no memory for it. */
static int shoot(sat *s) {
    if (!s->camera.hdr) {
        if (batch_create(&s->camera, (uint64_t)s->frame_size * s->frame_size))
            return -1;
        s->camera.kept = 1;
    }
    batch_reset(&s->camera);
    return camera_shoot(&s->camera, s->frame_size, s->seed++);
}

/* Shoots a frame and runs on it the stored pipelines `only` selects (0:
 * all): the images kept; *ran and *failed count the pipelines. */
static unsigned shoot_and_run(sat *s, unsigned only, unsigned *ran, unsigned *failed) {
    static pdef defs[PDEF_PIPELINES];
    dbatch out;
    unsigned kept = 0;
    int n = pdef_load_slots(s->slots_dir, defs, skipped, s);
    *ran = *failed = 0;
    if (shoot(s))
        return 0;
    s->st.frames++;
    for (int k = 0; k < n; k++) {
        pipe_report rep;
        if (only && defs[k].id != only)
            continue;
        ++*ran;
        if (pipeline_run(&s->run, &defs[k], &s->camera, &out, &rep)) {
            lost(s, &defs[k], &rep);
            ++*failed;
            continue;
        }
        kept += keep(s, &defs[k], &out, &rep);
        batch_close(&out);
    }
    return kept;
}

unsigned sat_process_frame(sat *s) {
    unsigned ran, failed;
    if (!sat_dish_awake(&s->dish)) { /* the camera's frame waits for nobody */
        s->st.frames_asleep++;
        return 0;
    }
    return shoot_and_run(s, 0, &ran, &failed);
}

int sat_capture(sat *s, unsigned p) {
    unsigned ran, failed;
    shoot_and_run(s, p, &ran, &failed);
    if (!ran)
        snprintf(s->st.last_detail, sizeof s->st.last_detail, "capture: pipeline %u: "
                 "nothing ran (its slot is empty, or the camera gave no frame)", p);
    return ran == 1 && !failed ? 0 : -1;
}
