/* pipeline_view.c -- `aegis pipeline ls|show|models` (pipeline_view.h):
 * aegisd's rows of the supervisors joined with each pipeline's trigger
 * log, read (never written) from the caller's state folder.
 */
#include "pipeline_view.h"

#include "cli.h"
#include "client.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset.h"
#include "pl_tlog.h"
#include "text_safe.h"

json_t *pv_supervisors(const char *socket, bool all, int *rc) {
    char uid[32];
    snprintf(uid, sizeof(uid), "%u", (unsigned)getuid());
    json_t *ans = client_call("pipeline", socket,
                              json_pack("{s:s, s:b, s:s}", "op", "ls", "all",
                                        all, "user", uid), rc), *row;
    if (!ans) return NULL;
    json_t *out = json_array();
    size_t i;
    json_array_foreach(json_object_get(ans, "jobs"), i, row) {
        const char *kind = json_string_value(json_object_get(row, "kind"));
        if (kind && strcmp(kind, "pipeline") == 0)
            json_array_append(out, row);
    }
    json_decref(ans);
    return out;
}

json_t *pv_find(json_t *list, const char *name) {
    json_t *found = NULL, *row;
    size_t i;
    json_array_foreach(list, i, row) {
        const char *p = json_string_value(json_object_get(row, "pipeline"));
        if (p && strcmp(p, name) == 0) found = row; /* the newest wins */
    }
    return found;
}

char *pv_dir(const char *name, char *buf, size_t size) {
    char state[4096];
    if (!pl_state_dir(state, sizeof(state)) ||
        !pl_dir(state, name, buf, size)) {
        fprintf(stderr, "aegis pipeline: no state folder: set "
                "AEGIS_STATE_HOME or HOME\n");
        return NULL;
    }
    return buf;
}

/* Pipeline name's trigger log, read only: 1; 0 when it has none yet; -1
 * when it cannot be read, said here, once (the error names the file and
 * line): the caller fails, rather than show no triggers or no pipeline. */
static int pv_log(const char *name, pl_tlog *log) {
    char dir[4200], path[4300], err[512];
    if (!pv_dir(name, dir, sizeof(dir))) return -1;
    snprintf(path, sizeof(path), "%s/triggers.log", dir);
    if (pl_tlog_open(path, false, log, err, sizeof(err)) == 0) return 1;
    if (access(path, F_OK) != 0) return 0;
    fprintf(stderr, "aegis pipeline: %s\n", err);
    return -1;
}

int pv_exists(const char *name) {
    pl_tlog log;
    int has = pv_log(name, &log);
    if (has > 0) pl_tlog_close(&log);
    return has;
}

/* The log's triggers as JSON rows {trigger, end, job, state, coalesced}.
 * The log is a file: a byte of its end record's word that starts no UTF-8
 * character is '?' here, as jansson takes no such string (the whole row
 * was lost); its controls stay for the printer to show safe. */
static json_t *pv_triggers(const pl_tlog *log) {
    json_t *rows = json_array();
    for (size_t n = 0; n < log->ntrigs; n++) {
        const pl_trig *t = &log->trigs[n];
        if (!t->fired) continue;
        char ended[sizeof(t->state)];
        text_as_utf8(ended, sizeof(ended), t->state);
        json_array_append_new(rows, json_pack(
            "{s:I, s:I, s:I, s:s, s:b}", "trigger", (json_int_t)n,
            "end", (json_int_t)t->end, "job", (json_int_t)t->job, "state",
            t->skipped ? "coalesced" : ended[0] ? ended
                       : t->job ? "training" : "fired",
            "coalesced", t->skipped));
    }
    return rows;
}

/* A supervisor row with its log's counts (log: NULL when it has none):
 * triggers, trained. */
static json_t *pv_summary(json_t *row, const pl_tlog *log) {
    const char *name = json_string_value(json_object_get(row, "pipeline"));
    json_t *out = json_pack("{s:s, s:O, s:O, s:O}", "name", name, "job",
                            json_object_get(row, "id"), "state",
                            json_object_get(row, "state"), "attempts",
                            json_object_get(row, "attempts"));
    json_int_t fired = 0, trained = 0;
    for (size_t n = 0; log && n < log->ntrigs; n++) {
        fired += log->trigs[n].fired;
        trained += strcmp(log->trigs[n].state, "done") == 0;
    }
    json_object_set_new(out, "triggers", json_integer(fired));
    json_object_set_new(out, "trained", json_integer(trained));
    return out;
}

/* ls's line of a supervisor row: its counts from its trigger log, or,
 * where that log cannot be read (said on stderr), unknown: "?" and null,
 * and *rc a failure. */
static void pv_ls_row(json_t *row, bool json, int *rc) {
    const char *name = json_string_value(json_object_get(row, "pipeline"));
    pl_tlog log;
    int has = pv_log(name, &log);
    json_t *s = pv_summary(row, has > 0 ? &log : NULL);
    if (has > 0) pl_tlog_close(&log);
    if (has < 0) {
        json_object_set_new(s, "triggers", json_null());
        json_object_set_new(s, "trained", json_null());
        *rc = CLI_FAIL;
    }
    char triggers[24] = "?", trained[24] = "?";
    if (has >= 0) {
        snprintf(triggers, sizeof(triggers), "%" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(s, "triggers")));
        snprintf(trained, sizeof(trained), "%" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(s, "trained")));
    }
    if (json)
        client_print_json(s);
    else
        printf("%-24s %-8" JSON_INTEGER_FORMAT " %-8s %-9s %s\n", name,
               json_integer_value(json_object_get(s, "job")),
               json_string_value(json_object_get(s, "state")), triggers,
               trained);
    json_decref(s);
}

int pv_ls(const char *socket, bool json) {
    int rc;
    json_t *list = pv_supervisors(socket, false, &rc), *row;
    if (!list) return rc;
    size_t i;
    if (!json && json_array_size(list) == 0) printf("no pipelines running\n");
    else if (!json) printf("%-24s %-8s %-8s %-9s %s\n", "NAME", "JOB", "STATE",
                           "TRIGGERS", "TRAINED");
    rc = CLI_OK;
    json_array_foreach(list, i, row) pv_ls_row(row, json, &rc);
    json_decref(list);
    return rc;
}

int pv_show(const char *socket, const char *name, bool json) {
    int rc;
    json_t *list = pv_supervisors(socket, true, &rc);
    if (!list) return rc;
    json_t *row = pv_find(list, name);
    pl_tlog log;
    int has = pv_log(name, &log);
    bool has_log = has > 0;
    if (has < 0 || (!row && !has_log)) {
        if (has == 0)
            fprintf(stderr, "aegis pipeline show: you have no pipeline %s\n",
                    name);
        json_decref(list);
        return has < 0 ? CLI_FAIL : CLI_USAGE;
    }
    /* no row: a folder of name, which anyone may have made by hand */
    json_t *out = row ? pv_summary(row, has_log ? &log : NULL)
                      : json_pack("{s:o}", "name", client_json_text(name));
    json_object_set_new(out, "trigger_list",
                        has_log ? pv_triggers(&log) : json_array());
    if (has_log) pl_tlog_close(&log);
    if (json) {
        client_print_json(out);
    } else {
        json_t *t;
        size_t i;
        printf("pipeline %s: supervisor job %" JSON_INTEGER_FORMAT " %s\n",
               name, json_integer_value(json_object_get(out, "job")),
               row ? json_string_value(json_object_get(out, "state"))
                   : "(none)");
        printf("%-8s %-12s %-8s %s\n", "TRIGGER", "AFTER", "JOB", "STATE");
        json_array_foreach(json_object_get(out, "trigger_list"), i, t) {
            /* a word of the trigger log, a file: shown safe when root
             * reads a user's (AEGIS_STATE_HOME) */
            char state[32];
            text_safe(state, sizeof(state),
                      json_string_value(json_object_get(t, "state")));
            printf("%-8" JSON_INTEGER_FORMAT " %-12" JSON_INTEGER_FORMAT
                   " %-8" JSON_INTEGER_FORMAT " %s\n",
                   json_integer_value(json_object_get(t, "trigger")),
                   json_integer_value(json_object_get(t, "end")),
                   json_integer_value(json_object_get(t, "job")), state);
        }
    }
    json_decref(out);
    json_decref(list);
    return CLI_OK;
}

/* The trained triggers' models: each with its parent (the model its
 * training started from, with use_previous_model) and whether its file
 * is still kept. Its path is under the state folder, whatever bytes that
 * folder's path holds: one that starts no UTF-8 character is '?' here
 * (client_json_text()), as one left every row out. */
static json_t *pv_model_rows(const char *dir, const pl_tlog *log) {
    json_t *rows = json_array();
    for (size_t n = 0; n < log->ntrigs; n++) {
        const pl_trig *t = &log->trigs[n];
        if (strcmp(t->state, "done") != 0) continue;
        char path[4400];
        struct stat st;
        snprintf(path, sizeof(path), "%s/models/%zu.model", dir, n);
        bool kept = !t->dropped && stat(path, &st) == 0;
        json_t *row = json_pack("{s:I, s:I, s:o, s:b, s:I}", "trigger",
                                (json_int_t)n, "job", (json_int_t)t->job,
                                "path", client_json_text(path), "kept", kept,
                                "bytes",
                                (json_int_t)(kept ? st.st_size : 0));
        json_object_set_new(row, "parent", t->parent >= 0
                                               ? json_integer(t->parent)
                                               : json_null());
        json_array_append_new(rows, row);
    }
    return rows;
}

/* A model's row as models' line: its path shown safe (a state folder
 * root reads for a user, AEGIS_STATE_HOME, is that user's text). */
static void pv_model_line(json_t *r, const char *parent) {
    printf("%-8" JSON_INTEGER_FORMAT " %-8" JSON_INTEGER_FORMAT " %-7s %-6s ",
           json_integer_value(json_object_get(r, "trigger")),
           json_integer_value(json_object_get(r, "job")), parent,
           json_is_true(json_object_get(r, "kept")) ? "yes" : "no");
    client_print_safe(json_string_value(json_object_get(r, "path")));
    putchar('\n');
}

int pv_models(const char *name, bool json) {
    char dir[4200];
    pl_tlog log;
    if (!pv_dir(name, dir, sizeof(dir))) return CLI_FAIL;
    int has = pv_log(name, &log);
    if (has <= 0) {
        if (has == 0)
            fprintf(stderr, "aegis pipeline models: you have no pipeline "
                    "%s\n", name);
        return has < 0 ? CLI_FAIL : CLI_USAGE;
    }
    json_t *rows = pv_model_rows(dir, &log), *r;
    pl_tlog_close(&log);
    size_t i;
    if (!json) printf("%-8s %-8s %-7s %-6s %s\n", "TRIGGER", "JOB", "PARENT",
                      "KEPT", "PATH");
    json_array_foreach(rows, i, r) {
        json_t *parent = json_object_get(r, "parent");
        char ptext[24] = "-";
        if (json_is_integer(parent))
            snprintf(ptext, sizeof(ptext), "%" JSON_INTEGER_FORMAT,
                     json_integer_value(parent));
        if (json)
            client_print_json(r);
        else
            pv_model_line(r, ptext);
    }
    json_decref(rows);
    return CLI_OK;
}
