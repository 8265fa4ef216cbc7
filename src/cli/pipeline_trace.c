/* pipeline_trace.c -- `aegis pipeline trace NAME`: a pipeline's trainings
 * as jobs of a simulator trace (docs/simulator.md, "Per-job columns"), so
 * that an admin can replay what a team's pipelines will ask of the shared
 * server beside everyone else's jobs (`aegis sim`).
 *
 * Each trained trigger is a row: submitted when its data ended (its
 * trigger's last sample's time, less --start), running the seconds aegisd
 * recorded it running, on the training's GPUs and declared memory. With
 * --merge TRACE the rows are added to that trace's: its columns first,
 * the per-job ones it lacks after them, its rows as they are.
 */
#include "pipeline_view.h"

#include "cli.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "csv.h"
#include "pl_file.h"
#include "pl_tlog.h"

/* The columns a pipeline's rows fill. */
static const char *const own_cols[] = {"submit_time_s", "user", "workload",
                                       "num_gpus", "mem_mib", "duration_s"};
#define NOWN (sizeof(own_cols) / sizeof(*own_cols))

/* One training as a trace row's figures. */
typedef struct pt_row {
    double submit_s, duration_s;
} pt_row;

typedef struct pt_job {
    const char *user;
    long gpus;
    double mem_mib;
    pt_row *rows;
    size_t nrows;
} pt_job;

/* The trained triggers' rows from models/N.json (sup_trained.c), their
 * times from start (NAN: the first one's). */
static int pt_rows(const char *dir, double start, pt_job *j) {
    char path[4400], err[512];
    pl_tlog log;
    snprintf(path, sizeof(path), "%s/triggers.log", dir);
    if (pl_tlog_open(path, false, &log, err, sizeof(err)) != 0) {
        fprintf(stderr, "aegis pipeline trace: %s\n", err);
        return -1;
    }
    j->rows = calloc(log.ntrigs ? log.ntrigs : 1, sizeof(*j->rows));
    for (size_t n = 0; j->rows && n < log.ntrigs; n++) {
        if (strcmp(log.trigs[n].state, "done") != 0) continue;
        json_error_t jerr;
        snprintf(path, sizeof(path), "%s/models/%zu.json", dir, n);
        json_t *doc = json_load_file(path, 0, &jerr);
        json_t *until = json_object_get(doc, "trained_until");
        json_t *secs = json_object_get(doc, "seconds");
        if (json_is_integer(until) && json_is_number(secs)) {
            double t = (double)json_integer_value(until);
            if (isnan(start)) start = t;
            j->rows[j->nrows++] = (pt_row){t - start, json_number_value(secs)};
        } else {
            fprintf(stderr, "aegis pipeline trace: %s: %s (trigger %zu left "
                    "out)\n", path, doc ? "no trained_until or seconds"
                                        : jerr.text, n);
        }
        json_decref(doc);
    }
    pl_tlog_close(&log);
    return j->rows ? 0 : -1;
}

/* Row r's cell of column name ("" for one it does not fill). */
static void pt_cell(const pt_job *j, const pt_row *r, const char *name,
                    char *buf, size_t size) {
    buf[0] = '\0';
    if (strcmp(name, "submit_time_s") == 0)
        snprintf(buf, size, "%.3f", r->submit_s < 0 ? 0 : r->submit_s);
    else if (strcmp(name, "user") == 0)
        snprintf(buf, size, "%s", j->user);
    else if (strcmp(name, "num_gpus") == 0)
        snprintf(buf, size, "%ld", j->gpus);
    else if (strcmp(name, "mem_mib") == 0)
        snprintf(buf, size, "%.0f", j->mem_mib);
    else if (strcmp(name, "duration_s") == 0)
        snprintf(buf, size, "%.3f", r->duration_s < 0.001 ? 0.001
                                                         : r->duration_s);
}

/* The pipeline's rows under the columns cols[0..n); job_index (when one
 * of them) numbered on from next_index. */
static void pt_print_rows(const pt_job *j, char *const *cols, int n,
                          int64_t next_index) {
    for (size_t i = 0; i < j->nrows; i++) {
        for (int c = 0; c < n; c++) {
            char cell[64];
            pt_cell(j, &j->rows[i], cols[c], cell, sizeof(cell));
            if (strcmp(cols[c], "job_index") == 0)
                snprintf(cell, sizeof(cell), "%" PRId64, next_index + (int64_t)i);
            printf("%s%s", c ? "," : "", cell);
        }
        putchar('\n');
    }
}

/* Whether name is among cols[0..n). */
static bool pt_has(char *const *cols, int n, const char *name) {
    for (int c = 0; c < n; c++)
        if (strcmp(cols[c], name) == 0) return true;
    return false;
}

/* TRACE's columns, then the per-job ones it lacks; its rows, padded;
 * then the pipeline's. */
static int pt_merge(const pt_job *j, const char *base) {
    char err[512], *cols[CSV_MAX_FIELDS];
    csv_file *f = csv_open(base, err, sizeof(err));
    if (!f) {
        fprintf(stderr, "aegis pipeline trace: %s\n", err);
        return CLI_USAGE;
    }
    int n = f->ncols, added = 0, rc;
    memcpy(cols, f->cols, sizeof(char *) * (size_t)n);
    for (size_t k = 0; k < NOWN && n < CSV_MAX_FIELDS; k++)
        if (!pt_has(cols, n, own_cols[k])) cols[n++] = (char *)own_cols[k];
    for (int c = 0; c < n; c++) printf("%s%s", c ? "," : "", cols[c]);
    putchar('\n');
    int index_col = csv_col(f, "job_index");
    int64_t next = 1;
    while ((rc = csv_next(f, err, sizeof(err))) == 1) {
        for (int c = 0; c < n; c++)
            printf("%s%s", c ? "," : "", c < f->ncols ? f->row[c] : "");
        putchar('\n');
        int64_t at = index_col >= 0 ? strtoll(f->row[index_col], NULL, 10)
                                    : ++added;
        if (at >= next) next = at + 1;
    }
    if (rc < 0) fprintf(stderr, "aegis pipeline trace: %s\n", err);
    else pt_print_rows(j, cols, n, next);
    csv_close(f);
    return rc < 0 ? CLI_USAGE : CLI_OK;
}

/* The training's GPUs and memory from the pipeline's kept file; mem_mib
 * (>= 0) overrides. */
static int pt_resources(const char *dir, double mem_mib, pt_job *j) {
    char path[4400], err[1024];
    pl_file cfg;
    snprintf(path, sizeof(path), "%s/pipeline.yaml", dir);
    if (pl_file_load(path, false, &cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "aegis pipeline trace: %s\n", err);
        return -1;
    }
    j->gpus = cfg.gpus;
    j->mem_mib = mem_mib >= 0 ? mem_mib : cfg.mem_mib;
    pl_file_free(&cfg);
    if (j->mem_mib >= 0) return 0;
    fprintf(stderr, "aegis pipeline trace: %s gives no training.mem or "
            "training.model: give --mem MIB (the simulator needs each job's "
            "memory)\n", path);
    return -1;
}

int pv_trace(const pv_trace_opts *o) {
    char dir[4200];
    pt_job j = {.user = o->user ? o->user : o->name};
    if (!pv_dir(o->name, dir, sizeof(dir))) return CLI_FAIL;
    if (access(dir, F_OK) != 0) {
        fprintf(stderr, "aegis pipeline trace: you have no pipeline %s\n",
                o->name);
        return CLI_USAGE;
    }
    if (pt_resources(dir, o->mem_mib, &j) != 0 ||
        pt_rows(dir, o->start, &j) != 0) {
        free(j.rows);
        return CLI_USAGE;
    }
    int rc = CLI_OK;
    if (o->merge) {
        rc = pt_merge(&j, o->merge);
    } else {
        for (size_t k = 0; k < NOWN; k++)
            printf("%s%s", k ? "," : "", own_cols[k]);
        putchar('\n');
        pt_print_rows(&j, (char *const *)own_cols, (int)NOWN, 1);
    }
    free(j.rows);
    return rc;
}
