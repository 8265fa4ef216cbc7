/* sup_main.c -- aegis-pipeline, a pipeline's supervisor (supervisor.h).
 * `aegis pipeline start` has aegisd run `aegis-pipeline run FILE` as the
 * owner; `check FILE` is what start runs first, so that a bad trigger or
 * selection section is told at once, with its line, not in a log.
 */
#include "supervisor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "client.h"

static const char usage[] =
    "usage: aegis-pipeline run FILE\n"
    "       aegis-pipeline replay FILE FROM TO\n"
    "       aegis-pipeline check FILE\n"
    "\n"
    "The supervisor of a pipeline: aegisd runs it for `aegis pipeline\n"
    "start` and `replay` (see aegis pipeline --help).\n"
    "\n"
    "  run     supervises pipeline FILE as it runs: feeds its trigger the\n"
    "          dataset's samples and submits each trigger's training\n"
    "  replay  the same over the samples with timestamps in [FROM, TO)\n"
    "          (Unix seconds), in timestamp order, then ends\n"
    "  check   checks FILE as start does, and changes nothing: every\n"
    "          section's keys and values (errors name FILE:LINE and the\n"
    "          key; Modyn's keys aegis ignores are warned of), its trigger,\n"
    "          selection, embedding and evaluation sections built as run\n"
    "          builds them, and its dataset one of yours\n"
    "\n"
    "Exit status: 0 success (check: the file is good; run and replay: the\n"
    "pipeline finished); 1 run or replay failed (the state folder, the\n"
    "dataset's logs, aegisd); 2 bad usage, or FILE refused (check: also a\n"
    "dataset_id that names no dataset of yours it can read).\n";

/* A supervisor's wait for data: long enough to cost nothing, short enough
 * that a change the watch missed is seen soon. */
#define SUP_LOOK_MS 5000

/* The embedding section's command embeds for every drift trigger; a
 * section no drift trigger uses is an error. */
static int sup_use_embedding(sup *s, char *err, size_t errlen) {
    if (!s->cfg.embedding.command) return 0;
    if ((s->asks_models = pl_trigger_set_embedder(s->trigger, sup_embed,
                                                  s) > 0))
        return 0;
    pl_yaml_error(&s->cfg.doc, "embedding", err, errlen, "no "
                  "DataDriftTrigger in the trigger section measures on its "
                  "embeddings");
    return -1;
}

/* Every PerformanceTrigger checks the newest model with the evaluation
 * section's command, which it then needs. */
static int sup_use_evaluator(sup *s, char *err, size_t errlen) {
    if (pl_trigger_set_evaluator(s->trigger, sup_perf, s) == 0) return 0;
    s->asks_models = true;
    if (s->cfg.evaluation.command) return 0;
    pl_yaml_error(&s->cfg.doc, "trigger", err, errlen, "a PerformanceTrigger "
                  "needs the evaluation section's command (it predicts the "
                  "samples each check scores)");
    return -1;
}

/* Cost triggers weigh the trainings' measured costs. */
static void sup_use_costs(sup *s) {
    if (pl_trigger_set_coster(s->trigger, sup_costs, s) > 0)
        s->asks_models = true;
}

/* The trigger, selector and evaluation of the file's sections; a
 * reader's message gets its line. 0, or -1 with err. */
static int sup_build(sup *s, char *err, size_t errlen) {
    char msg[1024];
    if (s->cfg.evaluation.section &&
        pl_eval_config_parse(s->cfg.evaluation.section, &s->eval, msg,
                             sizeof(msg)) != 0) {
        pl_yaml_locate(&s->cfg.doc, msg, err, errlen);
        return -1;
    }
    s->trigger = pl_trigger_new(s->cfg.trigger, msg, sizeof(msg));
    if (s->trigger && (sup_use_embedding(s, err, errlen) != 0 ||
                       sup_use_evaluator(s, err, errlen) != 0))
        return -1;
    if (s->trigger) sup_use_costs(s);
    if (s->trigger)
        s->selector = pl_selector_new(s->cfg.selection, s->cfg.seed, msg,
                                      sizeof(msg));
    if (s->trigger && s->selector) return 0;
    pl_yaml_locate(&s->cfg.doc, msg, err, errlen);
    return -1;
}

/* check: the file's dataset is one of the owner's (it can be opened). */
static int sup_check_dataset(sup *s, char *err, size_t errlen) {
    char msg[1024];
    if (!pl_state_dir(s->state, sizeof(s->state))) {
        snprintf(err, errlen, "no state folder: set AEGIS_STATE_HOME or HOME");
        return -1;
    }
    if (pl_dataset_open(s->state, s->cfg.dataset, &s->ds, msg,
                        sizeof(msg)) == 0)
        return 0;
    pl_yaml_error(&s->cfg.doc, "data.dataset_id", err, errlen, "%s (aegis "
                  "dataset ls lists yours)", msg);
    return -1;
}

/* The pipeline's folder and log, its dataset opened. */
static int sup_open(sup *s, const char *suffix, char *err, size_t errlen) {
    char name[128], sub[4400];
    snprintf(name, sizeof(name), "%s%s", s->cfg.name, suffix);
    if (!pl_state_dir(s->state, sizeof(s->state)) ||
        !pl_dir(s->state, name, s->dir, sizeof(s->dir))) {
        snprintf(err, errlen, "no state folder: set AEGIS_STATE_HOME or HOME");
        return -1;
    }
    const char *subs[] = {"trainsets", "models", "embeddings", "evals",
                          "checks"};
    for (size_t i = 0; i < sizeof(subs) / sizeof(*subs); i++) {
        snprintf(sub, sizeof(sub), "%s/%s", s->dir, subs[i]);
        if (pl_mkdirs(sub, err, errlen) != 0) return -1;
    }
    snprintf(sub, sizeof(sub), "%s/triggers.log", s->dir);
    return pl_tlog_open(sub, true, &s->log, err, errlen) ||
           pl_dataset_open(s->state, s->cfg.dataset, &s->ds, err, errlen) ||
           (!s->replay && sup_watch_open(s, err, errlen));
}

static int sup_ts_cmp(const void *a, const void *b) {
    const pl_sample *x = a, *y = b;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return x->key < y->key ? -1 : x->key > y->key;
}

/* A replay's samples: those of [from, to), in timestamp order. */
static int sup_replay_order(sup *s, char *err, size_t errlen) {
    if (pl_dataset_refresh(s->ds, err, errlen) != 0) return -1;
    uint64_t n = pl_dataset_count(s->ds);
    const pl_sample *all = pl_dataset_samples(s->ds);
    s->order = malloc(sizeof(*s->order) * (n ? n : 1));
    s->order_keys = malloc(sizeof(*s->order_keys) * (n ? n : 1));
    if (!s->order || !s->order_keys) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (uint64_t k = 0; k < n; k++)
        if (all[k].ts >= s->from && all[k].ts < s->to)
            s->order[s->norder++] = all[k];
    qsort(s->order, s->norder, sizeof(*s->order), sup_ts_cmp);
    for (uint64_t i = 0; i < s->norder; i++) {
        s->order_keys[i] = s->order[i].key;
        s->order[i].key = i;
    }
    return 0;
}

/* Feeds, settles and waits for data until maximum_triggers are settled
 * (or, in a replay, every sample): 0, or -1 with err. */
static int sup_loop(sup *s, char *err, size_t errlen) {
    for (;;) {
        uint32_t before = s->next;
        if (sup_feed(s, err, errlen) != 0 || sup_settle(s, err, errlen) != 0)
            return -1;
        if (sup_done(s)) return 0;
        if (s->next != before) continue; /* new data came meanwhile */
        if (s->replay && s->next == s->nfires) return 0;
        sup_wait_data(s, SUP_LOOK_MS);
    }
}

/* The pipeline has ended: every trained model evaluated by the
 * after_pipeline handlers, which know all models now. */
static int sup_finish(sup *s, char *err, size_t errlen) {
    for (uint32_t n = 0; n < s->nfires && n < s->log.ntrigs; n++)
        if (strcmp(s->log.trigs[n].state, "done") == 0 &&
            sup_evaluate(s, n, true, err, errlen) != 0)
            return -1;
    return 0;
}

static void sup_close(sup *s) {
    pl_eval_config_free(&s->eval);
    pl_trigger_free(s->trigger);
    pl_selector_free(s->selector);
    if (s->ds) pl_dataset_close(s->ds);
    if (s->watch_fd >= 0) close(s->watch_fd);
    if (s->watcher) pl_watch_close(s->watcher);
    pl_tlog_close(&s->log);
    pl_file_free(&s->cfg);
    free(s->bounds);
    free(s->cost_samples);
    free(s->cost_seconds);
    free(s->order);
    free(s->order_keys);
}

/* Parses a replay bound (Unix time, seconds). */
static int sup_time(const char *text, int64_t *out) {
    char *end;
    long long v = strtoll(text, &end, 10);
    *out = v;
    return *text && !*end ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--help") == 0) {
        fputs(usage, stdout);
        return CLI_OK;
    }
    bool run = argc == 3 && strcmp(argv[1], "run") == 0;
    bool check = argc == 3 && strcmp(argv[1], "check") == 0;
    sup s = {.watch_fd = -1, .watcher_fd = -1, .socket = client_socket(NULL), .log.fd = -1};
    s.replay = argc == 5 && strcmp(argv[1], "replay") == 0;
    if ((!run && !check && !s.replay) ||
        (s.replay && (sup_time(argv[3], &s.from) || sup_time(argv[4], &s.to)))) {
        fputs(usage, stderr);
        return CLI_USAGE;
    }
    char err[2048];
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (pl_file_load(argv[2], check, &s.cfg, err, sizeof(err)) != 0 ||
        sup_build(&s, err, sizeof(err)) != 0 ||
        (check && sup_check_dataset(&s, err, sizeof(err)) != 0)) {
        fprintf(stderr, "aegis-pipeline: %s\n", err);
        sup_close(&s);
        return CLI_USAGE;
    }
    int rc = 0;
    if (!check)
        rc = sup_open(&s, s.replay ? ".replay" : "", err, sizeof(err)) ||
             (s.replay && sup_replay_order(&s, err, sizeof(err))) ||
             sup_loop(&s, err, sizeof(err)) ||
             sup_finish(&s, err, sizeof(err));
    if (rc) fprintf(stderr, "aegis-pipeline: %s: %s\n", s.cfg.name, err);
    else if (!check) printf("pipeline %s: finished\n", s.cfg.name);
    sup_close(&s);
    return rc ? CLI_FAIL : CLI_OK;
}
