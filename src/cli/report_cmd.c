/* report_cmd.c -- `aegis report`: per-job energy, CO2, GPU-hours, queue
 * wait and slowdown from aegisd, with totals per user, as a table, CSV
 * (CodeCarbon's emissions.csv names where they agree: acct.h) or JSON.
 * aegisd does the arithmetic (acct_report); this file only prints.
 */
#include "cli.h"
#include "client.h"

#include "acct.h"
#include "text_safe.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char report_help[] =
"NAME\n    aegis report - energy, CO2 and GPU time of aegisd's jobs\n\n"
"SYNOPSIS\n    aegis report [-u USER] [--since T] [--until T] [--csv | --json]\n"
"                 [--socket PATH]\n\n"
"DESCRIPTION\n"
"    One row per job submitted since T and before --until's T (every job\n"
"    without them), of one user with -u, then totals per user and overall\n"
"    (accounting over a period, as Slurm's sreport):\n\n"
"    WAIT_S    queued: from submission to the first attempt, between\n"
"              attempts (after an OOM), and since the last one for a job\n"
"              queued again or cancelled while queued\n"
"    RUN_S     the time its attempts ran (a running one: so far)\n"
"    GPU_H     GPU-hours: the sum over attempts of GPUs x duration\n"
"    KWH       its share of its GPUs' energy (NVML's energy counter, split\n"
"              among the jobs on a GPU by SM utilization)\n"
"    CO2_G     grams CO2eq = kWh x pue x grid_intensity_g_per_kwh, both\n"
"              from aegisd's configuration (defaults: 475 g/kWh, the world\n"
"              average CodeCarbon falls back to, and a PUE of 1.0)\n"
"    SLOWDOWN  job completion time (submission to end) over the duration\n"
"              of its last, successful attempt; '-' unless done\n\n"
"    Everyone sees every user's rows and totals, as `aegis ls --all` shows\n"
"    everyone's jobs; no row shows a command.\n\n"
"OPTIONS\n"
"    --since T       jobs submitted at or after T: Unix seconds, a date\n"
"                    YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS (UTC), or an age\n"
"                    such as 90m, 12h, 7d\n"
"    --until T       jobs submitted before T, in the same forms\n"
"    -u, --user USER only USER's jobs (a login name or a uid)\n"
"    --csv           a header and one line per job; the columns are\n"
"                    CodeCarbon's emissions.csv names in its units where\n"
"                    the meanings agree (timestamp, project_name,\n"
"                    duration s, emissions kg, emissions_rate kg/s,\n"
"                    gpu_power W, gpu_energy kWh, energy_consumed kWh,\n"
"                    gpu_count, pue), then aegis's own (job_id, user,\n"
"                    state, submit_s, start_s, end_s, attempts,\n"
"                    queue_wait_s, gpu_hours, energy_j, co2_g, slowdown,\n"
"                    grid_intensity_g_per_kwh). Empty cells: no name, not\n"
"                    started, not finished, no slowdown.\n"
"    --json          one object: jobs (rows keyed as the CSV columns),\n"
"                    users and total (jobs, duration, queue_wait_s,\n"
"                    gpu_hours, energy_j, energy_consumed, co2_g,\n"
"                    emissions, mean_slowdown), grid_intensity_g_per_kwh,\n"
"                    pue\n"
"    --socket PATH   aegisd's socket (default $AEGIS_SOCKET, else\n"
"                    " CLIENT_DEFAULT_SOCKET ")\n"
"\nEXIT STATUS\n"
"    0 success, 1 failure (aegisd unreachable, busy or failing), 2 bad\n"
"    usage or a request aegisd refused.\n";

/* The latest T taken: 9999-12-31T23:59:59 UTC, as far as a date goes. */
#define REPORT_T_MAX 253402300799.0

/* T's leading number in plain decimal (no sign, exponent, hex, inf or
 * nan) into *v: where it ends, or NULL when T does not start with one. */
static const char *report_decimal(const char *text, double *v) {
    size_t n = strspn(text, "0123456789.");
    char *stop;
    if (n == 0) return NULL;
    *v = strtod(text, &stop);
    return stop == text + n ? stop : NULL;
}

/* An age, "N" then s, m, h or d, as the Unix time it goes back to: -1
 * when unit is none of these or it goes back past 1970. */
static double report_age(double n, const char *unit) {
    static const struct { char unit; double s; } ages[] = {
        {'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}};
    for (size_t i = 0; i < sizeof(ages) / sizeof(*ages); i++)
        if (unit[0] == ages[i].unit && unit[1] == '\0') {
            double t = (double)time(NULL) - n * ages[i].s;
            return t >= 0 ? t : -1;
        }
    return -1;
}

/* A UTC date, YYYY-MM-DD[THH:MM:SS], as Unix time: -1 when it is not
 * in that form, -2 when it names no moment of the calendar (February
 * 30th, 25:00), which timegm would roll over into another. */
static double report_date(const char *text) {
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *end = strptime(text, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!end || *end) {
        memset(&tm, 0, sizeof(tm));
        end = strptime(text, "%Y-%m-%d", &tm);
    }
    if (!end || *end) return -1;
    struct tm asked = tm;
    time_t t = timegm(&tm); /* normalises tm */
    bool same = tm.tm_year == asked.tm_year && tm.tm_mon == asked.tm_mon &&
                tm.tm_mday == asked.tm_mday && tm.tm_hour == asked.tm_hour &&
                tm.tm_min == asked.tm_min && tm.tm_sec == asked.tm_sec;
    return !same ? -2 : t < 0 ? -1 : (double)t;
}

/* T as Unix seconds into *out: a number, an age (N followed by s, m, h or
 * d) or a UTC date. Returns 0, or -1 after saying why, naming the option
 * (since or until). */
static int report_parse_time(const char *opt, const char *text, double *out) {
    double v;
    const char *stop = report_decimal(text, &v);
    if (!stop || *stop == '-') v = report_date(text); /* 2026-11-01 */
    else if (*stop != '\0') v = report_age(v, stop);  /* 7d */
    if (v == -2) {
        fprintf(stderr, "aegis report: --%s: '%s' is no day or time of the "
                "calendar\n", opt, text);
        return -1;
    }
    if (v < 0 || v > REPORT_T_MAX) {
        fprintf(stderr, "aegis report: --%s: '%s' is not a Unix time, a date "
                "(YYYY-MM-DD[THH:MM:SS], UTC, to 9999) or an age (7d, 12h)\n",
                opt, text);
        return -1;
    }
    *out = v;
    return 0;
}

static double report_num(json_t *o, const char *key) {
    return json_number_value(json_object_get(o, key));
}

/* The columns a job row and a total line share: wait, run, GPU-hours,
 * kWh, CO2 and slowdown (the field `slow_key`; "-" when unknown). */
static void report_figures(json_t *o, const char *slow_key) {
    json_t *slow = json_object_get(o, slow_key);
    printf("%10.0f %10.0f %9.3f %10.4f %10.1f ", report_num(o, "queue_wait_s"),
           report_num(o, "duration"), report_num(o, "gpu_hours"),
           report_num(o, "energy_consumed"), report_num(o, "co2_g"));
    if (json_is_number(slow)) printf("%8.3f", json_number_value(slow));
    else printf("%8s", "-");
}

/* A user's name as text shows it: a name from the user database may hold
 * what a terminal acts on, and aegisd leaves out one that is not UTF-8
 * (shown empty). */
static void report_user(char *shown, size_t len, json_t *row) {
    const char *user = json_string_value(json_object_get(row, "user"));
    text_safe(shown, len, user ? user : "");
}

static void report_total_line(const char *who, json_t *t) {
    printf("%-18.18s %5lld ", who,
           (long long)json_integer_value(json_object_get(t, "jobs")));
    report_figures(t, "mean_slowdown");
    putchar('\n');
}

static void report_text(json_t *ans) {
    printf("%-7s %-10s %-9s %4s %10s %10s %9s %10s %10s %8s  %s\n", "ID", "USER",
           "STATE", "GPUS", "WAIT_S", "RUN_S", "GPU_H", "KWH", "CO2_G",
           "SLOWDOWN", "NAME");
    size_t i;
    json_t *r;
    char user[256];
    json_array_foreach(json_object_get(ans, "jobs"), i, r) {
        report_user(user, sizeof(user), r);
        printf("%-7lld %-10.10s %-9s %4lld ",
               (long long)json_integer_value(json_object_get(r, "job_id")), user,
               json_string_value(json_object_get(r, "state")),
               (long long)json_integer_value(json_object_get(r, "gpu_count")));
        report_figures(r, "slowdown");
        const char *name = json_string_value(json_object_get(r, "project_name"));
        char safe[4096]; /* another user's job name: no control reaches the terminal */
        text_safe(safe, sizeof(safe), name ? name : "");
        printf("  %s\n", safe);
    }
    printf("\n%-18s %5s %10s %10s %9s %10s %10s %8s\n", "TOTALS", "JOBS",
           "WAIT_S", "RUN_S", "GPU_H", "KWH", "CO2_G", "SLOWDOWN");
    json_array_foreach(json_object_get(ans, "users"), i, r) {
        report_user(user, sizeof(user), r);
        report_total_line(user, r);
    }
    report_total_line("all users", json_object_get(ans, "total"));
    printf("\nCO2 at %g gCO2eq/kWh, PUE %g (aegisd's configuration)\n",
           report_num(ans, "grid_intensity_g_per_kwh"), report_num(ans, "pue"));
}

int cli_report(int argc, char **argv) {
    static const struct option opts[] = {
        {"since", required_argument, NULL, 't'},
        {"until", required_argument, NULL, 'U'},
        {"user", required_argument, NULL, 'u'},
        {"csv", no_argument, NULL, 'c'},
        {"json", no_argument, NULL, 'j'},
        {"socket", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *socket = NULL, *user = NULL;
    char user_uid[CLIENT_UID_TEXT];
    int csv = 0, json = 0, ch;
    double since = 0, until = 0;
    bool has_until = false;
    while ((ch = getopt_long(argc, argv, "hu:", opts, NULL)) != -1) {
        switch (ch) {
        case 'h': fputs(report_help, stdout); return CLI_OK;
        case 's': socket = optarg; break;
        case 'c': csv = 1; break;
        case 'j': json = 1; break;
        case 'u':
            user = client_user_filter("report", optarg, user_uid);
            if (!user) return CLI_USAGE;
            break;
        case 't':
            if (report_parse_time("since", optarg, &since) != 0)
                return CLI_USAGE;
            break;
        case 'U':
            if (report_parse_time("until", optarg, &until) != 0)
                return CLI_USAGE;
            has_until = true;
            break;
        default: return client_bad_option("report");
        }
    }
    if (csv && json) {
        fprintf(stderr, "aegis report: --csv and --json: give one of them\n");
        return CLI_USAGE;
    }
    if (client_operands("report", argc, argv, 0, 0) != 0) return CLI_USAGE;
    if (has_until && since >= until) {
        fprintf(stderr, "aegis report: --until is not after --since (1970 "
                "when not given): no job was submitted between them\n");
        return CLI_USAGE;
    }
    int rc;
    json_t *req = json_pack("{s:s, s:f}", "op", "report", "since", since);
    if (has_until) json_object_set_new(req, "until", json_real(until));
    if (user) json_object_set_new(req, "user", json_string(user));
    json_t *ans = client_call("report", client_socket(socket), req, &rc);
    if (!ans) return rc;
    if (json) {
        json_object_del(ans, "ok");
        client_print_json(ans);
    } else if (csv) {
        acct_csv_header(stdout, false);
        size_t i;
        json_t *r;
        json_array_foreach(json_object_get(ans, "jobs"), i, r)
            acct_csv_row(stdout, r, NULL);
    } else {
        report_text(ans);
    }
    json_decref(ans);
    return CLI_OK;
}
