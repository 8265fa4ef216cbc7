/* acct.c -- measuring a job's report row and writing it as JSON and CSV.
 *
 * The one list of columns, ACCT_COLUMNS, drives both: a row's JSON object
 * has exactly these keys (a cell with no value is JSON null and an empty
 * CSV field), and the CSV writes them in this order. CodeCarbon's
 * emissions.csv names come first, in its units (kWh, kg CO2eq, s, W).
 */
#include "acct.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct acct_column {
    const char *name;
    const char *meaning;    /* unit and meaning: the schema, for readers */
} acct_column;

static const acct_column ACCT_COLUMNS[] = {
    /* CodeCarbon's emissions.csv names, same meanings and units */
    {"timestamp", "when the job finished (now if unfinished), ISO 8601 UTC"},
    {"project_name", "the job's --name (the workload in sim); may be empty"},
    {"duration", "s, time its attempts ran"},
    {"emissions", "kg CO2eq, energy_consumed x pue x intensity, at the "
                  "figures in force while the job ran"},
    {"emissions_rate", "kg CO2eq per s of duration"},
    {"gpu_power", "W, mean GPU power over duration"},
    {"gpu_energy", "kWh, its share of its GPUs' energy"},
    {"energy_consumed", "kWh, all measured energy: the GPUs' only"},
    {"gpu_count", "GPUs the job asked for"},
    {"pue", "power usage effectiveness applied (in force while it ran)"},
    /* aegis's own */
    {"job_id", "the job's id (the trace's job index in sim)"},
    {"user", "who submitted it (\"sim\" in the simulator)"},
    {"state", "done, failed, cancelled, timeout, queued, running (sim: "
              "done, stopped, unfinished)"},
    {"submit_s", "s, submitted at (Unix time; trace time in sim)"},
    {"start_s", "s, first attempt started; empty if it never ran"},
    {"end_s", "s, finished at; empty while unfinished"},
    {"attempts", "attempts started"},
    {"queue_wait_s", "s, queued before and between attempts"},
    {"gpu_hours", "sum of GPUs x attempt duration, h"},
    {"energy_j", "J, gpu_energy in joules"},
    {"co2_g", "g CO2eq, emissions in grams"},
    {"slowdown", "JCT / its last attempt's duration; empty unless done"},
    {"grid_intensity_g_per_kwh", "gCO2eq per kWh applied (in force while "
                                 "it ran)"},
};
#define ACCT_NCOLUMNS (sizeof(ACCT_COLUMNS) / sizeof(*ACCT_COLUMNS))

void acct_params_default(acct_params *p) {
    p->grid_g_per_kwh = ACCT_GRID_DEFAULT;
    p->pue = ACCT_PUE_DEFAULT;
}

double acct_kwh(double joules) { return joules / 3.6e6; }

double acct_co2_g(double kwh, const acct_params *p) {
    return kwh * p->pue * p->grid_g_per_kwh;
}

static double acct_span_s(const acct_span *a, double now) {
    double d = (a->end < 0 ? now : a->end) - a->start;
    return d > 0 ? d : 0;
}

double acct_gpu_hours(const acct_span *a, size_t n, double now) {
    double h = 0;
    for (size_t i = 0; i < n; i++) h += a[i].gpus * acct_span_s(&a[i], now);
    return h / 3600;
}

void acct_row_measure(acct_row *r, const acct_span *a, size_t n, double now) {
    double until = r->end_s >= 0 ? r->end_s : now;
    r->attempts = (int)n;
    r->start_s = n > 0 ? a[0].start : -1;
    r->run_s = r->queue_wait_s = 0;
    double queued_since = r->submit_s;
    for (size_t i = 0; i < n; i++) {
        if (a[i].start > queued_since) r->queue_wait_s += a[i].start - queued_since;
        r->run_s += acct_span_s(&a[i], now);
        queued_since = a[i].end < 0 ? -1 : a[i].end;
        if (queued_since < 0) break; /* running now: not waiting */
    }
    /* the tail: a job back in the queue, or cancelled while there */
    if (queued_since >= 0 && until > queued_since)
        r->queue_wait_s += until - queued_since;
    r->gpu_hours = acct_gpu_hours(a, n, now);
    r->slowdown = -1;
    if (strcmp(r->state, "done") == 0 && n > 0 && r->end_s >= 0) {
        double last = acct_span_s(&a[n - 1], now);
        if (last > 0) r->slowdown = (r->end_s - r->submit_s) / last;
    }
}

/* Whether r carries the CO2 it ran at (see acct_row). */
static bool acct_stamped(const acct_row *r) {
    return r->pue_j > 0 && r->energy_j > 0;
}

void acct_total_add(acct_total *t, const acct_row *r) {
    t->jobs++;
    if (acct_stamped(r)) t->co2_g += r->co2_g;
    else t->unstamped_j += r->energy_j;
    t->run_s += r->run_s;
    t->queue_wait_s += r->queue_wait_s;
    t->gpu_hours += r->gpu_hours;
    t->energy_j += r->energy_j;
    if (r->slowdown >= 0) {
        t->slowdown_sum += r->slowdown;
        t->slowdowns++;
    }
}

/* A number, or null for the "unknown" encodings (negative times). */
static json_t *acct_opt(double v) { return v >= 0 ? json_real(v) : json_null(); }

static json_t *acct_iso(double t) {
    time_t s = (time_t)floor(t);
    struct tm tm;
    char buf[32];
    if (!gmtime_r(&s, &tm) || !strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S",
                                        &tm))
        return json_null();
    return json_string(buf);
}

json_t *acct_row_json(const acct_row *r, const acct_params *p, double now) {
    double kwh = acct_kwh(r->energy_j), co2 = acct_co2_g(kwh, p);
    double pue = p->pue, grid = p->grid_g_per_kwh;
    if (acct_stamped(r)) { /* as it ran: co2 = kwh x pue x grid holds */
        co2 = r->co2_g;
        pue = r->pue_j / r->energy_j;
        grid = co2 / acct_kwh(r->pue_j);
    }
    json_t *o = json_object();
    json_object_set_new(o, "timestamp", acct_iso(r->end_s >= 0 ? r->end_s : now));
    json_object_set_new(o, "project_name", json_string(r->name ? r->name : ""));
    json_object_set_new(o, "duration", json_real(r->run_s));
    json_object_set_new(o, "emissions", json_real(co2 / 1000));
    json_object_set_new(o, "emissions_rate",
                        json_real(r->run_s > 0 ? co2 / 1000 / r->run_s : 0));
    json_object_set_new(o, "gpu_power",
                        json_real(r->run_s > 0 ? r->energy_j / r->run_s : 0));
    json_object_set_new(o, "gpu_energy", json_real(kwh));
    json_object_set_new(o, "energy_consumed", json_real(kwh));
    json_object_set_new(o, "gpu_count", json_integer(r->gpus));
    json_object_set_new(o, "pue", json_real(pue));
    json_object_set_new(o, "job_id", json_integer(r->job_id));
    json_object_set_new(o, "user", json_string(r->user ? r->user : ""));
    json_object_set_new(o, "state", json_string(r->state));
    json_object_set_new(o, "submit_s", json_real(r->submit_s));
    json_object_set_new(o, "start_s", acct_opt(r->start_s));
    json_object_set_new(o, "end_s", acct_opt(r->end_s));
    json_object_set_new(o, "attempts", json_integer(r->attempts));
    json_object_set_new(o, "queue_wait_s", json_real(r->queue_wait_s));
    json_object_set_new(o, "gpu_hours", json_real(r->gpu_hours));
    json_object_set_new(o, "energy_j", json_real(r->energy_j));
    json_object_set_new(o, "co2_g", json_real(co2));
    json_object_set_new(o, "slowdown", acct_opt(r->slowdown));
    json_object_set_new(o, "grid_intensity_g_per_kwh", json_real(grid));
    return o;
}

json_t *acct_total_json(const acct_total *t, const acct_params *p) {
    double kwh = acct_kwh(t->energy_j);
    double co2 = t->co2_g + acct_co2_g(acct_kwh(t->unstamped_j), p);
    return json_pack("{s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:o}",
                     "jobs", t->jobs, "duration", t->run_s,
                     "queue_wait_s", t->queue_wait_s,
                     "gpu_hours", t->gpu_hours, "energy_j", t->energy_j,
                     "energy_consumed", kwh, "co2_g", co2,
                     "emissions", co2 / 1000, "mean_slowdown",
                     t->slowdowns ? json_real(t->slowdown_sum / t->slowdowns)
                                  : json_null());
}

void acct_csv_header(FILE *out, bool with_policy) {
    for (size_t i = 0; i < ACCT_NCOLUMNS; i++)
        fprintf(out, "%s%s", i ? "," : "", ACCT_COLUMNS[i].name);
    fputs(with_policy ? ",policy\n" : "\n", out);
}

/* A text cell, quoted (RFC 4180) when it holds a comma, quote or line
 * break: names are free text. */
static void acct_csv_text(FILE *out, const char *s) {
    /* A cell a spreadsheet would take for a formula (a job name is any
     * user's text) starts with a quote mark, which shows it as text. */
    const char *formula = s[0] && strchr("=+-@\t\r", s[0]) ? "'" : "";
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(formula, out);
        fputs(s, out);
        return;
    }
    putc('"', out);
    fputs(formula, out);
    for (; *s; s++) {
        if (*s == '"') putc('"', out);
        putc(*s, out);
    }
    putc('"', out);
}

void acct_csv_row(FILE *out, json_t *row, const char *policy) {
    for (size_t i = 0; i < ACCT_NCOLUMNS; i++) {
        json_t *v = json_object_get(row, ACCT_COLUMNS[i].name);
        if (i) putc(',', out);
        if (json_is_string(v)) acct_csv_text(out, json_string_value(v));
        else if (json_is_integer(v))
            fprintf(out, "%lld", (long long)json_integer_value(v));
        else if (json_is_real(v)) fprintf(out, "%.12g", json_real_value(v));
    }
    if (policy) {
        putc(',', out);
        acct_csv_text(out, policy);
    }
    putc('\n', out);
}

/* GPUs of a stored attempt: its "gpus" text, "0,2". */
static int acct_gpu_count(const char *gpus) {
    int n = gpus && *gpus ? 1 : 0;
    for (; gpus && *gpus; gpus++) n += *gpus == ',';
    return n;
}

/* A stored number, or -1 when null (an unfinished time). */
static double acct_num(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : -1;
}

typedef struct acct_user {
    const char *user;
    acct_total t;
} acct_user;

/* Measures one stored job (see store_report) into r; the strings stay the
 * job's. Returns -1 when out of memory. */
static int acct_stored_row(json_t *job, double now, acct_row *r) {
    json_t *list = json_object_get(job, "attempt_list");
    size_t n = json_array_size(list), i;
    acct_span *spans = calloc(n + 1, sizeof(*spans));
    if (!spans) return -1;
    json_t *a;
    json_array_foreach(list, i, a) {
        spans[i] = (acct_span){.start = acct_num(a, "started"),
                               .end = acct_num(a, "ended"),
                               .gpus = acct_gpu_count(json_string_value(
                                   json_object_get(a, "gpus")))};
    }
    *r = (acct_row){
        .job_id = json_integer_value(json_object_get(job, "id")),
        .user = json_string_value(json_object_get(job, "user")),
        .name = json_string_value(json_object_get(job, "name")),
        .state = json_string_value(json_object_get(job, "state")),
        .submit_s = acct_num(job, "submitted"),
        .end_s = acct_num(job, "finished"),
        .gpus = (int)json_integer_value(json_object_get(job, "gpus")),
        .energy_j = json_number_value(json_object_get(job, "energy_j")),
        /* null in a row of an aegisd before stamps: 0, not stamped */
        .co2_g = json_number_value(json_object_get(job, "co2_g")),
        .pue_j = json_number_value(json_object_get(job, "pue_j"))};
    if (!r->state) r->state = "";
    acct_row_measure(r, spans, n, now);
    free(spans);
    return 0;
}

json_t *acct_report(json_t *jobs, const acct_params *p, double now) {
    size_t njobs = json_array_size(jobs), nusers = 0, i;
    acct_user *users = calloc(njobs + 1, sizeof(*users));
    json_t *rows = json_array(), *job;
    acct_total all = {0};
    json_array_foreach(jobs, i, job) {
        acct_row r;
        if (!users || acct_stored_row(job, now, &r) != 0) {
            free(users);
            json_decref(rows);
            return NULL;
        }
        json_array_append_new(rows, acct_row_json(&r, p, now));
        acct_total_add(&all, &r);
        size_t u = 0;
        while (u < nusers && strcmp(users[u].user, r.user ? r.user : "") != 0)
            u++;
        if (u == nusers) users[nusers++].user = r.user ? r.user : "";
        acct_total_add(&users[u].t, &r);
    }
    json_t *per_user = json_array();
    for (size_t u = 0; u < nusers; u++) {
        json_t *t = acct_total_json(&users[u].t, p);
        json_object_set_new(t, "user", json_string(users[u].user));
        json_array_append_new(per_user, t);
    }
    free(users);
    return json_pack("{s:o, s:o, s:o, s:f, s:f, s:f}", "jobs", rows, "users",
                     per_user, "total", acct_total_json(&all, p),
                     "grid_intensity_g_per_kwh", p->grid_g_per_kwh, "pue",
                     p->pue, "now", now);
}
