/* sup_rho.c -- RHO-LOSS's auxiliary pipeline (supervisor.h): when the
 * downsampling in force for a trigger is RHOLoss with an
 * il_training_config command, the supervisor trains the irreducible-loss
 * (IL) model on a holdout of the trigger's training set before the
 * training, as Modyn's auxiliary pipeline does, and hands the training
 * each sample's irreducible loss:
 *
 *   Simple  holdout_set_ratio of the set (chosen at random, seeded by the
 *           pipeline's seed and the trigger) trains the IL model, which
 *           scores the rest; the training trains on the rest.
 *   Twin    two IL models, each trained on one half and scoring the
 *           other; the training trains on the whole set.
 *
 *   trainsets/N.il0.tset, N.il1.tset  what each IL job trains on
 *   trainsets/N.rest.tset             Simple: what the training trains on
 *   trainsets/N.il                    the losses: a training set's format,
 *                                     each key's weight its loss
 *
 * An IL job is an aegis job (PIPELINE:iN.M) running the command with
 * AEGIS_TRAINSET (its half), AEGIS_IL_KEYS (the samples to score) and
 * AEGIS_IL_OUT, where it writes one float32 loss a key, in order. N.il is
 * written last: a restart finds it and runs nothing again. An IL job that
 * fails is said in the log, and that trigger trains without downsampling.
 */
#include "supervisor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pl_rng.h"
#include "trainset.h"

/* One IL job: what it trains on and what it scores. */
typedef struct rho_job {
    char name[128], train[4400], keys[4400], out[4400];
    pl_trainset_item *score;    /* the keys it scores */
    size_t nscore;
    uint32_t n;
    const json_t *il;           /* il_training_config */
} rho_job;

/* The IL config of trigger n's downsampling, or NULL when its training
 * needs no auxiliary pipeline. */
static const json_t *rho_config(const sup *s, uint32_t n) {
    const json_t *d = pl_selector_downsampling(s->selector, n);
    const char *name = json_string_value(json_object_get(d, "strategy"));
    const json_t *il = json_object_get(d, "il_training_config");
    return name && strcmp(name, "RHOLoss") == 0 &&
           json_object_get(il, "command") ? d : NULL;
}

/* Shuffles items (seeded by the pipeline and the trigger), then sorts
 * each part back into key order: a training set's order. */
static void rho_shuffle(pl_trainset_item *items, size_t count, uint64_t seed,
                        uint32_t n) {
    pl_rng rng;
    pl_rng_seed(&rng, seed, 0x1a0000u + n);
    for (size_t i = count; i > 1; i--) {
        size_t j = (size_t)pl_rng_below(&rng, i);
        pl_trainset_item t = items[i - 1];
        items[i - 1] = items[j];
        items[j] = t;
    }
}

static int rho_key_cmp(const void *a, const void *b) {
    const pl_trainset_item *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}

/* items[0..k) and [k..count) each sorted and written as a set. */
static int rho_write_part(pl_trainset_item *part, size_t count,
                          const char *path, uint32_t n, char *err,
                          size_t errlen) {
    qsort(part, count, sizeof(*part), rho_key_cmp);
    return pl_trainset_write(path, part, count, 0, n, err, errlen);
}

/* What IL job m's command finds in its environment. */
static int rho_prepare(sup *s, void *ctx, char *err, size_t errlen) {
    const rho_job *j = ctx;
    if (pl_trainset_write(j->keys, j->score, j->nscore, 0, j->n, err,
                          errlen) != 0)
        return -1;
    unlink(j->out);
    sup_job_env(s, s->cfg.dataset);
    setenv("AEGIS_TRAINSET", j->train, 1);
    setenv("AEGIS_IL_KEYS", j->keys, 1);
    setenv("AEGIS_IL_OUT", j->out, 1);
    sup_setenv_u("AEGIS_TRIGGER", j->n);
    char *text = json_dumps(j->il, JSON_COMPACT);
    if (text) setenv("AEGIS_IL_CONFIG", text, 1);
    free(text);
    return 0;
}

/* The job's losses, one finite float32 a scored key, into the scored
 * items' weights. 0, or -1 with why. */
static int rho_read_losses(rho_job *j, char *why, size_t whylen) {
    FILE *f = fopen(j->out, "rb");
    struct stat st;
    int ok = f && fstat(fileno(f), &st) == 0 &&
             (size_t)st.st_size == j->nscore * sizeof(float);
    for (size_t i = 0; ok && i < j->nscore; i++) {
        float loss;
        ok = fread(&loss, sizeof(loss), 1, f) == 1 && isfinite(loss);
        j->score[i].weight = loss;
    }
    if (f) fclose(f);
    if (!ok)
        snprintf(why, whylen, "%s: not one finite float32 loss for each of "
                 "the %zu samples asked for", j->out, j->nscore);
    return ok ? 0 : -1;
}

/* Runs IL job j: 0 with its losses, 1 when it failed (said), -1 with
 * err (aegisd failed). */
static int rho_run(sup *s, rho_job *j, char *err, size_t errlen) {
    const json_t *il = j->il;
    pl_job_section sec = {.gpus = 1, .mem_mib = -1};
    const json_t *cmd = json_object_get(il, "command");
    char state[16], why[4600] = "";
    sec.command = json_is_string(cmd) ? submit_shell(json_string_value(cmd))
                                      : json_incref((json_t *)cmd);
    if (json_is_integer(json_object_get(il, "gpus")))
        sec.gpus = (long)json_integer_value(json_object_get(il, "gpus"));
    int rc = sup_run_job(s, j->name, &sec, rho_prepare, j, state,
                         sizeof(state), err, errlen);
    json_decref(sec.command);
    if (rc != 0) return -1;
    if (strcmp(state, "done") != 0)
        snprintf(why, sizeof(why), "its job ended %s", state);
    else if (rho_read_losses(j, why, sizeof(why)) == 0)
        return 0;
    printf("trigger %u: the IL model (%s): %s; trains without "
           "downsampling\n", j->n, j->name, why);
    return 1;
}

/* IL job m of trigger n, training on train[0..ntrain) and scoring
 * score[0..nscore) (its files under trainsets/). */
static void rho_job_init(const sup *s, uint32_t n, int m, const json_t *il,
                         rho_job *j) {
    char ext[32];
    j->n = n;
    j->il = il;
    snprintf(j->name, sizeof(j->name), "%s:i%u.%d", strrchr(s->dir, '/') + 1,
             n, m);
    snprintf(ext, sizeof(ext), "il%d.tset", m);
    sup_file(s, "trainsets", ext, n, j->train, sizeof(j->train));
    snprintf(ext, sizeof(ext), "il%d.keys", m);
    sup_file(s, "trainsets", ext, n, j->keys, sizeof(j->keys));
    snprintf(ext, sizeof(ext), "il%d.out", m);
    sup_file(s, "trainsets", ext, n, j->out, sizeof(j->out));
}

/* Runs the jobs, and keeps their losses, for the scored items all[0..n)
 * (sorted into key order). 0 (failed: said), or -1 with err. */
static int rho_losses(sup *s, rho_job *jobs, int njobs, pl_trainset_item *all,
                      size_t count, sup_rho *out, char *err, size_t errlen) {
    for (int m = 0; m < njobs; m++) {
        int rc = rho_run(s, &jobs[m], err, errlen);
        if (rc < 0) return -1;
        if (rc > 0) {
            out->failed = true;
            return 0;
        }
    }
    qsort(all, count, sizeof(*all), rho_key_cmp);
    return pl_trainset_write(out->il, all, count, 0, jobs[0].n, err, errlen);
}

/* Simple: the first holdout share of the shuffled set trains one IL
 * model, which scores the rest, the training's set. */
static int rho_simple(sup *s, uint32_t n, const json_t *d,
                      pl_trainset_item *items, size_t count, sup_rho *out,
                      char *err, size_t errlen) {
    json_int_t ratio = json_integer_value(json_object_get(d,
                                                          "holdout_set_ratio"));
    json_t *max_v = json_object_get(d, "holdout_set_ratio_max");
    json_int_t max = json_is_integer(max_v) ? json_integer_value(max_v) : 100;
    size_t hold = (size_t)((json_int_t)count * ratio / (max > 0 ? max : 100));
    if (hold == 0 && count > 1) hold = 1;
    if (hold >= count) hold = count - 1;
    rho_job job;
    memset(&job, 0, sizeof(job));
    rho_job_init(s, n, 0, json_object_get(d, "il_training_config"), &job);
    job.score = items + hold;
    job.nscore = count - hold;
    if (rho_write_part(items, hold, job.train, n, err, errlen) != 0 ||
        rho_write_part(job.score, job.nscore, out->trainset, n, err,
                       errlen) != 0)
        return -1;
    int rc = rho_losses(s, &job, 1, job.score, job.nscore, out, err, errlen);
    if (out->failed) out->trainset[0] = '\0'; /* the whole set, then */
    return rc;
}

/* Twin: each half trains an IL model that scores the other half; the
 * training trains on the whole set. */
static int rho_twin(sup *s, uint32_t n, const json_t *d,
                    pl_trainset_item *items, size_t count, sup_rho *out,
                    char *err, size_t errlen) {
    size_t half = count / 2;
    rho_job jobs[2];
    memset(jobs, 0, sizeof(jobs));
    const json_t *il = json_object_get(d, "il_training_config");
    for (int m = 0; m < 2; m++) rho_job_init(s, n, m, il, &jobs[m]);
    jobs[0].score = items + half;
    jobs[0].nscore = count - half;
    jobs[1].score = items;
    jobs[1].nscore = half;
    if (rho_write_part(items, half, jobs[0].train, n, err, errlen) != 0 ||
        rho_write_part(items + half, count - half, jobs[1].train, n, err,
                       errlen) != 0)
        return -1;
    return rho_losses(s, jobs, 2, items, count, out, err, errlen);
}

int sup_rho_prepare(sup *s, uint32_t n, sup_rho *out, char *err,
                    size_t errlen) {
    memset(out, 0, sizeof(*out));
    const json_t *d = rho_config(s, n);
    if (!d) return 0;
    const char *way = json_string_value(json_object_get(d,
                                                        "holdout_set_strategy"));
    bool twin = way && strcmp(way, "Twin") == 0;
    sup_file(s, "trainsets", "il", n, out->il, sizeof(out->il));
    if (!twin) sup_file(s, "trainsets", "rest.tset", n, out->trainset,
                        sizeof(out->trainset));
    if (access(out->il, F_OK) == 0) return 0; /* trained before a restart */
    pl_trainset_item *items = NULL;
    size_t count = 0;
    if (sup_read_set(s, n, &items, &count) != 0) {
        snprintf(err, errlen, "trigger %u: its training set cannot be read "
                 "for the IL model", n);
        return -1;
    }
    if (count < 2) {
        free(items);
        printf("trigger %u: too few samples for an IL model; trains "
               "without downsampling\n", n);
        out->failed = true;
        out->trainset[0] = '\0';
        return 0;
    }
    rho_shuffle(items, count, s->cfg.seed, n);
    int rc = twin ? rho_twin(s, n, d, items, count, out, err, errlen)
                  : rho_simple(s, n, d, items, count, out, err, errlen);
    free(items);
    return rc;
}
