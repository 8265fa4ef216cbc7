/* top_view.c -- the layout of `aegis top`: a title with the clock, each
 * GPU with a memory and a utilization bar and its running jobs, then the
 * queue with each job's REASON, cut to the terminal's size.
 *
 * Widths count characters, not bytes: a UTF-8 name takes one column a
 * character (wide CJK characters take two on screen, and may push a
 * line past the edge, which the terminal then cuts).
 */
#include "top_view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text_safe.h"

/* Copies at most width characters of src to dst (4 bytes a character
 * and the NUL), '?' for a control character, padded with spaces to
 * width when pad. */
static void fit(char *dst, const char *src, int width, bool pad) {
    const char *s = src;
    int n = 0;
    for (; *s && n < width; n++) {
        size_t len = text_char_len(s);
        if (text_is_control(s, len)) *dst++ = '?';
        else dst = (char *)memcpy(dst, s, len) + len;
        s += len;
    }
    while (pad && n++ < width) *dst++ = ' ';
    *dst = '\0';
}

static int width_of(const char *s) {
    int n = 0;
    for (const char *p = s; *p; n++)
        p += text_char_len(p);
    return n;
}

static void push(top_lines *out, const char *text, int cols) {
    if (out->n == out->cap) {
        size_t cap = out->cap ? out->cap * 2 : 32;
        char **grown = realloc(out->line, cap * sizeof(*grown));
        if (!grown) {
            out->oom = true;
            return;
        }
        out->line = grown;
        out->cap = cap;
    }
    char *line = malloc((size_t)cols * 4 + 1);
    if (!line) {
        out->oom = true;
        return;
    }
    fit(line, text, cols, false);
    out->line[out->n++] = line;
}

/* left, and right at the right edge when both fit; else left alone. */
static void push_lr(top_lines *out, int cols, const char *left,
                    const char *right) {
    int gap = cols - width_of(left) - width_of(right);
    if (gap < 1) {
        push(out, left, cols);
        return;
    }
    size_t size = strlen(left) + (size_t)gap + strlen(right) + 1;
    char *line = malloc(size);
    if (!line) {
        out->oom = true;
        return;
    }
    snprintf(line, size, "%s%*s%s", left, gap, "", right);
    push(out, line, cols);
    free(line);
}

static size_t count_running(const top_screen *s) {
    size_t n = 0;
    for (size_t i = 0; i < s->njobs; i++) n += s->jobs[i].running;
    return n;
}

static void push_title(const top_screen *s, int cols, top_lines *out) {
    char clock[16], left[160], right[64];
    struct tm tm;
    if (!localtime_r(&s->now, &tm) ||
        !strftime(clock, sizeof(clock), "%H:%M:%S", &tm))
        snprintf(clock, sizeof(clock), "--:--:--");
    size_t run = count_running(s);
    if (s->error)
        snprintf(left, sizeof(left), "aegis top  %s", clock);
    else
        snprintf(left, sizeof(left), "aegis top  %s  GPUs %zu  running %zu  "
                 "queued %zu", clock, s->ngpus, run, s->njobs - run);
    snprintf(right, sizeof(right), "every %gs, q quits", s->delay_s);
    push_lr(out, cols, left, right);
}

/* Jobs of a list: a GPU's running jobs (gpu >= 0), or the queue. */
static bool in_list(const top_job *j, int gpu) {
    if (gpu < 0) return !j->running;
    return j->running && gpu < 64 && ((j->gpus >> gpu) & 1);
}

static size_t list_len(const top_screen *s, int gpu) {
    size_t n = 0;
    for (size_t i = 0; i < s->njobs; i++) n += in_list(&s->jobs[i], gpu);
    return n;
}

/* "GPU 0  NAME ... naive  ok  120 W  2 jobs", aligned from one GPU to
 * the next: the name gives way. */
static void push_gpu_header(const top_gpu *g, size_t njobs, int cols,
                            top_lines *out) {
    char power[32] = "- W", right[128], name[sizeof(g->name) * 4],
         left[sizeof(name) + 32];
    if (g->power_w >= 0) snprintf(power, sizeof(power), "%.0f W", g->power_w);
    snprintf(right, sizeof(right), "%-9s %-7s %6s %3zu %-4s", g->sharing,
             g->drained ? "drained" : g->ok ? "ok" : "error", power, njobs,
             njobs == 1 ? "job" : "jobs");
    int prefix = snprintf(left, sizeof(left), "GPU %d  ", g->index);
    int room = cols - prefix - width_of(right) - 1;
    fit(name, g->name, room >= 8 ? room : (int)sizeof(g->name), false);
    snprintf(left + prefix, sizeof(left) - (size_t)prefix, "%s", name);
    push_lr(out, cols, left, right);
}

/* The characters inside a bar "LABEL[...]" of width characters. */
static int bar_inner(const char *label, int width) {
    return width - (int)strlen(label) - 2;
}

/* LABEL[|||||    text] in width characters: the fill as frac says, the
 * text at the right end over it, left out when it does not fit. */
static void bar(char *dst, const char *label, int width, double frac,
                const char *text) {
    int inner = bar_inner(label, width);
    if (inner < 1) {
        snprintf(dst, (size_t)width + 1, "%s", label);
        return;
    }
    int fill = frac > 0 ? (int)(frac * inner + 0.5) : 0;
    int tlen = (int)strlen(text);
    if (tlen > inner) tlen = 0;
    dst += sprintf(dst, "%s[", label);
    for (int i = 0; i < inner; i++)
        *dst++ = i >= inner - tlen ? text[i - (inner - tlen)]
                 : i < fill ? '|' : ' ';
    strcpy(dst, "]");
}

/* The memory bar, in width characters: "used/total MiB" in it, or the
 * percentage when that does not fit. */
static void mem_bar(char *dst, const top_gpu *g, int width) {
    double frac = g->total_mib > 0 ? g->used_mib / g->total_mib : 0;
    char text[64];
    int n = snprintf(text, sizeof(text), "%.0f/%.0f MiB", g->used_mib,
                     g->total_mib);
    if (n > bar_inner(" MEM", width))
        snprintf(text, sizeof(text), "%.0f%%", frac * 100);
    bar(dst, " MEM", width, frac, text);
}

/* " MEM[...] UTIL[...]", the two bars sharing the width. */
static void push_bars(const top_gpu *g, int cols, top_lines *out) {
    char *line = malloc((size_t)cols + 1), util[16] = "-";
    if (!line) {
        out->oom = true;
        return;
    }
    int mem_width = cols / 2;
    mem_bar(line, g, mem_width);
    if (g->util >= 0) snprintf(util, sizeof(util), "%.0f%%", g->util * 100);
    bar(line + strlen(line), " UTIL", cols - mem_width, g->util, util);
    push(out, line, cols);
    free(line);
}

/* "used/declared MiB" as the memory bar says "used/total MiB": what a
 * job holds beside what it asked for (--mem), "-" for what is unknown. */
static void job_mem(const top_job *j, char *text, size_t len) {
    char used[24] = "-";
    if (j->used_mib >= 0) snprintf(used, sizeof(used), "%.0f", j->used_mib);
    if (j->mem_mib > 0)
        snprintf(text, len, "%s/%.0f MiB", used, j->mem_mib);
    else
        snprintf(text, len, "%s%s", used, j->used_mib >= 0 ? " MiB" : "");
}

/* id, user, memory measured (of declared), SM share, name: nvtop's
 * per-process GPU MEM and GPU%, per job. */
static void push_running(const top_job *j, int cols, top_lines *out) {
    char user[64 * 4 + 1], mem[64], sm[16] = "-", line[2048];
    fit(user, j->user, 10, true);
    job_mem(j, mem, sizeof(mem));
    if (j->sm_pct >= 0) snprintf(sm, sizeof(sm), "%.0f%%", j->sm_pct);
    snprintf(line, sizeof(line), "%7lld %s %15s  SM %4s  %s", j->id, user,
             mem, sm, j->label);
    push(out, line, cols);
}

static void push_queued(const top_job *j, int cols, top_lines *out) {
    char user[64 * 4 + 1], label[20 * 4 + 1], line[2048];
    fit(user, j->user, 10, true);
    fit(label, j->label, 20, true);
    snprintf(line, sizeof(line), "%7lld %s %s %s", j->id, user, label,
             j->reason);
    push(out, line, cols);
}

/* A list's jobs, cut to shown rows: the last of them then says how many
 * more there are. */
static void push_list(const top_screen *s, int gpu, size_t shown, int cols,
                      top_lines *out) {
    size_t n = list_len(s, gpu), listed = 0;
    size_t room = shown < n ? shown - (shown > 0) : n;
    for (size_t i = 0; i < s->njobs && listed < room; i++) {
        if (!in_list(&s->jobs[i], gpu)) continue;
        if (gpu < 0) push_queued(&s->jobs[i], cols, out);
        else push_running(&s->jobs[i], cols, out);
        listed++;
    }
    if (shown > 0 && shown < n) {
        char more[64];
        snprintf(more, sizeof(more), "        + %zu more", n - room);
        push(out, more, cols);
    }
}

/* Shrinks the lists' rows (shown, from their lengths) until they fit
 * budget rows, one row at a time from the longest (the latest of equal
 * ones), so that every list keeps a fair share of the screen. */
static void share_rows(size_t *shown, size_t nlists, long budget) {
    long total = 0;
    for (size_t i = 0; i < nlists; i++) total += (long)shown[i];
    while (total > (budget > 0 ? budget : 0)) {
        size_t longest = 0;
        for (size_t i = 1; i < nlists; i++)
            if (shown[i] >= shown[longest]) longest = i;
        shown[longest]--;
        total--;
    }
}

/* The GPUs, each with its jobs, then the queue: list i is GPU i's jobs,
 * list ngpus the queue. */
static void push_gpus_and_queue(const top_screen *s, int rows, int cols,
                                top_lines *out) {
    size_t nlists = s->ngpus + 1;
    size_t *shown = malloc(nlists * sizeof(*shown));
    if (!shown) {
        out->oom = true;
        return;
    }
    for (size_t i = 0; i < s->ngpus; i++)
        shown[i] = list_len(s, s->gpus[i].index);
    shown[s->ngpus] = list_len(s, -1);
    long fixed = 1 + 2 * (long)s->ngpus + (shown[s->ngpus] > 0);
    share_rows(shown, nlists, rows - fixed);
    for (size_t i = 0; i < s->ngpus; i++) {
        const top_gpu *g = &s->gpus[i];
        push_gpu_header(g, list_len(s, g->index), cols, out);
        push_bars(g, cols, out);
        push_list(s, g->index, shown[i], cols, out);
    }
    if (list_len(s, -1) > 0) {
        char head[64];
        snprintf(head, sizeof(head), "%-7s %-10s %-20s %s", "QUEUED", "USER",
                 "NAME", "REASON");
        push(out, head, cols);
        push_list(s, -1, shown[s->ngpus], cols, out);
    }
    free(shown);
}

/* The bytes of the first n characters of s. */
static size_t bytes_of(const char *s, int n) {
    const char *p = s;
    for (; *p && n > 0; n--) p += text_char_len(p);
    return (size_t)(p - s);
}

/* text, cut into lines of cols characters, at a space where it can. */
static void push_wrapped(const char *text, int cols, top_lines *out) {
    while (*text && !out->oom) {
        size_t len = bytes_of(text, cols);
        const char *space = text + len;
        while (text[len] && space > text && *space != ' ') space--;
        if (text[len] && space > text) len = (size_t)(space - text) + 1;
        char *line = strndup(text, len);
        if (!line) out->oom = true;
        else push(out, line, cols);
        free(line);
        text += len;
    }
}

static void push_error(const top_screen *s, int cols, top_lines *out) {
    char retry[64];
    push(out, "", cols);
    push_wrapped(s->error, cols, out);
    snprintf(retry, sizeof(retry), "retrying every %gs; q quits", s->delay_s);
    push(out, "", cols);
    push(out, retry, cols);
}

/* Keeps rows lines: the last one kept says how many rows were cut. */
static void cut_rows(top_lines *out, int rows, int cols) {
    if (out->n <= (size_t)rows) return;
    size_t keep = (size_t)rows - 1, cut = out->n - keep;
    while (out->n > keep) free(out->line[--out->n]);
    char note[64];
    snprintf(note, sizeof(note), "+ %zu more rows: enlarge the terminal", cut);
    push(out, note, cols);
}

void top_lines_free(top_lines *out) {
    for (size_t i = 0; i < out->n; i++) free(out->line[i]);
    free(out->line);
    *out = (top_lines){0};
}

int top_layout(const top_screen *s, int rows, int cols, top_lines *out) {
    top_lines_free(out);
    if (rows <= 0 || cols <= 0) return 0;
    push_title(s, cols, out);
    if (s->error) push_error(s, cols, out);
    else push_gpus_and_queue(s, rows, cols, out);
    cut_rows(out, rows, cols);
    return out->oom ? -1 : 0;
}
