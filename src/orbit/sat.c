/* sat.c -- the satellite's message handling (sat.h): the update port
 * drives the update store, the parameter port the slots and telemetry,
 * the image port the ring, the procedure port DISH (sat_dish.c); and
 * the step that keeps DISH's clock and captures going. */
#include "sat.h"

#include <stdio.h>
#include <string.h>

#include "cmd_sig.h"
#include "dish.h"
#include "errors.h"
#include "pdef.h"
#include "platform.h"
#include "proto.h"
#include "slot_msg.h"
#include "slots.h"
#include "upload_testrun.h"

static int locate(void *ctx, const char *name, char *path, size_t cap) {
    return up_active_path(ctx, name, path, cap);
}

static void upload_ended(sat *s, const up_result *r, const uint8_t *manifest);

int sat_open(sat *s, const sat_cfg *cfg, const uint8_t first_pk[UP_PK_BYTES]) {
    up_result r;
    up_config up = cfg->up;
    memset(s, 0, sizeof *s);
    if (runner_start(&s->run, cfg->module_dir, cfg->lim)) {
        fprintf(stderr, "dipp sat: cannot start the fork server\n");
        return -1;
    }
    /* the procedures on board first: opening the update store may finish
     * an upload of procedures that a power cut interrupted */
    sat_dish_open(&s->dish, cfg->slots_dir, plat_now_ms());
    up.accept = sat_dish_accept, up.accept_ctx = &s->dish;
    up.procs_max_bytes = DISH_MAX_IMAGE, up.procs_version = DISH_VERSION;
    if (up_open(&s->up, cfg->updates_dir, first_pk, &up, up_test_in_sandbox,
                &s->run, &r)) {
        fprintf(stderr, "dipp sat: %s\n", r.detail);
        runner_stop(&s->run);
        return -1;
    }
    /* an upload a restart finished (or refused: its test-run failed)
     * is the outcome the ground's next status question gets, not a
     * replay's refusal of the manifest it sends again */
    upload_ended(s, &r, s->up.idx.manifest);
    s->dish.pk = s->up.idx.pk;
    s->removals.port = DIPP_PORT_IMAGES;
    s->run.locate = locate, s->run.locate_ctx = &s->up;
    s->slots_dir = cfg->slots_dir;
    s->frame_size = cfg->frame_size, s->seed = 1;
    ring_init(&s->images, RING_MAX, 64u << 20);
    return 0;
}

void sat_close(sat *s) {
    runner_stop(&s->run);
    ring_free(&s->images);
    if (s->camera.hdr)
        batch_close(&s->camera);
}

/* An upload ended (installed or refused): remembered for status queries
 * and counted. The manifest refused last, refused again, is the ground
 * asking once more after a lost answer: not another refusal. A manifest
 * that is malformed or not signed by the ground is answered, but is no
 * upload's outcome: anyone on the link may send one, and the ground's
 * next status question must not get it for its own upload's. */
static void upload_ended(sat *s, const up_result *r, const uint8_t *manifest) {
    if (!r->code && !r->installed)
        return;
    bool anyone = r->code == DIPP_E_UP_MESSAGE || r->code == DIPP_E_UP_SIGNATURE;
    if (!anyone)
        s->last_done = *r;
    if (r->installed)
        s->st.installed++;
    else {
        int again = manifest && !memcmp(manifest, s->refused, UP_MANIFEST_BYTES);
        if (manifest && !anyone) /* what the ground's resend is told (on_update) */
            memcpy(s->refused, manifest, UP_MANIFEST_BYTES);
        s->st.refused += !again;
        s->st.last_error = dipp_error_number(r->code, 0, 0);
        snprintf(s->st.last_detail, sizeof s->st.last_detail, "%s", r->detail);
    }
}

/* Whether the procedure store holds m's image whole: its name, version
 * and bytes (their hash the manifest's). The update store keeps the hash
 * of the last image taken under a name, but the procedure port deletes
 * procedures without it: an image deleted, in part or whole, is not on
 * board, and its manifest sent again was answered "already active" and
 * installed, so the ground was told procedures were on board that were
 * not (found by fuzz_sat). */
static int procs_whole(const sat *s, const up_manifest *m) {
    uint8_t sha[UP_SHA_BYTES];
    for (unsigned k = 0; k < s->dish.store.count; k++) {
        const proc_image *im = &s->dish.store.img[k];
        if (!strcmp(im->name, m->name) && im->version == m->version) {
            up_sha256(im->bytes, im->len, sha);
            return !memcmp(sha, m->sha256, UP_SHA_BYTES);
        }
    }
    return 0;
}

/* A manifest of the version already active is answered as installed, with
 * a sentence saying it was not installed again (in r): to the board it is
 * the ground asking again after a lost answer, not the upload, so not a
 * replay either (1003 is for a version below the highest accepted). An
 * image of procedures is active while the procedure store holds it whole;
 * once deleted its manifest is a replay, refused as one. */
static int already_active(const sat *s, const uint8_t *wire, size_t len,
                          up_result *r) {
    up_manifest m;
    char err[160];
    if (up_manifest_decode(wire, len, &m, err, sizeof err))
        return 0;
    const up_module *mod = up_find(&s->up, m.name);
    if (!mod)
        return 0;
    /* a procedure set keeps no active version: its floor and hash */
    uint32_t on_board = m.kind == UP_KIND_PROCS ? mod->highest : mod->active;
    if (on_board != m.version || memcmp(mod->active_sha, m.sha256, UP_SHA_BYTES) ||
        (m.kind == UP_KIND_PROCS && !procs_whole(s, &m)))
        return 0;
    snprintf(r->detail, sizeof r->detail,
             "%s v%u: already active on board, not installed again", m.name,
             (unsigned)m.version);
    return 1;
}

/* Whether the upload in progress could not store a chunk (its file
 * system failed): that is its outcome so far, but not a refusal. */
static int store_failed(const sat *s) {
    return s->up.idx.uploading && s->last_done.code == DIPP_E_UP_STORE;
}

/* What a status question gets while an upload is in progress: a chunk
 * the board could not store since its manifest, and why, else nothing
 * wrong. Told only "missing", the ground resent that chunk for ever. */
static up_result in_progress(const sat *s) {
    up_result r;
    memset(&r, 0, sizeof r);
    if (store_failed(s))
        r = s->last_done;
    return r;
}

/* Whether a manifest is the one refused last, asked again (the answer
 * was lost, or a restart gave it): its refusal's reason is answered. Not
 * that of an upload whose chunk could not be stored: asked again, it
 * resumes once the file system is back, or the version stayed blocked
 * until the board restarted. */
static int refused_again(const sat *s, const uint8_t *wire, size_t len) {
    return s->last_done.code && len == UP_MANIFEST_BYTES &&
           !memcmp(wire, s->refused, UP_MANIFEST_BYTES) && !store_failed(s);
}

static void on_update(sat *s, const uint8_t *msg, size_t len, uint8_t port,
                      sat_reply_fn reply, void *ctx) {
    uint8_t out[PROTO_STATUS_MAX];
    up_result r;
    memset(&r, 0, sizeof r);
    uint16_t seq = len >= 3 ? (uint16_t)proto_get16(msg + 1) : 0;
    if (msg[0] == 'C') {
        /* a stray chunk (late, of an upload already over) is no outcome */
        if (up_on_chunk(&s->up, msg + 1, len - 1, &r) != DIPP_E_UP_MESSAGE)
            upload_ended(s, &r, s->up.idx.manifest); /* kept after the upload */
        return; /* chunks are not answered: the next question is */
    }
    if (len < 3)
        return;
    if (msg[0] == 'M' && already_active(s, msg + 3, len - 3, &r)) {
        r.installed = 1; /* answered again, not installed again */
        reply(ctx, port, out, proto_status_build(&s->up, &r, seq, out));
        return;
    }
    if (msg[0] == 'M' && refused_again(s, msg + 3, len - 3)) {
        /* the manifest refused last, asked again (the answer was lost, or
         * a restart gave it): its refusal's reason, not "a replay" */
        reply(ctx, port, out, proto_status_build(&s->up, &s->last_done, seq, out));
        return;
    }
    if (msg[0] == 'M' && up_on_manifest(&s->up, msg + 3, len - 3, &r) == 0 &&
        !r.installed)
        memset(&s->last_done, 0, sizeof s->last_done);
    else if (msg[0] == 'R')
        up_on_rotate(&s->up, msg + 3, len - 3, &r);
    else if (msg[0] == 'Q')
        r = s->up.idx.uploading ? in_progress(s) : s->last_done;
    else if (msg[0] != 'Q' && msg[0] != 'M')
        return;
    if (msg[0] == 'M')
        upload_ended(s, &r, len - 3 == UP_MANIFEST_BYTES ? msg + 3 : NULL);
    reply(ctx, port, out, proto_status_build(&s->up, &r, seq, out));
}

size_t sat_telemetry(const sat *s, char *out, size_t cap) {
    const sat_stats *t = &s->st;
    int n = snprintf(out, cap,
                     "frames=%llu\nframes_asleep=%llu\nimages_processed=%llu\n"
                     "batches_lost=%llu\n"
                     "last_error=%u\nlast_detail=%s\nuploads_installed=%llu\n"
                     "uploads_refused=%llu\nrollbacks=%llu\nring_images=%u\n"
                     "ring_dropped=%llu\nkey_serial=%u\npings_too_long=%llu\n"
                     "commands_refused=%llu\n",
                     (unsigned long long)t->frames, (unsigned long long)t->frames_asleep,
                     (unsigned long long)t->images,
                     (unsigned long long)t->batches_lost, t->last_error, t->last_detail,
                     (unsigned long long)t->installed, (unsigned long long)t->refused,
                     (unsigned long long)t->rollbacks, s->images.count,
                     (unsigned long long)s->images.dropped, s->up.idx.key_serial,
                     (unsigned long long)t->pings_too_long,
                     (unsigned long long)(s->dish.procs.refused + s->removals.refused));
    for (unsigned k = 0; k < t->mods && n > 0 && (size_t)n < cap; k++)
        n += snprintf(out + n, cap - (size_t)n, "ms.%s=%u\n", t->mod_name[k], t->mod_ms[k]);
    for (uint32_t k = 0; k < s->up.idx.nmods && n > 0 && (size_t)n < cap; k++)
        if (s->up.idx.mod[k].active) /* procedures' names keep only a version floor */
            n += snprintf(out + n, cap - (size_t)n, "module.%s=v%u\n", s->up.idx.mod[k].name,
                      s->up.idx.mod[k].active);
    if (n > 0 && (size_t)n < cap)
        n += (int)sat_dish_status(&s->dish, out + n, cap - (size_t)n);
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

static int slot_holds(const char *dir, const slot_msg *m) {
    uint8_t now[SLOT_MAX_BYTES];
    size_t len;
    char err[256];
    return slot_read(dir, m->kind, m->slot, now, &len, err, sizeof err) == 0 &&
           len == m->len && memcmp(now, m->def, len) == 0;
}

/* A signed slot write (slot_msg.h): checked, its definition decoded, its
 * version above the highest the slot has taken (its floor, kept apart
 * from the slot, so that a slot found corrupt cannot be rolled back by an
 * old write), the floor raised, then the slot written, each crash-safe.
 * 0 or an errors.h code, what happened in detail either way. The same
 * write again is taken (the link lost its answer, and the ground sent it
 * again), and so is the write of the floor's own version when a power cut
 * came between raising the floor and writing the slot. */
static int write_slot(sat *s, const uint8_t *msg, size_t len, char *detail, size_t cap) {
    slot_msg m;
    pdef d;
    char err[256];
    uint32_t floor, have;
    int code = slot_msg_check(msg, len, s->up.idx.pk, &m, detail, cap);
    if (code)
        return code;
    const char *kind = slot_kind_name(m.kind);
    unsigned v = m.version;
    if (pdef_decode(m.def, m.len, &d, err, sizeof err))
        return dipp_say(detail, cap, DIPP_E_UP_MESSAGE, "%s-%u v%u: %s", kind, m.slot, v, err);
    if (m.kind == SLOT_PIPELINE && d.id != m.slot)
        return dipp_say(detail, cap, DIPP_E_UP_MESSAGE,
                        "%s-%u v%u: the definition is pipeline %u's", kind, m.slot, v,
                        (unsigned)d.id);
    if (slot_floor(s->slots_dir, m.kind, m.slot, &floor, err, sizeof err))
        return dipp_say(detail, cap, DIPP_E_UP_STORE, "%s", err);
    slot_version(s->slots_dir, m.kind, m.slot, &have, err, sizeof err);
    if (have > floor) /* written on board (dipp store) */
        floor = have;
    if (m.version == have && slot_holds(s->slots_dir, &m))
        return dipp_say(detail, cap, 0, "%s-%u v%u already on board", kind, m.slot, v);
    if (m.version < floor || (m.version == floor && have == floor))
        return dipp_say(detail, cap, DIPP_E_UP_REPLAY, "%s-%u v%u: not above v%u on board",
                        kind, m.slot, v, (unsigned)floor);
    if (slot_raise_floor(s->slots_dir, m.kind, m.slot, m.version, err, sizeof err) ||
        slot_write(s->slots_dir, m.kind, m.slot, m.def, m.len, m.version, err, sizeof err))
        return dipp_say(detail, cap, DIPP_E_UP_STORE, "%s", err);
    return dipp_say(detail, cap, 0, "%s-%u v%u written", kind, m.slot, v);
}

/* The line a telemetry answer ends with when the rest did not fit. */
#define TRUNCATED "truncated=1\n"

/* Telemetry of n bytes in out (its text from byte 3), built within cap:
 * as it is when it fit, else cut after its last whole line and marked
 * TRUNCATED (which has room past cap). Its length. A busy satellite's
 * telemetry (many modules) went over a frame and was never answered. */
static size_t whole_lines(uint8_t *out, size_t n, size_t cap) {
    if (n + 1 < cap)
        return n;
    while (n > 3 && out[n - 1] != '\n')
        n--;
    memcpy(out + n, TRUNCATED, sizeof TRUNCATED - 1);
    return n + sizeof TRUNCATED - 1;
}

static void on_param(sat *s, const uint8_t *msg, size_t len, uint8_t port,
                     sat_reply_fn reply, void *ctx) {
    uint8_t out[CSP_MTU];
    if (len < 3)
        return;
    if (msg[0] == 'T') { /* with 4 more bytes: the run records from that index */
        out[0] = 'V';
        memcpy(out + 1, msg + 1, 2);
        /* what fits one frame, TRUNCATED's line kept room for */
        size_t cap = CSP_DATA_MAX - sizeof TRUNCATED;
        size_t n = 3 + sat_telemetry(s, (char *)out + 3, cap - 3);
        if (len == 7)
            n += sat_dish_records(&s->dish, proto_get32(msg + 3), (char *)out + n,
                                  cap - n);
        reply(ctx, port, out, whole_lines(out, n, cap));
        return;
    }
    if (msg[0] != 'P')
        return;
    char detail[CSP_MTU - 7];
    int code = write_slot(s, msg, len, detail, sizeof detail);
    reply(ctx, port, out, proto_answer(msg, code, detail, out, sizeof out));
}

#define IMAGE_PART 1800

/* 'K' seq id, signed (cmd_sig.h), taken (cmd_do_fn): the ground has
 * image id whole, so the ring drops it. */
static int remove_image(void *ctx, const uint8_t *msg, size_t body, char *why, size_t cap) {
    sat *s = ctx;
    if (body != 7)
        return dipp_say(why, cap, DIPP_E_UP_MESSAGE, "remove: %zu bytes, not 7", body);
    uint32_t id = proto_get32(msg + 3);
    return dipp_say(why, cap, 0, "image %u %s", (unsigned)id,
                    ring_remove(&s->images, id) == 0 ? "removed" : "not in the ring");
}

/* 'D' seq id from: the parts of image id (the best one when id is 0)
 * from part `from` on, PROTO_PARTS_PER_ASK at most; an empty ring answers
 * with id 0, an image no longer there with its id and no parts. */
static void on_images(sat *s, const uint8_t *msg, size_t len, uint8_t port,
                      sat_reply_fn reply, void *ctx) {
    uint8_t out[24 + IMAGE_PART];
    if (msg[0] == 'K' && len >= 3) { /* answered, so that a ground whose
                                       * removal is refused does not take the
                                       * same image down again and again */
        size_t n = cmd_serve(&s->removals, s->slots_dir, s->up.idx.pk, msg, len,
                             remove_image, s, out, sizeof out);
        reply(ctx, port, out, n);
        return;
    }
    if (msg[0] != 'D' || len < 9)
        return;
    uint32_t want = proto_get32(msg + 3);
    const ring_image *img = want ? NULL : ring_best(&s->images);
    for (unsigned k = 0; k < s->images.count; k++)
        if (s->images.img[k].id == want)
            img = &s->images.img[k];
    if (!img && want) { /* gone: id, no parts */
        memset(out, 0, 14);
        out[0] = 'I';
        proto_put32(out + 1, want);
        reply(ctx, port, out, 14);
        return;
    }
    uint32_t parts = img ? (uint32_t)((img->len + IMAGE_PART - 1) / IMAGE_PART) : 1;
    uint32_t from = img ? proto_get16(msg + 7) : 0;
    for (uint32_t p = from; p < parts && p - from < PROTO_PARTS_PER_ASK; p++) {
        size_t off = (size_t)p * IMAGE_PART, n = 0;
        if (img)
            n = img->len - off < IMAGE_PART ? img->len - off : IMAGE_PART;
        out[0] = 'I';
        proto_put32(out + 1, img ? img->id : 0), proto_put16(out + 5, p);
        proto_put16(out + 7, img ? parts : 0);
        proto_put32(out + 9, img ? (uint32_t)img->priority : 0);
        out[13] = img ? (uint8_t)img->format : 0;
        if (n)
            memcpy(out + 14, img->bytes + off, n);
        reply(ctx, port, out, 14 + n);
    }
}

static void on_procs(sat *s, const uint8_t *msg, size_t len, uint8_t port,
                     sat_reply_fn reply, void *ctx) {
    uint8_t out[CSP_MTU];
    /* what a frame carries with the CRC csp_node_send appends */
    size_t n = sat_dish_handle(&s->dish, msg, len, out, CSP_DATA_MAX);
    if (n)
        reply(ctx, port, out, n);
}

/* A ping is echoed whole, as libcsp's ping service does, or not at all:
 * the satellite's node sends with the CRC, so an echo of more than
 * CSP_DATA_MAX bytes (a ping from a node that sent it without the CRC,
 * or over the MTU) fits no frame. Handed to the node, its send failed
 * and nothing said so; it is counted instead (pings_too_long in the
 * telemetry), and a truncated echo would be no echo. */
static void on_ping(sat *s, const uint8_t *msg, size_t len, uint8_t port,
                    sat_reply_fn reply, void *ctx) {
    if (len > CSP_DATA_MAX)
        s->st.pings_too_long++;
    else
        reply(ctx, port, msg, len);
}

void sat_handle(sat *s, const csp_id *id, const uint8_t *msg, size_t len,
                sat_reply_fn reply, void *ctx) {
    if (len == 0)
        return;
    if (id->dport == CSP_PORT_PING)
        on_ping(s, msg, len, id->sport, reply, ctx);
    else if (id->dport == DIPP_PORT_UPLOAD)
        on_update(s, msg, len, id->sport, reply, ctx);
    else if (id->dport == DIPP_PORT_PARAM)
        on_param(s, msg, len, id->sport, reply, ctx);
    else if (id->dport == DIPP_PORT_IMAGES)
        on_images(s, msg, len, id->sport, reply, ctx);
    else if (id->dport == DIPP_PORT_PROCS)
        on_procs(s, msg, len, id->sport, reply, ctx);
}

int sat_idle_ms(const sat *s, int cap) {
    return sat_dish_idle_ms(&s->dish, plat_now_ms(), cap);
}

void sat_step(sat *s) {
    sat_step_at(s, plat_now_ms());
}

void sat_step_at(sat *s, uint64_t wall) {
    sat_dish_step(&s->dish, wall);
    for (int p = 1; p <= DISH_PIPELINES; p++)
        if (s->dish.captures & (1u << p))
            sat_dish_captured(&s->dish, p, sat_capture(s, (unsigned)p) == 0);
}
