/* runner_child.c -- what a module's worker does. On its first call it
 * loads the module, checks its ABI and enters the sandbox: everything that
 * opens a file happens before that, and after it the worker only computes
 * and maps the batches it is sent. On every call it maps its input
 * (read-only) and output (runner_maps.c), resolves the parameters against
 * the module's declaration, runs it, and answers one run_result. A failed
 * call ends the worker. */
#include "runner_child.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "errors.h"
#include "runner_maps.h"

static const dipp_param_decl *find_decl(const dipp_module_info *m,
                                        const char *name) {
    for (uint32_t k = 0; k < m->param_count; k++)
        if (strcmp(m->params[k].name, name) == 0)
            return &m->params[k];
    return NULL;
}

/* Gives v the declared type; -1 when it cannot be. */
static int convert(const dipp_param_decl *d, dipp_param *v) {
    if (d->type == DIPP_PARAM_STR || v->type == DIPP_PARAM_STR)
        return d->type == v->type ? 0 : -1;
    if (d->type == DIPP_PARAM_FLOAT && v->type == DIPP_PARAM_INT)
        v->f = (double)v->i;
    if (d->type == DIPP_PARAM_INT && v->type == DIPP_PARAM_FLOAT) {
        if (v->f != (double)(int64_t)v->f)
            return -1;
        v->i = (int64_t)v->f;
    }
    v->type = d->type;
    double x = d->type == DIPP_PARAM_INT ? (double)v->i : v->f;
    return x < d->min || x > d->max ? -1 : 0;
}

static dipp_param default_of(const dipp_param_decl *d) {
    dipp_param v;
    memset(&v, 0, sizeof v);
    snprintf(v.name, sizeof v.name, "%s", d->name);
    v.type = d->type;
    v.i = (int64_t)d->def, v.f = d->def;
    return v;
}

int runner_resolve(const dipp_module_info *m, const dipp_params *given,
                   dipp_params *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    for (uint32_t k = 0; k < m->param_count; k++)
        out->item[out->count++] = default_of(&m->params[k]);
    for (uint32_t k = 0; k < given->count && k < DIPP_PARAMS_MAX; k++) {
        dipp_param v = given->item[k];
        const dipp_param_decl *d = find_decl(m, v.name);
        if (!d || convert(d, &v)) {
            snprintf(err, errlen, d ? "parameter '%s': wrong type or out of range"
                                    : "parameter '%s': not declared by the module",
                     v.name);
            return DIPP_E_PARAM;
        }
        out->item[d - m->params] = v;
    }
    return 0;
}

static int load(const run_req *q, const dipp_module_info **info, char *err,
                size_t errlen) {
    void *lib = plat_lib_open(q->path, err, errlen);
    if (!lib)
        return DIPP_E_MISSING_MODULE;
    *info = plat_lib_sym(lib, DIPP_MODULE_SYMBOL);
    if (!*info || !(*info)->run) {
        snprintf(err, errlen, "%.160s: no %s symbol with a run function", q->path,
                 DIPP_MODULE_SYMBOL);
        return DIPP_E_MISSING_SYMBOL;
    }
    if ((*info)->abi_version != DIPP_ABI_VERSION) {
        snprintf(err, errlen, "%.160s: built for ABI %u, this runner has %u",
                 q->path, (unsigned)(*info)->abi_version, DIPP_ABI_VERSION);
        return DIPP_E_ABI;
    }
    if ((*info)->param_count > DIPP_PARAMS_MAX) {
        snprintf(err, errlen, "%.160s: declares %u parameters, the ABI has room for %u",
                 q->path, (unsigned)(*info)->param_count, DIPP_PARAMS_MAX);
        return DIPP_E_ABI;
    }
    return 0;
}

/* What the module's return value means. */
static int code_of_return(int rc, dbatch *out, char *err, size_t errlen) {
    if (rc == DIPP_OK)
        return batch_commit(out, err, errlen) ? DIPP_E_OUTPUT : 0;
    int code = dipp_module_code(rc);
    snprintf(err, errlen, code == DIPP_E_OUTPUT
                              ? "the module returned %d, outside 1-999"
                              : "the module returned %d",
             rc);
    return code;
}

/* The module this worker serves, once its first call loaded it. */
static const dipp_module_info *module;
static char module_path[sizeof ((run_req *)0)->path];

static int first_call(const run_req *q, const plat_limits *lim, char *err,
                      size_t errlen) {
    int code = load(q, &module, err, errlen);
    if (code)
        return code;
    snprintf(module_path, sizeof module_path, "%s", q->path);
    int rc = plat_sandbox_enter(lim);
    if (rc) {
        snprintf(err, errlen, "cannot enter the sandbox: %s", strerror(-rc));
        return DIPP_E_RUNNER;
    }
    return 0;
}

static int child_run(const run_req *q, const int *fds, const plat_limits *lim,
                     uint32_t *run_us, char *err, size_t errlen) {
    static dipp_params params;
    int code = module ? 0 : first_call(q, lim, err, errlen);
    if (code)
        return code;
    if (strcmp(q->path, module_path) != 0) {
        snprintf(err, errlen, "a worker of %.100s sent %.100s", module_path, q->path);
        return DIPP_E_RUNNER;
    }
    dbatch *in = maps_get(fds[0], 0, q->keep_mapped[0]);
    if (!in || batch_load(in, err, errlen))
        return DIPP_E_INPUT;
    dbatch *out = maps_get(fds[1], 1, q->keep_mapped[1]);
    if (!out || batch_load(out, err, errlen)) {
        snprintf(err, errlen, "cannot map the output batch");
        return DIPP_E_RUNNER;
    }
    code = runner_resolve(module, &q->params, &params, err, errlen);
    if (code)
        return code;
    uint64_t start = plat_now_us();
    int rc = module->run(&in->api, &params, &out->api);
    *run_us = (uint32_t)(plat_now_us() - start);
    return code_of_return(rc, out, err, errlen);
}

size_t runner_child(const void *req, size_t req_len, const int *fds, int nfds,
                    const plat_limits *lim, void *result, int *keep) {
    run_result r;
    memset(&r, 0, sizeof r);
    if (req_len != sizeof(run_req) || nfds != 2) {
        r.code = DIPP_E_RUNNER;
        snprintf(r.detail, sizeof r.detail, "malformed request");
    } else {
        r.code = child_run(req, fds, lim, &r.run_us, r.detail, sizeof r.detail);
    }
    maps_end_call();
    *keep = r.code == 0;
    memcpy(result, &r, sizeof r);
    return sizeof r;
}
