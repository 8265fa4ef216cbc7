/* sat.h -- the satellite side of DIPP, apart from any transport: it
 * answers the ground's messages (updates, parameters and telemetry, the
 * image downlink; proto.h), and processes camera frames through the
 * pipelines its slots hold, feeding the image ring, the telemetry and
 * each uploaded module's in-flight record (its rollback); and runs the
 * DISH procedures the ground uploads (sat_dish.h). */
#ifndef DIPP_SAT_H
#define DIPP_SAT_H

#include <stddef.h>
#include <stdint.h>

#include "cmd_sig.h"
#include "csp.h"
#include "ring.h"
#include "runner.h"
#include "sat_dish.h"
#include "upload.h"

#define SAT_TRACKED 16 /* modules whose run time telemetry keeps */

typedef struct sat_stats {
    uint64_t frames, images, batches_lost;
    uint64_t frames_asleep; /* shot while the main processor slept: not processed */
    uint64_t installed, refused, rollbacks;
    uint64_t pings_too_long; /* not echoed: the echo, with its CRC, fits no frame */
    uint32_t last_error;    /* the last lost batch's or update's number */
    char last_detail[320]; /* room for a module name and a run detail */
    char mod_name[SAT_TRACKED][UP_NAME_MAX];
    uint32_t mod_ms[SAT_TRACKED]; /* its last run time */
    unsigned mods;
} sat_stats;

typedef struct sat_cfg {
    const char *slots_dir, *updates_dir, *module_dir;
    uint32_t frame_size;
    plat_limits lim;
    up_config up;
} sat_cfg;

typedef struct sat {
    runner run;
    up_store up;
    const char *slots_dir;
    ring images;
    cmd_port removals;   /* the images' removals ('K', port 22) */
    sat_stats st;
    up_result last_done; /* the last upload's outcome, for status queries */
    uint8_t refused[UP_MANIFEST_BYTES]; /* the manifest refused last */
    uint32_t frame_size, seed;
    dbatch camera;       /* the camera's frame buffer, kept (made at the first shot) */
    sat_dish dish;       /* the procedures, their runtime and its platform */
} sat;

/* Sends msg to the ground's port. */
typedef void (*sat_reply_fn)(void *ctx, uint8_t port, const uint8_t *msg, size_t len);

/* Starts the fork server first (call early), then opens the update store
 * (first_pk: the ground's key for a new store). 0, or -1 with why on
 * stderr. */
int sat_open(sat *s, const sat_cfg *cfg, const uint8_t first_pk[UP_PK_BYTES]);
/* One message from the ground. */
void sat_handle(sat *s, const csp_id *id, const uint8_t *msg, size_t len,
                sat_reply_fn reply, void *ctx);
/* Shoots one frame and, unless the main processor sleeps, runs every
 * stored pipeline on it: the images it added to the ring. */
unsigned sat_process_frame(sat *s);
/* Shoots one frame and runs pipeline p on it: 0, or -1 when the batch was
 * lost or the slot holds no pipeline (last_detail says). */
int sat_capture(sat *s, unsigned p);
/* Moves DISH's clock on to now and ticks its runtime, then captures for
 * the pipelines its procedures started. */
void sat_step(sat *s);
/* sat_step with the wall clock reading wall ms (plat_now_ms's scale): a
 * test's own clock. */
void sat_step_at(sat *s, uint64_t wall);
/* Wall ms the satellite's loop may wait for the link before sat_step is
 * due again, at most cap. */
int sat_idle_ms(const sat *s, int cap);
/* The telemetry as "key=value" lines into out: its length. */
size_t sat_telemetry(const sat *s, char *out, size_t cap);
void sat_close(sat *s);

#endif
