/* report.c -- summary figures, per-job energy and CO2 rows (the energy
 * split itself happens as the run goes, in meter.h), the text table and
 * the JSON document. */
#include "report.h"

#include "order_key.h"
#include "prefault.h"
#include "waits.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static void swap(double *v, int i, int j) {
    double x = v[i];
    v[i] = v[j];
    v[j] = x;
}

/* Puts the k-th smallest of v[0..n) at v[k], smaller ones before it and
 * larger after (quickselect): O(n), where sorting a million JCTs would be
 * the slowest step of a report. The three-way split keeps it linear when
 * many JCTs are equal, as they are for jobs that never waited. */
static void select_kth(double *v, int n, int k) {
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        double pivot = v[lo + (hi - lo) / 2];
        int lt = lo, i = lo, gt = hi;
        while (i <= gt) {
            if (v[i] < pivot) swap(v, lt++, i++);
            else if (v[i] > pivot) swap(v, i, gt--);
            else i++;
        }
        if (k < lt) hi = lt - 1;
        else if (k > gt) lo = gt + 1;
        else return;
    }
}

/* The value at rank lo + frac of v[0..n) (0-based, 0 <= frac < 1),
 * interpolated linearly. Reorders v, leaving the values below rank lo
 * before it. */
static double value_at_rank(double *v, int n, int lo, double frac) {
    select_kth(v, n, lo);
    if (lo + 1 >= n) return v[lo];
    double next = v[lo + 1];
    for (int i = lo + 2; i < n; i++) if (v[i] < next) next = v[i];
    return v[lo] + (next - v[lo]) * frac;
}

/* Big inputs are narrowed down by the leading bits of their values before
 * the selection: one pass counts the values of each bucket, a second moves
 * to the front the few buckets that hold the ranks wanted, and the
 * selection runs on those alone. On a million JCTs that took the summary
 * from three selections' worth of swapping to two plain passes. */
#define RANK_BUCKET_BITS 16
#define RANK_BUCKETS (1u << RANK_BUCKET_BITS)
/* Below this many values one selection costs less than the counting. */
#define RANK_BUCKETS_FROM (1 << 14)

/* The bucket of v: its order_key()'s leading bits. */
static unsigned bucket_of(double v) {
    return (unsigned)(order_key(v) >> (64 - RANK_BUCKET_BITS));
}

/* How many of v[0..n) fall in each bucket, or NULL when out of memory. */
static int *bucket_counts(const double *v, int n) {
    int *count = calloc(RANK_BUCKETS, sizeof(*count));
    if (!count) return NULL;
    for (int i = 0; i < n; i++) count[bucket_of(v[i])]++;
    return count;
}

/* The bucket holding rank r, and in *below how many values lie in the
 * buckets before it. */
static unsigned bucket_at_rank(const int *count, int r, int *below) {
    unsigned b = 0;
    int before = 0;
    while (before + count[b] <= r) before += count[b++];
    *below = before;
    return b;
}

/* value_at_rank() through the buckets of v counted in count[]: moves the
 * values of the buckets holding ranks lo and lo + 1 to the front of v and
 * selects among them. */
static double value_at_rank_bucketed(double *v, int n, const int *count,
                                     int lo, double frac) {
    int below, ignored;
    unsigned first = bucket_at_rank(count, lo, &below);
    unsigned last = bucket_at_rank(count, lo + 1 < n ? lo + 1 : lo, &ignored);
    int m = 0;
    for (int i = 0; i < n; i++) {
        unsigned b = bucket_of(v[i]);
        if (b >= first && b <= last) swap(v, m++, i);
    }
    return value_at_rank(v, m, lo - below, frac);
}

/* Percentiles q[0] <= q[1] <= ... (0..1) of v into out[], interpolated
 * between ranks as numpy's default does, which is how the AEGIS analysis
 * computed its p95s. Without buckets each is searched for only among the
 * values at or above the previous one's rank. Reorders v. */
static void percentiles(double *v, int n, const double *q, double *out,
                        int count) {
    int *per_bucket = n >= RANK_BUCKETS_FROM ? bucket_counts(v, n) : NULL;
    int from = 0;
    for (int i = 0; i < count; i++) {
        double pos = q[i] * (n - 1);
        int lo = (int)pos;
        if (per_bucket) {
            out[i] = value_at_rank_bucketed(v, n, per_bucket, lo, pos - lo);
        } else {
            out[i] = value_at_rank(v + from, n - from, lo - from, pos - lo);
            from = lo;
        }
    }
    free(per_bucket);
}

static double jct_of(const sim_job *job) {
    return job->end_s - job->src->submit_s;
}

int report_summarize(const sim_result *r, report_summary *out) {
    /* Only the fields above report_account()'s in report_summary. */
    memset(out, 0, offsetof(report_summary, acct));
    out->policy = r->policy;
    out->sharing = r->sharing;
    snprintf(out->label, sizeof(out->label), "%s", r->policy);
    out->jobs = r->njobs;
    out->stopped = r->stopped;
    out->timeouts = r->timeouts;
    out->unfinished = r->unfinished;
    out->ooms = r->ooms;
    out->makespan_s = r->makespan_s;
    out->energy_j = r->energy_j;
    out->load_cpu_s = r->load_cpu_s;
    out->loads = r->loads;
    double gpu_s = (double)r->servers * r->gpus_per_server * r->makespan_s;
    out->gpu_busy = gpu_s > 0 ? r->busy_gpu_s / gpu_s : 0;
    size_t bytes = (size_t)r->njobs * sizeof(double) + 1;
    double *jcts = prefault_huge_alloc(bytes); /* 8 MB for a million jobs:
                                                  4 faults */
    if (!jcts) return -1;
    double jct_sum = 0, wait_sum = 0, slow_sum = 0;
    for (int i = 0; i < r->njobs; i++) {
        const sim_job *job = &r->jobs[i];
        if (job->state != SIM_DONE) continue;
        double jct = jct_of(job);
        jcts[out->done++] = jct;
        jct_sum += jct;
        wait_sum += jct - job->exec_s;
        slow_sum += jct / job->src->work->solo_s;
    }
    if (out->done > 0) {
        out->mean_jct_s = jct_sum / out->done;
        const double q[] = {0.50, 0.95};
        double p[2];
        percentiles(jcts, out->done, q, p, 2);
        out->p50_jct_s = p[0];
        out->p95_jct_s = p[1];
        out->mean_wait_s = wait_sum / out->done;
        out->mean_slowdown = slow_sum / out->done;
    }
    free(jcts);
    return 0;
}

static const char *status_of(const sim_job *job);

/* How many jobs ahead report_account() fetches attempts. Far: the jobs
 * in between touch one attempt page per server, and on a million-job run
 * 1024 took the accounting from 34 to 19 ms where 96 had. */
#define ACCOUNT_PREFETCH 1024

static void prefetch_first_attempt(const sim_result *r, const sim_job *job) {
    if (job->first_attempt >= 0)
        __builtin_prefetch(sim_attempt_of(r, job, job->first_attempt));
}

/* The acct row of job i: its attempts as spans, ended at the run's end
 * for one left unfinished. */
static int report_row(const sim_result *r, int i, double energy_j,
                      acct_row *row, acct_span **spans, size_t *cap) {
    const sim_job *job = &r->jobs[i];
    double run_end = r->start_s + r->makespan_s;
    size_t n = 0;
    const sim_attempt *at;
    for (int a = job->first_attempt; a >= 0; a = at->next) {
        at = sim_attempt_of(r, job, a);
        if (n == *cap) {
            size_t more = *cap ? *cap * 2 : 8;
            acct_span *grown = realloc(*spans, more * sizeof(**spans));
            if (!grown) return -1;
            *spans = grown;
            *cap = more;
        }
        (*spans)[n++] = (acct_span){at->start_s, at->end_s, at->ngpus};
    }
    bool ended = job->state == SIM_DONE || job->state == SIM_STOPPED ||
                 job->state == SIM_TIMEOUT;
    *row = (acct_row){.job_id = job->src->index, .user = "sim",
                      .name = job->src->work->name, .state = status_of(job),
                      .submit_s = job->src->submit_s,
                      .end_s = ended ? job->end_s : -1,
                      .gpus = job->src->work->num_gpus, .energy_j = energy_j};
    acct_row_measure(row, *spans, n, run_end);
    return 0;
}

int report_account(const sim_result *r, const acct_params *p, FILE *csv,
                   report_summary *out) {
    acct_span *spans = NULL;
    size_t cap = 0;
    int rc = 0;
    out->acct = *p;
    memset(&out->jobs_total, 0, sizeof(out->jobs_total));
    out->co2_g = acct_co2_g(acct_kwh(r->energy_j), p);
    double run_end = r->start_s + r->makespan_s;
    for (int i = 0; rc == 0 && i < r->njobs; i++) {
        /* Attempts lie by server, jobs by trace: ask for a later job's
         * first attempt now so its cache miss overlaps this job's work. */
        if (i + ACCOUNT_PREFETCH < r->njobs)
            prefetch_first_attempt(r, &r->jobs[i + ACCOUNT_PREFETCH]);
        acct_row row;
        rc = report_row(r, i, r->jobs[i].energy_j, &row, &spans, &cap);
        if (rc != 0) break;
        acct_total_add(&out->jobs_total, &row);
        if (!csv) continue;
        json_t *o = acct_row_json(&row, p, run_end);
        if (!o) rc = -1;
        else acct_csv_row(csv, o, r->policy);
        json_decref(o);
    }
    free(spans);
    return rc;
}

const report_summary *report_exclusive(const report_summary *rows, int n) {
    for (int i = 0; i < n; i++)
        if (strcmp(rows[i].policy, "exclusive") == 0 ||
            strcmp(rows[i].sharing, "exclusive") == 0)
            return &rows[i];
    return NULL;
}

/* "  0.712" relative to the exclusive figure, or blanks when unknown. */
static void relative(FILE *out, double value, double base) {
    if (base > 0) fprintf(out, " %7.3f", value / base);
    else fprintf(out, " %7s", "-");
}

/* A figure over the finished jobs (mean or percentile) in a column of
 * width: "-" when none finished, where it would read as 0. */
static void over_finished(FILE *out, const report_summary *s, int width,
                          int decimals, double value) {
    if (s->done > 0) fprintf(out, " %*.*f", width, decimals, value);
    else fprintf(out, " %*s", width, "-");
}

void report_table(FILE *out, const report_summary *rows, int n) {
    const report_summary *ex = report_exclusive(rows, n);
    int width = 13;
    for (int i = 0; i < n; i++)
        if ((int)strlen(rows[i].label) > width) width = (int)strlen(rows[i].label);
    fprintf(out, "%-*s %7s %11s", width, "policy", "jobs", "makespan_s");
    if (ex) fprintf(out, " %7s", "/excl");
    fprintf(out, " %11s", "mean_jct_s");
    if (ex) fprintf(out, " %7s", "/excl");
    fprintf(out, " %11s %11s %11s %8s %5s %5s %5s %6s %10s %9s %9s",
            "p50_jct_s", "p95_jct_s", "mean_wait_s", "slowdown", "ooms", "stop",
            "left", "busy", "energy_kWh", "co2_kg", "gpu_h");
    bool loads = n > 0 && rows[0].loads;
    fputs(loads ? " load_cpu_h\n" : "\n", out);
    for (int i = 0; i < n; i++) {
        const report_summary *s = &rows[i];
        fprintf(out, "%-*s %7d %11.1f", width, s->label, s->jobs, s->makespan_s);
        if (ex) relative(out, s->makespan_s, ex->makespan_s);
        over_finished(out, s, 11, 1, s->mean_jct_s);
        if (ex) relative(out, s->mean_jct_s, s->done ? ex->mean_jct_s : 0);
        over_finished(out, s, 11, 1, s->p50_jct_s);
        over_finished(out, s, 11, 1, s->p95_jct_s);
        over_finished(out, s, 11, 1, s->mean_wait_s);
        over_finished(out, s, 8, 3, s->mean_slowdown);
        fprintf(out, " %5d %5d %5d %6.3f %10.2f %9.3f %9.2f", s->ooms,
                s->stopped + s->timeouts, s->unfinished, s->gpu_busy,
                acct_kwh(s->energy_j), s->co2_g / 1000, s->jobs_total.gpu_hours);
        if (loads) fprintf(out, " %10.2f", s->load_cpu_s / 3600);
        putc('\n', out);
    }
    for (int i = 0; i < n; i++) /* in "stop" too, so that none goes unseen */
        if (rows[i].timeouts)
            fprintf(out, "%s: %d of the stopped jobs reached their time limit\n",
                    rows[i].label, rows[i].timeouts);
    if (n > 0) {
        fprintf(out, "CO2 of all GPUs' energy, idle included, at %g gCO2eq/kWh"
                " and PUE %g\n", rows[0].acct.grid_g_per_kwh, rows[0].acct.pue);
    }
}

/* Names come from CSV files, so escape what JSON requires. */
static void json_text(FILE *out, const char *s) {
    putc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(out, "\\%c", c);
        else if (c < 0x20) fprintf(out, "\\u%04x", c);
        else putc(c, out);
    }
    putc('"', out);
}

void report_json_begin(FILE *out) { fputs("{\"policies\": [", out); }

void report_json_end(FILE *out) { fputs("]}\n", out); }

static void json_attempts(FILE *out, const sim_result *r, const sim_job *job) {
    fputs("\"attempts\": [", out);
    const sim_attempt *at;
    for (int a = job->first_attempt; a >= 0; a = at->next) {
        at = sim_attempt_of(r, job, a);
        char active[32] = "null"; /* never active: a limit ended it first */
        if (at->active_s >= 0) snprintf(active, sizeof(active), "%.3f", at->active_s);
        fprintf(out, "%s{\"start_s\": %.3f, \"active_s\": %s, "
                "\"end_s\": %.3f, \"gpus\": [", a == job->first_attempt ? ""
                : ", ", at->start_s, active, at->end_s);
        for (int k = 0; k < at->ngpus; k++)
            fprintf(out, "%s%d", k ? ", " : "",
                    sim_attempt_gpu(r, job->server, at, k));
        fprintf(out, "], \"oom\": %s}", at->oom ? "true" : "false");
    }
    putc(']', out);
}

static const char *status_of(const sim_job *job) {
    return job->state == SIM_DONE      ? "done"
         : job->state == SIM_STOPPED ? "stopped"
         : job->state == SIM_TIMEOUT ? "timeout"
                                       : "unfinished";
}

/* `"KEY": {"behind": 12.5, ...}` of the figures at by[0..
 * SIM_WAIT_KINDS), the reasons that held for no time left out (nor for
 * under half a millisecond, which would print as 0: a job that reached
 * its server at the end of another's run, a float's width away); the time
 * no reason was told for (a job left unasked, when the run ended in the
 * moment it arrived) is "other". */
static void json_reasons(FILE *out, const char *key, const double *by) {
    fprintf(out, "\"%s\": {", key);
    const char *sep = "";
    for (int k = 0; k < SIM_WAIT_KINDS; k++) {
        if (!(by[k] >= 0.0005)) continue;
        fprintf(out, "%s\"%s\": %.3f", sep,
                k == CORE_WAIT_NONE  ? "other"
                : k == SIM_WAIT_SLURM ? "slurm"
                                      : core_wait_name((core_wait)k),
                by[k]);
        sep = ", ";
    }
    putc('}', out);
}

static void json_job(FILE *out, const sim_result *r, const sim_job *job) {
    fprintf(out, "{\"index\": %lld, \"workload\": ",
            (long long)job->src->index);
    json_text(out, job->src->work->name);
    if (r->trace->has_users) {
        fputs(", \"user\": ", out);
        json_text(out, trace_user_name(r->trace, job->src->user));
    }
    fprintf(out, ", \"submit_s\": %.3f, \"status\": \"%s\"",
            job->src->submit_s, status_of(job));
    if (job->state == SIM_DONE) {
        double jct = jct_of(job);
        fprintf(out, ", \"jct_s\": %.3f, \"wait_s\": %.3f, \"slowdown\": %.4f",
                jct, jct - job->exec_s, jct / job->src->work->solo_s);
    }
    fputs(", ", out);
    if (r->wait_by_reason) {
        json_reasons(out, "wait_by_reason_s", &r->wait_by_reason[(size_t)(job - r->jobs) *
                                             SIM_WAIT_KINDS]);
        fputs(", ", out);
    }
    json_attempts(out, r, job);
    putc('}', out);
}

void report_json_policy(FILE *out, const sim_result *r,
                        const report_summary *s, bool first) {
    fprintf(out, "%s{\"policy\": ", first ? "" : ", ");
    json_text(out, s->policy);
    fputs(", \"sharing\": ", out);
    json_text(out, s->sharing);
    fputs(", \"dispatch\": ", out);
    json_text(out, r->dispatch);
    fprintf(out, ", \"servers\": %d, \"gpus_per_server\": %d, "
            "\"makespan_s\": %.3f, \"done\": %d, \"mean_jct_s\": %.3f, "
            "\"p50_jct_s\": %.3f, "
            "\"p95_jct_s\": %.3f, \"mean_wait_s\": %.3f, "
            "\"mean_slowdown\": %.4f, \"ooms\": %d, \"stopped\": %d, "
            "\"timeouts\": %d, "
            "\"unfinished\": %d, \"gpu_util\": %.4f, \"energy_j\": %.1f, "
            "\"load_cpu_s\": %.1f, ",
            r->servers, r->gpus_per_server, s->makespan_s, s->done,
            s->mean_jct_s, s->p50_jct_s, s->p95_jct_s, s->mean_wait_s,
            s->mean_slowdown, s->ooms, s->stopped, s->timeouts, s->unfinished,
            s->gpu_busy,
            s->energy_j, s->load_cpu_s);
    double kwh = acct_kwh(s->energy_j);
    json_t *jobs_total = acct_total_json(&s->jobs_total, &s->acct);
    char *text = jobs_total ? json_dumps(jobs_total, JSON_COMPACT) : NULL;
    fprintf(out, "\"energy_kwh\": %.6f, \"co2_g\": %.3f, \"gpu_hours\": %.6f, "
            "\"grid_intensity_g_per_kwh\": %g, \"pue\": %g, "
            "\"jobs_total\": %s, ", kwh, s->co2_g, s->jobs_total.gpu_hours,
            s->acct.grid_g_per_kwh, s->acct.pue, text ? text : "null");
    free(text);
    json_decref(jobs_total);
    if (r->wait_by_reason) {
        double sum[SIM_WAIT_KINDS] = {0};
        for (int i = 0; i < r->njobs; i++)
            for (int k = 0; k < SIM_WAIT_KINDS; k++)
                sum[k] += r->wait_by_reason[(size_t)i * SIM_WAIT_KINDS + k];
        json_reasons(out, "total_wait_by_reason_s", sum);
        fputs(", \"jobs\": [", out);
    } else {
        fputs("\"jobs\": [", out);
    }
    for (int i = 0; i < r->njobs; i++) {
        if (i) fputs(", ", out);
        json_job(out, r, &r->jobs[i]);
    }
    fputs("]}", out);
}
