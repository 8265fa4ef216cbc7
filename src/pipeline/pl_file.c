/* pl_file.c -- a pipeline file read and checked (pl_file.h): each
 * section's keys against a table of what aegis takes, what Modyn has
 * that aegis leaves to the training command (a warning), and nothing
 * else (an error naming the line).
 */
#include "pl_file.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core.h"
#include "proto.h"
#include "submit.h"

/* A key aegis reads (kind: its JSON type, checked here; 'a' any, read
 * by its own reader) or one of Modyn's it does not support ('-', with
 * what to do instead). */
typedef struct pl_key {
    const char *name;
    char kind;          /* 's' string, 'i' integer, 'b' boolean, 'o'
                           object, 'c' command, 'm' memory, 'a' any, '-' */
    const char *instead; /* for '-': where that goes in aegis */
} pl_key;

static const char modyn_training[] =
    "your training command's own business";
static const char modyn_data[] =
    "give it to aegis_pipeline in your training script";

static const pl_key top_keys[] = {
    {"pipeline", 'o', NULL}, {"data", 'o', NULL}, {"trigger", 'o', NULL},
    {"selection_strategy", 'o', NULL}, {"training", 'o', NULL},
    {"model_storage", 'o', NULL}, {"embedding", 'o', NULL},
    {"model", '-', "your training command builds its model"},
    {"evaluation", 'o', NULL},
    {NULL, 0, NULL}};
static const pl_key pipeline_keys[] = {
    {"name", 's', NULL}, {"description", 's', NULL}, {"version", 'a', NULL},
    {"maximum_triggers", 'i', NULL}, {NULL, 0, NULL}};
static const pl_key data_keys[] = {
    {"dataset_id", 's', NULL},
    {"bytes_parser_function", '-', modyn_data},
    {"transformations", '-', modyn_data},
    {"label_transformer_function", '-', modyn_data},
    {"tokenizer", '-', modyn_data}, {NULL, 0, NULL}};
static const pl_key training_keys[] = {
    {"command", 'c', NULL}, {"epochs_per_trigger", 'i', NULL},
    {"batch_size", 'i', NULL}, {"use_previous_model", 'b', NULL},
    {"coalesce_triggers", 'b', NULL}, {"seed", 'i', NULL},
    {"gpus", 'i', NULL}, {"mem", 'm', NULL}, {"model", 's', NULL},
    {"mps_threads_pct", 'i', NULL},
    {"device", '-', "aegisd places the job: give gpus, mem or model"},
    {"enable_accurate_gpu_measurements", '-',
     "aegisd records each job's run time and GPU energy itself"},
    {"num_samples_to_pass", '-', modyn_training},
    {"num_prefetched_partitions", '-', modyn_training},
    {"parallel_prefetch_requests", '-', modyn_training},
    {"amp", '-', modyn_training}, {"dataloader_workers", '-', modyn_training},
    {"drop_last_batch", '-', modyn_training}, {"shuffle", '-', modyn_training},
    {"initial_model", '-', modyn_training},
    {"initial_model_id", '-', modyn_training},
    {"checkpointing", '-', modyn_training},
    {"record_loss_every", '-', modyn_training},
    {"optimizers", '-', modyn_training},
    {"optimization_criterion", '-', modyn_training},
    {"lr_scheduler", '-', modyn_training},
    {"grad_scaler_config", '-', modyn_training}, {NULL, 0, NULL}};
static const pl_key embedding_keys[] = {
    {"command", 'c', NULL}, {"gpus", 'i', NULL}, {"mem", 'm', NULL},
    {NULL, 0, NULL}};
static const pl_key evaluation_keys[] = {
    {"command", 'c', NULL}, {"gpus", 'i', NULL}, {"mem", 'm', NULL},
    {"handlers", 'a', NULL}, {"datasets", 'a', NULL},
    {"device", '-', "aegisd places the job: give gpus and mem"},
    {"after_training_evaluation_workers", '-', "one job a model"},
    {"after_pipeline_evaluation_workers", '-', "one job a model"},
    {"result_writers", '-', "aegis keeps the results with the pipeline"},
    {NULL, 0, NULL}};
static const pl_key storage_keys[] = {
    {"keep_last", 'i', NULL},
    {"full_model_strategy", '-', "aegis keeps the file your command writes"},
    {"incremental_model_strategy", '-', "aegis keeps whole models"},
    {NULL, 0, NULL}};

bool pl_name_ok(const char *name) {
    size_t n = strlen(name);
    if (n < 1 || n > PL_NAME_MAX || name[0] == '.') return false;
    for (const char *c = name; *c; c++)
        if (!isalnum((unsigned char)*c) && !strchr("._-", *c)) return false;
    return true;
}

static const pl_key *pl_find_key(const pl_key *keys, const char *name) {
    for (const pl_key *k = keys; k->name; k++)
        if (strcmp(k->name, name) == 0) return k;
    return NULL;
}

/* Whether value v is of kind (see pl_key); what is expected in *want. */
static bool pl_kind_ok(char kind, json_t *v, const char **want) {
    switch (kind) {
    case 's': *want = "a string"; return json_is_string(v);
    case 'i': *want = "a whole number of at least 0";
        return json_is_integer(v) && json_integer_value(v) >= 0;
    case 'b': *want = "true or false"; return json_is_boolean(v);
    case 'o': *want = "a mapping"; return json_is_object(v);
    case 'm': *want = "an amount of memory (4g, 512m, or MiB)";
        return json_is_string(v) || json_is_number(v);
    case 'c': *want = "a command line or a list of words";
        return json_is_string(v) || json_is_array(v);
    default: *want = ""; return true;
    }
}

/* The keys of section obj (named section, "" for the file's top) against
 * keys: unknown ones are errors, Modyn's unsupported ones warnings (and
 * removed, so that nothing reads them). 0, or -1 with err. */
static int pl_check_keys(const pl_yaml *y, json_t *obj, const char *section,
                         const pl_key *keys, bool warn, char *err,
                         size_t errlen) {
    const char *name;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(obj, tmp, name, v) {
        char path[256];
        snprintf(path, sizeof(path), "%s%s%s", section, section[0] ? "." : "",
                 name);
        const pl_key *k = pl_find_key(keys, name);
        const char *want;
        if (!k) {
            pl_yaml_error(y, path, err, errlen, "unknown key "
                          "(docs/pipelines.md lists the keys)");
            return -1;
        }
        if (k->kind == '-') {
            if (warn)
                fprintf(stderr, "%s:%d: %s: Modyn's key, not aegis's: "
                        "ignored (%s)\n", y->path, pl_yaml_line(y, path),
                        path, k->instead);
            json_object_del(obj, name);
        } else if (!json_is_null(v) && !pl_kind_ok(k->kind, v, &want)) {
            pl_yaml_error(y, path, err, errlen, "expected %s", want);
            return -1;
        }
    }
    return 0;
}

/* Section name of the file, checked against keys; an empty mapping when
 * absent and not required. NULL with err. */
static json_t *pl_section(pl_file *cfg, const char *name,
                          const pl_key *keys, bool required, bool warn,
                          char *err, size_t errlen) {
    json_t *obj = json_object_get(cfg->doc.root, name);
    if (!obj && required) {
        pl_yaml_error(&cfg->doc, name, err, errlen, "missing section");
        return NULL;
    }
    if (!obj || json_is_null(obj)) {
        obj = json_object();
        json_object_set_new(cfg->doc.root, name, obj);
    }
    if (keys && pl_check_keys(&cfg->doc, obj, name, keys, warn, err, errlen))
        return NULL;
    return obj;
}

static const char *pl_string(json_t *obj, const char *key) {
    return json_string_value(json_object_get(obj, key));
}

/* An integer key of obj (checked to be >= 0 already) within [lo, hi], or
 * def when absent. */
static int pl_long(pl_file *cfg, json_t *obj, const char *path,
                   const char *key, long lo, long hi, long def, long *out,
                   char *err, size_t errlen) {
    json_t *v = json_object_get(obj, key);
    *out = json_is_integer(v) ? (long)json_integer_value(v) : def;
    if (*out >= lo && *out <= hi) return 0;
    char full[128];
    snprintf(full, sizeof(full), "%s.%s", path, key);
    pl_yaml_error(&cfg->doc, full, err, errlen, "expected %ld to %ld", lo, hi);
    return -1;
}

static int pl_read_pipeline(pl_file *cfg, bool warn, char *err,
                            size_t errlen) {
    json_t *p = pl_section(cfg, "pipeline", pipeline_keys, true, warn, err,
                           errlen);
    if (!p) return -1;
    cfg->name = pl_string(p, "name");
    if (!cfg->name || !pl_name_ok(cfg->name)) {
        pl_yaml_error(&cfg->doc, cfg->name ? "pipeline.name" : "pipeline",
                      err, errlen, "%s", cfg->name
                          ? "expected 1 to 40 letters, digits, '.', '_' or "
                            "'-' (it names a folder)"
                          : "missing key name");
        return -1;
    }
    json_t *data = pl_section(cfg, "data", data_keys, true, warn, err, errlen);
    if (!data) return -1;
    cfg->dataset = pl_string(data, "dataset_id");
    if (!cfg->dataset || !pl_name_ok(cfg->dataset)) {
        pl_yaml_error(&cfg->doc, cfg->dataset ? "data.dataset_id" : "data",
                      err, errlen, "%s", cfg->dataset
                          ? "expected a dataset's name (aegis dataset ls)"
                          : "missing key dataset_id");
        return -1;
    }
    return pl_long(cfg, p, "pipeline", "maximum_triggers", 0, 1000000000L, 0,
                   &cfg->max_triggers, err, errlen);
}

extern char **environ;

/* The most bytes one word of a command may hold: Linux's MAX_ARG_STRLEN
 * (32 pages of 4 KiB) less the word's NUL. exec refuses a longer word
 * (E2BIG): aegisd would take the job and only its start would fail. */
#define PL_MAX_WORD_BYTES (32u * 4096u - 1u)
/* Room kept within ARG_MAX beyond the command and this environment, which
 * the jobs inherit: the variables the supervisor adds (AEGIS_TRAINSET,
 * AEGIS_MODEL_OUT and the like, paths) and the shim's own arguments. */
#define PL_EXEC_SLACK (64u * 1024u)

/* What strings take of exec's ARG_MAX: each with its NUL and pointer. */
static size_t pl_exec_bytes(const char *s) {
    return strlen(s) + 1 + sizeof(char *);
}

static size_t pl_environ_bytes(void) {
    size_t n = 0;
    for (char **e = environ; *e; e++) n += pl_exec_bytes(*e);
    return n;
}

/* Whether argv, SECTION.command (written as a line when line), is one
 * that aegisd takes and exec can start, as checking it here says so at
 * `check` and `start` rather than at each trigger's job: at most
 * PROTO_MAX_ARGS words (aegisd's jobs[].cmd), none over
 * PL_MAX_WORD_BYTES, all of them with this environment within ARG_MAX. */
static int pl_command_fits(pl_file *cfg, json_t *argv, const char *section,
                           bool line, char *err, size_t errlen) {
    char path[64];
    size_t i, bytes = 0, words = json_array_size(argv);
    json_t *w;
    snprintf(path, sizeof(path), "%s.command", section);
    if (words > PROTO_MAX_ARGS) {
        pl_yaml_error(&cfg->doc, path, err, errlen, "%zu words, more than "
                      "aegisd takes (%d)", words, PROTO_MAX_ARGS);
        return -1;
    }
    json_array_foreach(argv, i, w) {
        size_t len = json_string_length(w);
        if (len > PL_MAX_WORD_BYTES) {
            if (!line)
                snprintf(path, sizeof(path), "%s.command[%zu]", section, i);
            pl_yaml_error(&cfg->doc, path, err, errlen, "%s of %zu bytes, "
                          "more than exec takes in one word (%u)",
                          line ? "a line" : "a word", len, PL_MAX_WORD_BYTES);
            return -1;
        }
        bytes += pl_exec_bytes(json_string_value(w));
    }
    long arg_max = sysconf(_SC_ARG_MAX);
    size_t env = pl_environ_bytes();
    if (arg_max > 0 && bytes + env + PL_EXEC_SLACK > (size_t)arg_max) {
        pl_yaml_error(&cfg->doc, path, err, errlen, "%zu bytes, which with "
                      "the environment's %zu and %u for aegis's own pass "
                      "the %ld exec takes (ARG_MAX)", bytes, env,
                      PL_EXEC_SLACK, arg_max);
        return -1;
    }
    return 0;
}

/* SECTION.command as argv into *out: a list of words as it is, a line
 * through /bin/sh -c. */
static int pl_read_command(pl_file *cfg, json_t *t, const char *section,
                           json_t **out, char *err, size_t errlen) {
    json_t *c = json_object_get(t, "command"), *w;
    char path[64];
    size_t i;
    if (!c || json_is_null(c)) {
        pl_yaml_error(&cfg->doc, section, err, errlen, "missing key command "
                      "(the %s job's command)", section);
        return -1;
    }
    json_array_foreach(c, i, w) if (!json_is_string(w)) {
        snprintf(path, sizeof(path), "%s.command[%zu]", section, i);
        pl_yaml_error(&cfg->doc, path, err, errlen, "expected a word");
        return -1;
    }
    const char *line = json_string_value(c);
    *out = !line ? json_incref(c)
           : line[strspn(line, " \t\n")] ? submit_shell(line) : NULL;
    if (!*out || json_array_size(*out) == 0) {
        snprintf(path, sizeof(path), "%s.command", section);
        pl_yaml_error(&cfg->doc, path, err, errlen, "expected a command");
        return -1;
    }
    return pl_command_fits(cfg, *out, section, line != NULL, err, errlen);
}

/* SECTION.mem into *out (< 0: not given), or the estimate of the
 * training section's model description. */
static int pl_read_memory(pl_file *cfg, json_t *t, const char *section,
                          double *out, char *err, size_t errlen) {
    json_t *mem = json_object_get(t, "mem");
    const char *model = pl_string(t, "model");
    char path[64];
    *out = -1;
    if (json_is_number(mem))
        *out = json_number_value(mem);
    else if (json_is_string(mem) &&
             submit_parse_mem(json_string_value(mem), out) != 0)
        *out = 0; /* refused below */
    /* aegisd takes a job's memory from 1 MiB (PROTO_MIN_MEM_MIB) */
    if ((json_is_number(mem) || json_is_string(mem)) &&
        !(*out >= PROTO_MIN_MEM_MIB && *out <= PROTO_MAX_MEM_MIB)) {
        snprintf(path, sizeof(path), "%s.mem", section);
        pl_yaml_error(&cfg->doc, path, err, errlen,
                      "expected an amount of memory (4g, 512m, or MiB) from "
                      "1 MiB to 1 TiB");
        return -1;
    }
    if (model && mem && !json_is_null(mem)) {
        pl_yaml_error(&cfg->doc, "training.model", err, errlen,
                      "give mem or model, not both");
        return -1;
    }
    if (model && submit_model_mem(model, out) != 0) {
        pl_yaml_error(&cfg->doc, "training.model", err, errlen,
                      "no estimate for %s (why: above)", model);
        return -1;
    }
    return 0;
}

static int pl_read_training(pl_file *cfg, bool warn, char *err,
                            size_t errlen) {
    json_t *t = pl_section(cfg, "training", training_keys, true, warn, err,
                           errlen);
    long seed;
    if (!t ||
        pl_read_command(cfg, t, "training", &cfg->command, err, errlen) ||
        pl_read_memory(cfg, t, "training", &cfg->mem_mib, err, errlen) ||
        pl_long(cfg, t, "training", "epochs_per_trigger", 1, 1000000, 1,
                &cfg->epochs, err, errlen) ||
        pl_long(cfg, t, "training", "batch_size", 0, 1L << 30, 0,
                &cfg->batch_size, err, errlen) ||
        pl_long(cfg, t, "training", "gpus", 1, CORE_MAX_JOB_GPUS, 1,
                &cfg->gpus, err, errlen) ||
        pl_long(cfg, t, "training", "mps_threads_pct", 0, 100, 0,
                &cfg->mps_threads_pct, err, errlen) ||
        pl_long(cfg, t, "training", "seed", 0, 0x7fffffffL, 0, &seed, err,
                errlen))
        return -1;
    cfg->seed = (uint64_t)seed;
    cfg->use_previous_model =
        json_is_true(json_object_get(t, "use_previous_model"));
    cfg->coalesce = json_is_true(json_object_get(t, "coalesce_triggers"));
    return 0;
}

/* Section name (embedding, evaluation), when the file has one: its
 * command and resources. */
static int pl_read_job_section(pl_file *cfg, const char *name,
                               const pl_key *keys, pl_job_section *out,
                               bool warn, char *err, size_t errlen) {
    out->mem_mib = -1;
    if (!json_object_get(cfg->doc.root, name)) return 0;
    json_t *t = pl_section(cfg, name, keys, false, warn, err, errlen);
    out->section = t;
    return !t ||
           pl_read_command(cfg, t, name, &out->command, err, errlen) ||
           pl_read_memory(cfg, t, name, &out->mem_mib, err, errlen) ||
           pl_long(cfg, t, name, "gpus", 1, CORE_MAX_JOB_GPUS, 1, &out->gpus,
                   err, errlen)
               ? -1 : 0;
}

int pl_file_load(const char *path, bool warn, pl_file *cfg, char *err,
                   size_t errlen) {
    memset(cfg, 0, sizeof(*cfg));
    if (pl_yaml_load(path, &cfg->doc, err, errlen) != 0) return -1;
    json_t *storage;
    if (pl_modyn_merge_keys(&cfg->doc, err, errlen) ||
        pl_check_keys(&cfg->doc, cfg->doc.root, "", top_keys, warn, err,
                      errlen) ||
        pl_read_pipeline(cfg, warn, err, errlen) ||
        pl_read_training(cfg, warn, err, errlen) ||
        pl_read_job_section(cfg, "embedding", embedding_keys,
                            &cfg->embedding, warn, err, errlen) ||
        pl_read_job_section(cfg, "evaluation", evaluation_keys,
                            &cfg->evaluation, warn, err, errlen) ||
        !(cfg->trigger = pl_section(cfg, "trigger", NULL, true, warn, err,
                                    errlen)) ||
        !(cfg->selection = pl_section(cfg, "selection_strategy", NULL, true,
                                      warn, err, errlen)) ||
        !(storage = pl_section(cfg, "model_storage", storage_keys, false,
                               warn, err, errlen)) ||
        pl_long(cfg, storage, "model_storage", "keep_last", 0, 1000000, 0,
                &cfg->keep_models, err, errlen) ||
        pl_modyn_bts_ratio(&cfg->doc, cfg->selection, cfg->batch_size, err,
                           errlen)) {
        pl_file_free(cfg);
        return -1;
    }
    pl_modyn_drop(&cfg->doc, cfg->trigger, cfg->selection, warn);
    pl_modyn_manual(&cfg->doc, cfg->evaluation.section, warn);
    return 0;
}

void pl_file_free(pl_file *cfg) {
    json_decref(cfg->command);
    json_decref(cfg->embedding.command);
    json_decref(cfg->evaluation.command);
    pl_yaml_free(&cfg->doc);
    memset(cfg, 0, sizeof(*cfg));
}
