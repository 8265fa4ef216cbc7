/* fuzz_proto.c -- fuzz target (fuzz.h) of the aegisd request parser:
 * every input is either rejected with a message or accepted with every
 * field within its documented limits: numbers finite and in range, text
 * UTF-8 (nothing the daemon would store or show is cut or dropped).
 * Seeds: seeds/proto/, a request of each kind.
 */
#include "fuzz.h"

#include "core.h"
#include "proto.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

FUZZ_TOKENS("{}[]\":,0123456789-.eE \\u\ttrufalsn");

/* A request accepted must not have what. */
#define fuzz_check(ok, what) FUZZ_CHECK(ok, "accepted a request with " what)

/* Whether text is UTF-8 (jansson makes no string of anything else). */
static int fuzz_utf8(const char *text) {
    json_t *s = json_string(text);
    json_decref(s);
    return s != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    proto_request req;
    char err[256] = "";
    if (proto_parse((const char *)data, size, &req, err, sizeof(err)) != 0) {
        fuzz_check(err[0] != '\0', "no message for its rejection");
    } else if (req.op == PROTO_SUBMIT) {
        fuzz_check(req.cwd && req.cwd[0] == '/', "a relative cwd");
        fuzz_check(fuzz_utf8(req.cwd), "a cwd not UTF-8");
        for (size_t i = 0; i < req.nenv; i++)
            fuzz_check(strchr(req.env[i], '=') != NULL, "a bad env entry");
        fuzz_check(req.njobs >= 1, "no jobs");
        for (size_t i = 0; i < req.njobs; i++) {
            const proto_job *j = &req.jobs[i];
            fuzz_check(j->argc >= 1 && j->argv[0][0] && !j->argv[j->argc],
                       "a bad argv");
            fuzz_check(j->gpus >= 1 && j->gpus <= CORE_MAX_JOB_GPUS,
                       "gpus out of range");
            fuzz_check(j->nafter <= PROTO_MAX_DEPS, "too many dependencies");
            for (size_t k = 0; k < j->nafter; k++)
                fuzz_check(j->after[k].id > 0
                               ? j->after[k].index == 0
                               : j->after[k].index >= 0 &&
                                     (size_t)j->after[k].index < i,
                           "a dependency on no job, itself or a later one");
            fuzz_check(strlen(j->name) <= PROTO_MAX_NAME, "a long name");
            fuzz_check(fuzz_utf8(j->name) && fuzz_utf8(j->feed),
                       "a name or feed not UTF-8");
            fuzz_check(strlen(j->feed) <= PROTO_MAX_FEED, "a long feed");
            fuzz_check(j->mem_mib == -1 ||
                       (j->mem_mib >= 0 && j->mem_mib <= PROTO_MAX_MEM_MIB),
                       "mem_mib out of range or not a number");
            fuzz_check(j->mps_threads_pct >= 0 && j->mps_threads_pct <= 100,
                       "mps_threads_pct out of range");
        }
    } else if (req.op == PROTO_LEASE || req.op == PROTO_LEASE_EXIT ||
               req.op == PROTO_LEASE_END) {
        const proto_lease *l = &req.lease;
        fuzz_check(l->slurm_job >= 1 && l->restart >= 0, "a bad Slurm job");
        fuzz_check(req.op == PROTO_LEASE_END || l->pid >= 1, "a bad pid");
        fuzz_check(req.op != PROTO_LEASE || (l->uid >= 0 && l->uid < UINT32_MAX),
                   "a bad uid");
        fuzz_check(l->gpus >= 1 && l->gpus <= CORE_MAX_JOB_GPUS,
                   "lease gpus out of range");
        fuzz_check(l->mem_mib == -1 ||
                   (l->mem_mib >= 0 && l->mem_mib <= PROTO_MAX_MEM_MIB),
                   "lease mem_mib out of range");
        fuzz_check(proto_lease_mode_known(l->mode), "an unknown mode");
        fuzz_check(strlen(l->name) <= PROTO_MAX_NAME && fuzz_utf8(l->name),
                   "a bad lease name");
        fuzz_check(strlen(l->stderr_tail) <= PROTO_MAX_TAIL &&
                   fuzz_utf8(l->stderr_tail), "a bad stderr_tail");
    } else {
        fuzz_check(isfinite(req.since) && req.since >= 0, "a bad since");
        for (size_t i = 0; i < req.nids; i++)
            fuzz_check(req.ids[i] >= 1, "an id below 1");
    }
    proto_request_free(&req);
    return 0;
}
