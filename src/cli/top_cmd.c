/* top_cmd.c -- `aegis top`: aegisd's GPUs, their jobs and the queue,
 * refreshed every --delay seconds, as nvtop and top show a machine: full
 * screen on a terminal (top_term.c), one plain snapshot otherwise. What
 * goes where on the screen is top_view.c's.
 */
#include "cli.h"
#include "client.h"
#include "top_term.h"
#include "top_view.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char top_help[] =
"NAME\n    aegis top - watch the GPUs, their jobs and the queue\n\n"
"SYNOPSIS\n    aegis top [-d SECONDS] [-n COUNT] [--socket PATH]\n\n"
"DESCRIPTION\n"
"    On a terminal, a full screen refreshed every second: the time, each\n"
"    GPU with a bar for its memory in use and one for its utilization,\n"
"    the jobs running on it (id, user, the memory its processes hold over\n"
"    what it declared with --mem, their SM share, name or command; a job\n"
"    on several GPUs shows the average per GPU), then the queued jobs\n"
"    with why each waits (REASON, as aegis ls gives it).\n"
"    It follows the terminal's size; what does not fit is cut, the\n"
"    longest list first, to a line saying how many more there are. When\n"
"    aegisd cannot be reached, the screen says why and aegis top tries\n"
"    again every period. The terminal is given back as it was when it\n"
"    ends.\n\n"
"    When stdin or stdout is not a terminal, aegis top prints one plain\n"
"    snapshot (every row, $COLUMNS wide, 80 by default, 20 to 1000) and\n"
"    exits.\n\n"
"KEYS\n"
"    q, Ctrl-C       quit; Ctrl-C also while aegisd takes the request\n"
"                    and does not answer (then exit status 1)\n"
"    space           refresh now\n"
"    Ctrl-Z          suspend, as usual; fg brings the screen back\n\n"
"OPTIONS\n"
"    -d, --delay SECONDS\n"
"                    the refresh period, at least 0.1 (default 1): in\n"
"                    seconds, as top's, not in nvtop's tenths\n"
"    -n COUNT        stop after COUNT screens or snapshots (default:\n"
"                    until q on a terminal, 1 otherwise)\n"
"    --socket PATH   aegisd's socket (default $AEGIS_SOCKET, else\n"
"                    " CLIENT_DEFAULT_SOCKET ")\n"
"\nEXIT STATUS\n"
"    0 success, 1 aegisd unreachable, busy or failing (at the last\n"
"    refresh), 2 bad usage.\n";

typedef struct top_opts {
    const char *socket;
    double delay_s;
    long count; /* screens; 0: until q */
} top_opts;

/* What one refresh got from aegisd. */
typedef struct top_data {
    top_gpu *gpus;
    size_t ngpus;
    top_job *jobs;
    size_t njobs;
} top_data;

/* Parses top's options; -1 after --help, CLI_USAGE after saying why. */
static int top_options(int argc, char **argv, top_opts *o) {
    static const struct option opts[] = {
        {"delay", required_argument, NULL, 'd'},
        {"socket", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *o = (top_opts){.delay_s = 1};
    int ch;
    while ((ch = getopt_long(argc, argv, "d:n:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'h': fputs(top_help, stdout); return -1;
        case 's': o->socket = optarg; break;
        case 'd':
            if (cli_parse_double("top", "delay", optarg, 0.1, 86400,
                                 &o->delay_s))
                return CLI_USAGE;
            break;
        case 'n':
            if (cli_parse_long("top", "n", optarg, 1, 1000000, &o->count))
                return CLI_USAGE;
            break;
        default: return client_bad_option("top");
        }
    }
    return client_operands("top", argc, argv, 0, 0);
}

static const char *text_of(json_t *obj, const char *key) {
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : "";
}

/* A reading aegisd may not have: < 0 when it is not a number. */
static double known(json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    return json_is_number(v) ? json_number_value(v) : -1;
}

static void gpu_from(json_t *g, top_gpu *out) {
    *out = (top_gpu){
        .index = (int)json_integer_value(json_object_get(g, "index")),
        .used_mib = known(g, "used_mib"),
        .total_mib = known(g, "total_mib"),
        .util = known(g, "util"),
        .power_w = known(g, "power_w"),
        .drained = json_is_true(json_object_get(g, "drained")),
        .ok = json_is_true(json_object_get(g, "ok")),
    };
    snprintf(out->name, sizeof(out->name), "%s", text_of(g, "name"));
    snprintf(out->sharing, sizeof(out->sharing), "%s", text_of(g, "sharing"));
}

/* aegisd gives a running job's memory and SM utilization summed over its
 * GPUs: top shows them per GPU, averaged over its GPUs (as --mem is per
 * GPU, and as /metrics gives the SM share); < 0 when unknown. */
static double per_gpu(json_t *j, const char *key) {
    double sum = known(j, key);
    size_t ngpus = json_array_size(json_object_get(j, "gpu_ids"));
    return sum >= 0 && ngpus > 0 ? sum / (double)ngpus : -1;
}

static void job_from(json_t *j, top_job *out) {
    *out = (top_job){
        .id = (long long)json_integer_value(json_object_get(j, "id")),
        .mem_mib = known(j, "mem_mib"),
        .used_mib = per_gpu(j, "used_mib"),
        .sm_pct = per_gpu(j, "sm_pct"),
        .running = strcmp(text_of(j, "state"), "running") == 0,
    };
    snprintf(out->user, sizeof(out->user), "%s", text_of(j, "user"));
    if (text_of(j, "name")[0])
        snprintf(out->label, sizeof(out->label), "%s", text_of(j, "name"));
    else
        client_cmd_line(json_object_get(j, "cmd"), out->label,
                        sizeof(out->label));
    const char *why = text_of(j, "wait_reason");
    snprintf(out->reason, sizeof(out->reason), "%s", why[0] ? why : "-");
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(j, "gpu_ids"), i, g) {
        json_int_t index = json_integer_value(g);
        if (index >= 0 && index < 64) out->gpus |= 1ull << index;
    }
}

static void data_free(top_data *d) {
    free(d->gpus);
    free(d->jobs);
    *d = (top_data){0};
}

/* Converts aegisd's answers to gpus and ls; -1 when out of memory. */
static int data_from(json_t *gpus, json_t *ls, top_data *d) {
    json_t *garr = json_object_get(gpus, "gpus");
    json_t *jarr = json_object_get(ls, "jobs");
    d->ngpus = json_array_size(garr);
    d->njobs = json_array_size(jarr);
    d->gpus = calloc(d->ngpus + 1, sizeof(*d->gpus));
    d->jobs = calloc(d->njobs + 1, sizeof(*d->jobs));
    if (!d->gpus || !d->jobs) return -1;
    for (size_t i = 0; i < d->ngpus; i++)
        gpu_from(json_array_get(garr, i), &d->gpus[i]);
    for (size_t i = 0; i < d->njobs; i++)
        job_from(json_array_get(jarr, i), &d->jobs[i]);
    return 0;
}

/* One refresh: aegisd's GPUs and jobs into d (emptied first). Returns
 * CLI_OK, or the exit status client_call gave after complaining. */
static int top_fetch(const char *socket, top_data *d) {
    int rc;
    data_free(d);
    json_t *gpus = client_call("top", socket,
                               json_pack("{s:s}", "op", "gpus"), &rc);
    json_t *ls = gpus ? client_call("top", socket,
                                    json_pack("{s:s}", "op", "ls"), &rc)
                      : NULL;
    if (ls) rc = data_from(gpus, ls, d) ? CLI_FAIL : CLI_OK;
    if (ls && rc) client_complain("top", "out of memory");
    json_decref(gpus);
    json_decref(ls);
    return rc;
}

static top_screen screen_of(const top_data *d, const top_opts *o,
                            const char *error) {
    return (top_screen){.now = time(NULL), .delay_s = o->delay_s,
                        .gpus = d->gpus, .ngpus = d->ngpus, .jobs = d->jobs,
                        .njobs = d->njobs, .error = error};
}

static void draw(const top_screen *s, top_lines *lines) {
    int rows, cols;
    term_size(&rows, &cols);
    top_layout(s, rows, cols, lines); /* out of memory: what fitted */
    term_draw(lines);
}

/* Waits out one period, drawing again on a resize; false on quit. */
static bool wait_period(const top_screen *s, double delay_s,
                        top_lines *lines) {
    double end = client_now_s() + delay_s;
    for (;;) {
        double left_ms = (end - client_now_s()) * 1000;
        if (left_ms <= 0) return true;
        switch (term_wait((int)left_ms + 1)) {
        case TERM_QUIT: return false;
        case TERM_REFRESH: return true;
        case TERM_RESIZE: draw(s, lines); break;
        case TERM_NOTHING: break;
        }
    }
}

/* The full screen, until q (or -n screens). aegisd's complaints go on
 * the screen, not to stderr, which would garble it. */
static int top_full_screen(const top_opts *o) {
    static char stdout_buf[1 << 16];
    setvbuf(stdout, stdout_buf, _IOFBF, sizeof(stdout_buf));
    if (term_enter()) return CLI_FAIL;
    char complaint[1024];
    client_complaints_to(complaint, sizeof(complaint));
    top_data d = {0};
    top_lines lines = {0};
    int rc = CLI_OK;
    for (long n = 1;; n++) {
        term_busy(true);
        rc = top_fetch(o->socket, &d);
        term_busy(false);
        top_screen s = screen_of(&d, o, rc ? complaint : NULL);
        draw(&s, &lines);
        if ((o->count && n >= o->count) ||
            !wait_period(&s, o->delay_s, &lines))
            break;
    }
    term_leave();
    client_complaints_to(NULL, 0);
    top_lines_free(&lines);
    data_free(&d);
    return rc;
}

/* $COLUMNS, else 80: how wide a snapshot's lines may be; at least 20,
 * the narrowest the layout keeps apart, and at most 1000. */
static int snapshot_width(void) {
    const char *env = getenv("COLUMNS");
    long cols = env ? strtol(env, NULL, 10) : 0;
    if (cols <= 0) return 80;
    return cols < 20 ? 20 : cols > 1000 ? 1000 : (int)cols;
}

/* Plain text: -n snapshots (one by default), a blank line between. */
static int top_snapshots(const top_opts *o) {
    top_data d = {0};
    top_lines lines = {0};
    int rc = CLI_OK;
    for (long n = 0; rc == CLI_OK && n < (o->count ? o->count : 1); n++) {
        if (n) {
            time_t whole = (time_t)o->delay_s;
            struct timespec t = {whole, (long)((o->delay_s - whole) * 1e9)};
            putchar('\n');
            fflush(stdout);
            nanosleep(&t, NULL);
        }
        rc = top_fetch(o->socket, &d);
        top_screen s = screen_of(&d, o, NULL);
        if (rc == CLI_OK && top_layout(&s, INT_MAX, snapshot_width(), &lines)) {
            client_complain("top", "out of memory");
            rc = CLI_FAIL;
        }
        for (size_t i = 0; rc == CLI_OK && i < lines.n; i++)
            puts(lines.line[i]);
        fflush(stdout);
    }
    top_lines_free(&lines);
    data_free(&d);
    return rc;
}

int cli_top(int argc, char **argv) {
    top_opts o;
    int rc = top_options(argc, argv, &o);
    if (rc) return rc < 0 ? CLI_OK : rc;
    o.socket = client_socket(o.socket);
    return isatty(0) && isatty(1) ? top_full_screen(&o) : top_snapshots(&o);
}
