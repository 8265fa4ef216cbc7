/* runner.c -- the parent side of running a module: starts the fork server
 * (with the libraries modules may use preloaded), sends it one request per
 * module run, keyed by the module file's identity so that a replaced file
 * gets a new worker, and maps how the call ended to DIPP's codes. */
#include "runner.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "errors.h"
#include "runner_child.h"

/* Libraries a module may link (the encoders'): mapped once in the fork
 * server, so a child finds them loaded when it dlopens its module. */
static const char *const preload[] = {"libjpeg.so.62", "libpng16.so.16", NULL};

int runner_name_ok(const char *name) {
    size_t n = strlen(name);
    if (n == 0 || n >= DIPP_PARAM_NAME_MAX)
        return 0;
    return strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

int runner_start(runner *r, const char *module_dir, plat_limits lim) {
    memset(r, 0, sizeof *r);
    r->lim = lim;
    r->cpu = PLAT_CPU_ANY;
    snprintf(r->module_dir, sizeof r->module_dir, "%s", module_dir);
    return plat_forksrv_start(&r->srv, runner_child, preload);
}

static int code_of_end(const plat_outcome *o, const run_result *res,
                       const runner *r, run_report *rep) {
    switch (o->end) {
    case PLAT_END_RESULT:
        if (o->result_len != sizeof *res)
            break;
        snprintf(rep->detail, sizeof rep->detail, "%s", res->detail);
        rep->run_us = res->run_us;
        return res->code;
    case PLAT_END_NORESULT:
        snprintf(rep->detail, sizeof rep->detail,
                 "exited with status %d before its result", o->status);
#ifdef DIPP_SANITIZER_FILTER
        /* ASan ends a crash with exit status 1 and no result: this build
         * cannot tell it from a module's own exit, and calls both a crash */
        return DIPP_E_CRASH;
#else
        return DIPP_E_EXITED; /* the flight's 601: exited, no error code */
#endif
    case PLAT_END_SIGNAL:
        snprintf(rep->detail, sizeof rep->detail, "killed by signal %d (%s)",
                 o->status, strsignal(o->status));
        return o->status == SIGSYS ? DIPP_E_SANDBOX : DIPP_E_CRASH;
    case PLAT_END_TIMEOUT:
        snprintf(rep->detail, sizeof rep->detail,
                 "still running after its %u ms: killed", (unsigned)r->lim.timeout_ms);
        return DIPP_E_TIMEOUT;
    case PLAT_END_SPAWN:
        snprintf(rep->detail, sizeof rep->detail, "fork: %s", strerror(o->status));
        return DIPP_E_RUNNER;
    }
    snprintf(rep->detail, sizeof rep->detail, "malformed result");
    return DIPP_E_OUTPUT;
}

/* The fork server is gone (killed, crashed): this batch is lost, and a new
 * server, forked from the caller now, takes the next. */
static int restart(runner *r) {
    plat_forksrv_stop(&r->srv);
    return plat_forksrv_start(&r->srv, runner_child, preload);
}

/* The worker key of the module at path: the path and what tells a file
 * put in its place (device, inode, change time, size). */
static void key_of(const char *path, char *key, size_t cap) {
    struct stat st;
    if (stat(path, &st) != 0)
        memset(&st, 0, sizeof st);
    snprintf(key, cap, "%s|%llu:%llu:%lld.%09ld:%lld", path,
             (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
             (long long)st.st_ctim.tv_sec, (long)st.st_ctim.tv_nsec,
             (long long)st.st_size);
}

static int call(runner *r, run_req *q, const dbatch *in, dbatch *out,
                run_report *rep) {
    /* the module's input travels read-only: it cannot map it writable */
    int fds[2] = {in->reader_fd >= 0 ? in->reader_fd : in->fd, out->fd};
    char key[PLAT_MAX_KEY];
    plat_outcome o;
    union {
        run_result res;
        uint8_t bytes[PLAT_MAX_RESULT];
    } got;
    const run_result *res = &got.res;
    memset(&got, 0, sizeof got);
    q->keep_mapped[0] = (uint8_t)in->kept, q->keep_mapped[1] = (uint8_t)out->kept;
    key_of(q->path, key, sizeof key);
    int rc = plat_forksrv_call(&r->srv, key, q, sizeof *q, fds, 2, &r->lim, r->cpu, &o,
                               &got);
    if (rc) {
        snprintf(rep->detail, sizeof rep->detail, "fork server: %s; %s", strerror(-rc),
                 restart(r) ? "could not restart it" : "restarted");
        return DIPP_E_RUNNER;
    }
    rep->ms = o.ms, rep->calls = o.calls, rep->cpu = o.started_on;
    int code = code_of_end(&o, res, r, rep);
    if (!code && batch_load(out, rep->detail, sizeof rep->detail))
        code = DIPP_E_OUTPUT;
    return code;
}

/* rep as for a call that has not started. */
static void report_clear(run_report *rep) {
    memset(rep, 0, sizeof *rep);
    rep->cpu = PLAT_CPU_ANY;
}

int runner_run_path(runner *r, const char *path, const dipp_params *p,
                    const dbatch *in, dbatch *out, run_report *rep) {
    static run_req q;
    report_clear(rep);
    memset(&q, 0, sizeof q);
    snprintf(q.path, sizeof q.path, "%s", path);
    q.params = *p;
    return rep->code = call(r, &q, in, out, rep);
}

int runner_run(runner *r, const char *name, const dipp_params *p,
               const dbatch *in, dbatch *out, run_report *rep) {
    char path[1024];
    if (!runner_name_ok(name)) {
        report_clear(rep);
        snprintf(rep->detail, sizeof rep->detail, "'%s' is not a module name", name);
        return rep->code = DIPP_E_MISSING_MODULE;
    }
    if (!r->locate || r->locate(r->locate_ctx, name, path, sizeof path))
        snprintf(path, sizeof path, "%s/%s.so", r->module_dir, name);
    return runner_run_path(r, path, p, in, out, rep);
}

void runner_stop(runner *r) {
    plat_forksrv_stop(&r->srv);
    step_pool_free(&r->pool);
}
