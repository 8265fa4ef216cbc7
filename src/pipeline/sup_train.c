/* sup_train.c -- a supervisor's fires settled in order (supervisor.h):
 * each one's training set written, its training submitted to aegisd as
 * an ordinary job named PIPELINE:tN, waited for, and its model kept
 * (model_storage.keep_last the newest); or, with
 * training.coalesce_triggers, fires waiting behind a later one logged as
 * coalesced into it.
 */
#include "supervisor.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "submit.h"

void sup_file(const sup *s, const char *sub, const char *ext, uint32_t n,
              char *buf, size_t size) {
    snprintf(buf, size, "%s/%s/%u.%s", s->dir, sub, n, ext);
}

static const pl_trig *sup_trig(const sup *s, uint32_t n) {
    return n < s->log.ntrigs ? &s->log.trigs[n] : NULL;
}

/* The newest trigger before n that trained a model, kept or also one
 * model_storage.keep_last dropped since; -1: none. */
static int64_t sup_newest_done(const sup *s, uint32_t n, bool or_dropped) {
    for (uint32_t k = n; k-- > 0;) {
        const pl_trig *t = sup_trig(s, k);
        if (t && strcmp(t->state, "done") == 0 && (or_dropped || !t->dropped))
            return k;
    }
    return -1;
}

/* The newest trigger before n whose model is kept; -1: none. */
static int64_t sup_parent(const sup *s, uint32_t n) {
    return sup_newest_done(s, n, false);
}

int64_t sup_newest_model(const sup *s, char *path, size_t size) {
    /* dropped ones too: one dropped after a restart's log was written
     * was the newest when it was asked for (sup_embed.c keeps what it
     * answered then) */
    int64_t newest = sup_newest_done(s, s->nfires, true);
    if (newest >= 0)
        sup_file(s, "models", "model", (uint32_t)newest, path, size);
    return newest;
}

/* The trigger whose model trigger n's training starts from: the newest
 * kept with use_previous_model, else none (-1). */
static int64_t sup_start_model(const sup *s, uint32_t n) {
    return s->cfg.use_previous_model ? sup_parent(s, n) : -1;
}

/* What trigger n's training finds in its environment (docs/pipelines.md,
 * "The training command"): the supervisor's own, which the submit
 * carries, plus these. */
static void sup_training_env(const sup *s, uint32_t n, const sup_rho *rho) {
    char path[4400];
    sup_job_env(s, s->cfg.dataset);
    sup_file(s, "trainsets", "tset", n, path, sizeof(path));
    setenv("AEGIS_TRAINSET", rho->trainset[0] ? rho->trainset : path, 1);
    sup_file(s, "models", "model", n, path, sizeof(path));
    setenv("AEGIS_MODEL_OUT", path, 1);
    sup_setenv_u("AEGIS_TRIGGER", n);
    sup_setenv_u("AEGIS_EPOCHS_PER_TRIGGER", (unsigned long long)s->cfg.epochs);
    sup_setenv_u("AEGIS_BATCH_SIZE", (unsigned long long)s->cfg.batch_size);
    sup_setenv_u("AEGIS_SEED", s->cfg.seed);
    const json_t *downsampling = rho->failed ? NULL
                                 : pl_selector_downsampling(s->selector, n);
    char *text = downsampling ? json_dumps(downsampling, JSON_COMPACT) : NULL;
    if (text) setenv("AEGIS_DOWNSAMPLING", text, 1);
    free(text);
    if (rho->il[0] && !rho->failed) setenv("AEGIS_IL_LOSSES", rho->il, 1);
    int64_t parent = sup_start_model(s, n);
    if (parent >= 0) {
        sup_file(s, "models", "model", (uint32_t)parent, path, sizeof(path));
        setenv("AEGIS_PREV_MODEL", path, 1);
    }
}

static void sup_job_name(const sup *s, uint32_t n, char *buf, size_t size) {
    snprintf(buf, size, "%s:t%u", s->cfg.name, n);
}

/* Trigger n's training job submitted before a crash cut the log
 * short, if any (sup_find_job). */
static int64_t sup_find_training(sup *s, uint32_t n) {
    char name[128];
    sup_job_name(s, n, name, sizeof(name));
    return sup_find_job(s, name);
}

/* Submits trigger n's training (after RHO-LOSS's IL models, when its
 * downsampling needs them): its id, SUP_REFUSED or -1 (sup_job.c), with
 * err when the IL models could not be run. */
static int64_t sup_submit(sup *s, uint32_t n, char *err, size_t errlen) {
    char name[128];
    sup_rho rho;
    sup_job_name(s, n, name, sizeof(name));
    submit_defaults def = {.gpus = s->cfg.gpus, .mem = s->cfg.mem_mib,
                           .name = name, .mps_threads = s->cfg.mps_threads_pct};
    if (sup_rho_prepare(s, n, &rho, err, errlen) != 0) return -1;
    sup_training_env(s, n, &rho);
    return sup_submit_job(s, s->cfg.command, &def);
}

/* model_storage.keep_last: the oldest kept models past the newest N go. */
static int sup_retain(sup *s, char *err, size_t errlen) {
    long keep = s->cfg.keep_models, kept = 0;
    for (uint32_t k = (uint32_t)s->log.ntrigs; keep > 0 && k-- > 0;) {
        const pl_trig *t = sup_trig(s, k);
        if (!t || strcmp(t->state, "done") != 0 || t->dropped) continue;
        if (++kept <= keep) continue;
        char path[4400];
        sup_file(s, "models", "model", k, path, sizeof(path));
        unlink(path);
        if (pl_tlog_drop(&s->log, k, err, errlen) != 0) return -1;
        printf("trigger %u: model removed (model_storage.keep_last %ld)\n", k,
               keep);
    }
    return 0;
}

/* A replay's set, built on places in its order (path.place), as the
 * dataset's keys at path. */
static int sup_rekey(sup *s, const char *place, const char *path, char *err,
                     size_t errlen) {
    pl_trainset_item *items;
    size_t count;
    uint64_t seed;
    uint32_t trigger;
    if (pl_trainset_read(place, &items, &count, &seed, &trigger, err,
                         errlen) != 0)
        return -1;
    for (size_t i = 0; i < count; i++)
        items[i].key = s->order_keys[items[i].key];
    int rc = pl_trainset_write(path, items, count, seed, trigger, err, errlen);
    free(items);
    unlink(place);
    return rc;
}

/* Trigger n's training set, written to path. */
static int sup_build_set(sup *s, uint32_t n, const char *path, char *err,
                         size_t errlen) {
    char place[4500];
    uint64_t count;
    const pl_sample *samples = sup_samples(s, &count);
    snprintf(place, sizeof(place), "%s.place", path);
    if (pl_selector_build(s->selector, samples, s->bounds[n], s->bounds, n,
                          s->replay ? place : path, err, errlen) != 0)
        return -1;
    return s->replay ? sup_rekey(s, place, path, err, errlen) : 0;
}

int sup_read_set(const sup *s, uint32_t n, pl_trainset_item **items,
                 size_t *count) {
    char path[4400], err[512];
    uint64_t seed;
    uint32_t trigger;
    sup_file(s, "trainsets", "tset", n, path, sizeof(path));
    return pl_trainset_read(path, items, count, &seed, &trigger, err,
                            sizeof(err));
}

/* Trigger n's set, built before a restart, told to the selector as used,
 * so that freshness after the restart is what it would have been without
 * it (a set built by this process was noted as it was built). A replay's
 * sets hold the dataset's keys, not the places the selector counts. */
static void sup_note_set(sup *s, uint32_t n) {
    pl_trainset_item *items;
    size_t count;
    if (s->replay || sup_read_set(s, n, &items, &count) != 0) return;
    pl_selector_note_used(s->selector, items, count);
    free(items);
}

/* A training that ended "done" without its model at AEGIS_MODEL_OUT
 * trained nothing the pipeline can keep, start from or evaluate: its
 * state becomes "no-model", which nothing counts as trained. */
static void sup_check_model(const sup *s, uint32_t n, char *state,
                            size_t size) {
    char path[4400];
    struct stat st;
    sup_file(s, "models", "model", n, path, sizeof(path));
    if (strcmp(state, "done") != 0 ||
        (stat(path, &st) == 0 && S_ISREG(st.st_mode)))
        return;
    printf("trigger %u: its training ended done but wrote no model at %s "
           "(AEGIS_MODEL_OUT): counted as failed\n", n, path);
    snprintf(state, size, "no-model");
}

/* Trigger n: what its log lacks of fire, job and end, done in order. */
static int sup_train(sup *s, uint32_t n, char *err, size_t errlen) {
    const pl_trig *t = sup_trig(s, n);
    if (!t || !t->fired) {
        char path[4400];
        sup_file(s, "trainsets", "tset", n, path, sizeof(path));
        if (sup_build_set(s, n, path, err, errlen) != 0 ||
            pl_tlog_fire(&s->log, n, s->bounds[n], false, err, errlen) != 0)
            return -1;
        printf("trigger %u: fired after %" PRIu64 " samples; training set "
               "%s\n", n, s->bounds[n], path);
    }
    int64_t id = sup_trig(s, n)->job;
    char why[1024] = "aegisd took no training job";
    if (id == 0 && (id = sup_find_training(s, n)) == 0)
        id = sup_submit(s, n, why, sizeof(why));
    if (id == SUP_REFUSED) {
        printf("trigger %u: aegisd refused its training job: %s\n", n,
               s->refused);
        return pl_tlog_end(&s->log, n, "refused", err, errlen);
    }
    if (id < 0) {
        snprintf(err, errlen, "trigger %u: %s", n, why);
        return -1;
    }
    if (sup_trig(s, n)->job == 0) {
        if (pl_tlog_job(&s->log, n, id, sup_start_model(s, n), err,
                        errlen) != 0)
            return -1;
        printf("trigger %u: training job %" PRId64 "\n", n, id);
    }
    fflush(stdout);
    char state[16];
    if (sup_wait_job(s, id, state, sizeof(state)) != 0) {
        snprintf(err, errlen, "trigger %u: job %" PRId64 ": aegisd did not "
                 "say how it ended", n, id);
        return -1;
    }
    printf("trigger %u: job %" PRId64 " %s\n", n, id, state);
    sup_check_model(s, n, state, sizeof(state));
    if (pl_tlog_end(&s->log, n, state, err, errlen) != 0) return -1;
    if (strcmp(state, "done") != 0) return 0;
    return sup_note_trained(s, n, err, errlen) ||
           sup_retain(s, err, errlen) ||
           sup_evaluate(s, n, false, err, errlen) ? -1 : 0;
}

int sup_settle(sup *s, char *err, size_t errlen) {
    while (s->next < s->nfires) {
        uint32_t n = s->next;
        const pl_trig *t = sup_trig(s, n);
        if (t && t->fired && !t->skipped && n >= s->noted) sup_note_set(s, n);
        if (n >= s->noted) s->noted = n + 1;
        if (t && (t->skipped || t->state[0])) {
            /* trained before a restart: its evaluation may not be kept */
            if (strcmp(t->state, "done") == 0 &&
                (sup_note_trained(s, n, err, errlen) != 0 ||
                 sup_evaluate(s, n, false, err, errlen) != 0))
                return -1;
            s->next++;
            continue;
        }
        bool later = n + 1 < s->nfires;
        if (s->cfg.coalesce && later && !(t && t->fired)) {
            if (pl_tlog_fire(&s->log, n, s->bounds[n], true, err, errlen))
                return -1;
            printf("trigger %u: coalesced into a later one\n", n);
            s->next++;
            continue;
        }
        int rc = sup_train(s, n, err, errlen);
        if (rc == 0) s->next++;
        fflush(stdout);
        return rc; /* one training a call: the caller feeds new data */
    }
    return 0;
}

bool sup_done(const sup *s) {
    return s->cfg.max_triggers > 0 && s->next >= s->cfg.max_triggers;
}
