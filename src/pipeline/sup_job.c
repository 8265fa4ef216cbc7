/* sup_job.c -- a supervisor's jobs in aegisd (supervisor.h): submitted
 * with the supervisor's environment, found again by name after a crash,
 * and waited for through an aegisd restart. Trainings (sup_train.c),
 * embeddings (sup_embed.c) and evaluations (sup_eval.c) are all such
 * jobs.
 */
#include "supervisor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "client.h"

/* How long a supervisor waiting for a job waits for aegisd to come back
 * after it went away (seconds, one try a second). */
#define SUP_AEGISD_GONE_S 120

int64_t sup_find_job(sup *s, const char *name) {
    char uid[32];
    snprintf(uid, sizeof(uid), "%u", (unsigned)getuid());
    int rc;
    json_t *ans = client_call("pipeline", s->socket,
                              json_pack("{s:s, s:b, s:s}", "op", "ls", "all",
                                        1, "user", uid), &rc), *row;
    if (!ans) return -1;
    int64_t id = 0;
    size_t i;
    json_array_foreach(json_object_get(ans, "jobs"), i, row) {
        const char *rn = json_string_value(json_object_get(row, "name"));
        double at = json_number_value(json_object_get(row, "submitted"));
        if (rn && strcmp(rn, name) == 0 && at >= s->log.started - 1) {
            id = json_integer_value(json_object_get(row, "id"));
            break;
        }
    }
    json_decref(ans);
    return id;
}

int64_t sup_submit_job(sup *s, const json_t *command,
                       const submit_defaults *def) {
    json_t *jobs = json_array();
    json_array_append_new(jobs, submit_job(json_deep_copy(command), def));
    json_t *req = submit_request(jobs);
    int rc;
    /* aegisd's complaint is kept, not printed: a refusal is said on
     * stdout in the line that says what was refused, where `aegis
     * pipeline log` shows it (it prints stdout, then stderr: a reason on
     * stderr came after the line that pointed to it) */
    char said[sizeof(s->refused)] = "";
    client_complaints_to(said, sizeof(said));
    json_t *ans = req ? client_call("pipeline", s->socket, req, &rc) : NULL;
    client_complaints_to(NULL, 0);
    int64_t id = json_integer_value(json_array_get(json_object_get(ans, "ids"),
                                                   0));
    json_decref(ans);
    if (!ans && req && rc == CLI_USAGE) {
        snprintf(s->refused, sizeof(s->refused), "%s", said);
        return SUP_REFUSED;
    }
    if (!ans && said[0]) fprintf(stderr, "%s\n", said);
    return id > 0 ? id : -1;
}

int sup_wait_job(sup *s, int64_t id, char *state, size_t size) {
    int rc = CLI_FAIL;
    json_t *ans = NULL;
    for (int tries = 0; !ans && rc == CLI_FAIL && tries < SUP_AEGISD_GONE_S;
         tries++) {
        if (tries > 0) sleep(1);
        ans = client_call("pipeline", s->socket,
                          json_pack("{s:s, s:[I]}", "op", "wait", "ids",
                                    (json_int_t)id), &rc);
    }
    const char *st = json_string_value(
        json_object_get(json_array_get(json_object_get(ans, "jobs"), 0),
                        "state"));
    if (st) snprintf(state, size, "%s", st);
    json_decref(ans);
    return st ? 0 : -1;
}

void sup_job_env(const sup *s, const char *dataset) {
    static const char *const vars[] = {
        "AEGIS_TRAINSET", "AEGIS_MODEL_OUT", "AEGIS_PREV_MODEL",
        "AEGIS_TRIGGER", "AEGIS_EPOCHS_PER_TRIGGER", "AEGIS_BATCH_SIZE",
        "AEGIS_SEED", "AEGIS_EMBED_KEYS", "AEGIS_EMBED_OUT", "AEGIS_MODEL",
        "AEGIS_EVAL_KEYS", "AEGIS_EVAL_OUT", "AEGIS_DATASET",
        "AEGIS_DOWNSAMPLING", "AEGIS_IL_LOSSES", "AEGIS_IL_KEYS",
        "AEGIS_IL_OUT", "AEGIS_IL_CONFIG"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(*vars); i++)
        unsetenv(vars[i]);
    char path[4400];
    snprintf(path, sizeof(path), "%s/datasets/%s", s->state, dataset);
    setenv("AEGIS_DATASET", path, 1);
    setenv("AEGIS_PIPELINE", s->cfg.name, 1);
}

void sup_setenv_u(const char *key, unsigned long long v) {
    char text[32];
    snprintf(text, sizeof(text), "%llu", v);
    setenv(key, text, 1);
}

int sup_run_job(sup *s, const char *name, const pl_job_section *sec,
                sup_prepare_fn prepare, void *ctx, char *state, size_t size,
                char *err, size_t errlen) {
    int64_t id = sup_find_job(s, name);
    if (id == 0) {
        if (prepare(s, ctx, err, errlen) != 0) return -1;
        submit_defaults def = {.gpus = sec->gpus, .mem = sec->mem_mib,
                               .name = name};
        id = sup_submit_job(s, sec->command, &def);
    }
    if (id == SUP_REFUSED) {
        printf("%s: aegisd refused the job: %s\n", name, s->refused);
        snprintf(state, size, "refused");
        return 0;
    }
    if (id < 0 || sup_wait_job(s, id, state, size) != 0) {
        snprintf(err, errlen, "%s: aegisd took no job or did not say how it "
                 "ended", name);
        return -1;
    }
    printf("%s: job %lld %s\n", name, (long long)id, state);
    return 0;
}

double sup_job_seconds(sup *s, int64_t id) {
    int rc;
    json_t *ans = client_call("pipeline", s->socket,
                              json_pack("{s:s, s:I}", "op", "show", "id",
                                        (json_int_t)id), &rc), *a;
    json_t *job = json_object_get(ans, "job");
    double seconds = job ? 0 : -1;
    size_t i;
    json_array_foreach(json_object_get(job, "attempt_list"), i, a) {
        double from = json_number_value(json_object_get(a, "started"));
        double to = json_number_value(json_object_get(a, "ended"));
        if (to > from) seconds += to - from;
    }
    json_decref(ans);
    return seconds;
}
