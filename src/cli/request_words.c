/* request_words.c -- says aegisd's refusals of a request in the user's
 * words (request_words.h).
 *
 * aegisd checks every request whole, whoever sent it, and names the field
 * it refuses as the protocol spells it: "jobs[0].name", "update.mem_mib".
 * The client checks most values before sending, but some only aegisd can
 * (a job id in --after, its own limits). A user who typed --name, or a
 * spec's "name:", is told of that instead. */
#include "request_words.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const request_word request_words_submit_options[] = {
    {"cmd", "the command"},         {"name", "--name"},
    {"gpus", "--gpus"},             {"mem_mib", "--gpu-mem"},
    {"time_limit_s", "--time"},     {"feed", "--feed"},
    {"feed_producer", "--feed-producer"},
    {"after", "--after"},           {"mps_threads_pct", "--mps-threads"},
    {"nice", "--nice"},             {"notify", "--notify"},
    {"cpus", "--cpus"},             {"host_mem_mib", "--host-mem"},
    {"stdout_path", "--output"},    {"stderr_path", "--error"},
    {"array", "--array"},           {NULL, NULL},
};

const request_word request_words_spec_keys[] = {
    {"cmd", "command"},             {"name", "name"},
    {"gpus", "gpus"},               {"mem_mib", "mem"},
    {"time_limit_s", "time"},       {"feed", "feed"},
    {"feed_producer", "feed_producer"},
    {"after", "after"},             {"mps_threads_pct", "mps_threads_pct"},
    {"nice", "nice"},               {"notify", "notify"},
    {"cpus", "cpus"},               {"host_mem_mib", "host_mem"},
    {NULL, NULL},
};

const request_word request_words_aegis_spec_keys[] = {
    {"cmd", "job.command"},         {"gpus", "resources.num_gpus"},
    {"mem_mib", "resources.gpu_memory_requirement_mib"},
    {NULL, NULL},
};

static const char *typed_in(const request_word *words, const char *field,
                            size_t len) {
    for (; words && words->field; words++)
        if (strlen(words->field) == len && !strncmp(words->field, field, len))
            return words->typed;
    return NULL;
}

/* Whether job index's entry in the file gave field: yes unless w knows
 * the entry's fields and field is not among them. */
static bool given_in_file(const request_words *w, long index,
                          const char *field, size_t len) {
    json_t *given = json_array_get(w->given, (size_t)(index < 0 ? 0 : index));
    char name[64];
    if (!json_is_object(given) || len >= sizeof(name)) return true;
    memcpy(name, field, len);
    name[len] = '\0';
    return json_object_get(given, name) != NULL;
}

static const char *typed_as(const request_words *w, long index,
                            const char *field, size_t len) {
    const char *typed = typed_in(w->words, field, len);
    const char *option = typed_in(w->also, field, len);
    if (option && !given_in_file(w, index, field, len)) return option;
    return typed ? typed : option;
}

/* Past "[N]" at p, N into *index; NULL when p holds none. */
static const char *skip_index(const char *p, long *index) {
    if (*p != '[' || !isdigit((unsigned char)p[1])) return NULL;
    char *end;
    *index = strtol(p + 1, &end, 10);
    return *end == ']' ? end + 1 : NULL;
}

const char *request_words_job(const request_words *w, long index, char *buf,
                              size_t len) {
    char job[64] = "";
    json_int_t line = json_integer_value(json_array_get(w->lines,
                                                        (size_t)index));
    if (w->several && index >= 0 && line > 0)
        snprintf(job, sizeof(job), "job %ld (line %lld): ", index + 1,
                 (long long)line);
    else if (w->several && index >= 0)
        snprintf(job, sizeof(job), "job %ld: ", index + 1);
    snprintf(buf, len, "%s%s%s", w->file ? w->file : "", w->file ? ": " : "",
             job);
    return buf;
}

const char *request_words_say(const request_words *w, const char *err,
                              char *buf, size_t len) {
    size_t olen = strlen(w->object);
    if (strncmp(err, w->object, olen) != 0) return err;
    const char *p = err + olen;
    long index = -1;
    if (!strcmp(w->object, "jobs") && !(p = skip_index(p, &index))) return err;
    if (*p != '.') return err;
    const char *field = ++p;
    while (*p == '_' || islower((unsigned char)*p)) p++;
    const char *typed = typed_as(w, index, field, (size_t)(p - field));
    if (!typed || strncmp(p, ": ", 2) != 0) return err;
    char job[4200];
    int n = snprintf(buf, len, "%s%s%s",
                     request_words_job(w, index, job, sizeof(job)), typed, p);
    return n >= 0 && (size_t)n < len ? buf : err;
}
