/* runner_child.c -- what a module's child does, in order: map its input
 * (read-only) and output, load the module and check its ABI, resolve the
 * parameters against its declaration, enter the sandbox, run it, and send
 * one run_result to the fork server. Everything that opens a file happens
 * before the sandbox; after it the child only computes. */
#include "runner_child.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "errors.h"

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
    snprintf(err, errlen, "the module returned %d", rc);
    if (rc == DIPP_ERR_NOMEM)
        return DIPP_E_NOMEM;
    return rc > 0 && rc < 300 ? DIPP_E_MODULE + rc : DIPP_E_OUTPUT;
}

static int child_run(const run_req *q, const int *fds, const plat_limits *lim,
                     char *err, size_t errlen) {
    static dbatch in, out; /* big: not on the stack */
    static dipp_params params;
    const dipp_module_info *m = NULL;
    if (batch_open(&in, fds[0], 0) || batch_load(&in, err, errlen))
        return DIPP_E_INPUT;
    /* a module reads its input whole: one call, not a fault a page */
    plat_shm_prefault(in.hdr, in.hdr->used < in.capacity ? in.hdr->used : in.capacity);
    if (batch_open(&out, fds[1], 1)) {
        snprintf(err, errlen, "cannot map the output batch");
        return DIPP_E_RUNNER;
    }
    int code = load(q, &m, err, errlen);
    if (!code)
        code = runner_resolve(m, &q->params, &params, err, errlen);
    if (code)
        return code;
    int rc = plat_sandbox_enter(lim);
    if (rc) {
        snprintf(err, errlen, "cannot enter the sandbox: %s", strerror(-rc));
        return DIPP_E_RUNNER;
    }
    return code_of_return(m->run(&in.api, &params, &out.api), &out, err, errlen);
}

void runner_child(const void *req, size_t req_len, const int *fds, int nfds,
                  const plat_limits *lim, int result_fd) {
    run_result r;
    memset(&r, 0, sizeof r);
    if (req_len != sizeof(run_req) || nfds != 2) {
        r.code = DIPP_E_RUNNER;
        snprintf(r.detail, sizeof r.detail, "malformed request");
    } else {
        r.code = child_run(req, fds, lim, r.detail, sizeof r.detail);
    }
    ssize_t w = write(result_fd, &r, sizeof r);
    (void)w; /* nothing to tell if the server is gone */
}
