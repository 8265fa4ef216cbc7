/* sup_trained.c -- a trained model's facts, kept beside it as
 * models/N.json (supervisor.h): when its data ended (the timestamp of its
 * trigger's last sample: when it could start serving), how many samples
 * it trained on, its job and how long aegisd recorded it running. What
 * `aegis pipeline compare` and `aegis pipeline trace` read, so they need
 * neither the dataset nor a replay's order.
 */
#include "supervisor.h"

#include <stdlib.h>
#include <unistd.h>

/* Trigger n's training set size; -1 when it cannot be read. */
static json_int_t st_set_size(const sup *s, uint32_t n) {
    pl_trainset_item *items;
    size_t count;
    if (sup_read_set(s, n, &items, &count) != 0) return -1;
    free(items);
    return (json_int_t)count;
}

int sup_note_trained(sup *s, uint32_t n, char *err, size_t errlen) {
    char path[4400];
    sup_file(s, "models", "json", n, path, sizeof(path));
    if (access(path, F_OK) == 0) return 0;
    uint64_t count;
    const pl_sample *fed = sup_samples(s, &count);
    uint64_t last = s->bounds[n] - 1;
    int64_t job = s->log.trigs[n].job;
    double seconds = sup_job_seconds(s, job);
    json_t *doc = json_pack("{s:I, s:o, s:I, s:I, s:o}", "trigger",
                            (json_int_t)n, "trained_until",
                            last < count ? json_integer(fed[last].ts)
                                         : json_null(),
                            "samples", st_set_size(s, n), "job",
                            (json_int_t)job, "seconds",
                            seconds >= 0 ? json_real(seconds) : json_null());
    int rc = sup_keep_json(path, doc, err, errlen);
    json_decref(doc);
    return rc;
}
