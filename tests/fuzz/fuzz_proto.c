/* fuzz_proto.c -- fuzz target for the aegisd request parser.
 *
 * Built with clang -fsanitize=fuzzer (AEGIS_LIBFUZZER) it is a libFuzzer
 * target; otherwise main() below is a deterministic random-mutation driver
 * (fixed seed, bounded iterations) that ctest runs: it mutates valid
 * requests by flipping, inserting, deleting and splicing bytes, and checks
 * that every input is either rejected with a message or accepted with
 * every field within its documented limits: numbers finite and in range,
 * text UTF-8 (nothing the daemon would store or show is cut or dropped).
 */
#include "core.h"
#include "proto.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_check(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "fuzz_proto: accepted a request with %s\n", what);
        abort();
    }
}

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

#ifndef AEGIS_LIBFUZZER
static const char *const seeds[] = {
    "{\"op\":\"submit\",\"cwd\":\"/tmp\",\"env\":[\"A=1\",\"PATH=/bin\"],"
    "\"jobs\":[{\"cmd\":[\"sleep\",\"1\"],\"gpus\":2,\"mem_mib\":1000,"
    "\"name\":\"x\",\"after\":7},{\"cmd\":[\"true\"]}]}",
    "{\"op\":\"ls\",\"all\":true}",
    "{\"op\":\"show\",\"id\":12}",
    "{\"op\":\"cancel\",\"ids\":[1,2,3]}",
    "{\"op\":\"wait\",\"ids\":[4]}",
    "{\"op\":\"log\",\"id\":3,\"offset\":100,\"stderr\":false}",
    "{\"op\":\"gpus\"}",
    "{\"op\":\"drain\",\"gpu\":1,\"reason\":\"fan noise\"}",
    "{\"op\":\"hold\",\"ids\":[5,6]}",
    "{\"op\":\"release\",\"ids\":[5]}",
    "{\"op\":\"shutdown\",\"drain\":true}",
    "{\"op\":\"submit\",\"cwd\":\"/d\u00e9j\u00e0\",\"jobs\":[{\"cmd\":[\"a\"],"
    "\"mem_mib\":12.5,\"name\":\"caf\u00e9\",\"feed\":\"in-1\","
    "\"mps_threads_pct\":50,\"gpus\":1.0,\"time_limit_s\":600}]}",
    "{\"op\":\"report\",\"since\":1700000000.5}",
    "{\"op\":\"lease\",\"slurm_job\":42,\"restart\":1,\"uid\":1000,"
    "\"mem_mib\":4000,\"mode\":\"mps\",\"pid\":4242,\"gpus\":2,"
    "\"name\":\"train\"}",
    "{\"op\":\"lease_exit\",\"slurm_job\":42,\"restart\":0,\"pid\":7,"
    "\"status\":256,\"stderr_tail\":\"CUDA out of memory\\n\"}",
    "{\"op\":\"lease_end\",\"slurm_job\":42}",
    "{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\"]},"
    "{\"cmd\":[\"b\"],\"after\":[{\"id\":3,\"kind\":\"afterany\"},"
    "{\"index\":0,\"kind\":\"afternotok\"}],\"meta\":{\"profile\":"
    "{\"avg_smact\":41.2,\"extra\":{}}}}]}",
};
#define NSEEDS (sizeof(seeds) / sizeof(*seeds))

/* xorshift64: the same sequence on every run, so a failure reproduces. */
static uint64_t rnd_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

static const char tokens[] = "{}[]\":,0123456789-.eE \\u\ttrufalsn";

static size_t mutate(char *buf, size_t len, size_t cap) {
    int edits = 1 + (int)(rnd() % 4);
    for (int e = 0; e < edits; e++) {
        size_t at = len ? rnd() % len : 0;
        switch (rnd() % 5) {
        case 0: if (len) buf[at] = (char)rnd(); break;
        case 1: if (len) buf[at] = tokens[rnd() % (sizeof(tokens) - 1)]; break;
        case 2: /* insert a byte */
            if (len + 1 < cap) {
                memmove(buf + at + 1, buf + at, len - at);
                buf[at] = tokens[rnd() % (sizeof(tokens) - 1)];
                len++;
            }
            break;
        case 3: /* delete a run */
            if (len) {
                size_t n = 1 + rnd() % 8;
                if (n > len - at) n = len - at;
                memmove(buf + at, buf + at + n, len - at - n);
                len -= n;
            }
            break;
        default: { /* splice in a piece of another seed */
            const char *s = seeds[rnd() % NSEEDS];
            size_t slen = strlen(s), from = rnd() % slen, n = 1 + rnd() % 24;
            if (n > slen - from) n = slen - from;
            if (len + n < cap) {
                memmove(buf + at + n, buf + at, len - at);
                memcpy(buf + at, s + from, n);
                len += n;
            }
        }
        }
    }
    return len;
}

int main(int argc, char **argv) {
    long iterations = argc > 1 ? atol(argv[1]) : 200000;
    char buf[4096];
    long accepted = 0;
    for (size_t i = 0; i < NSEEDS; i++)
        LLVMFuzzerTestOneInput((const uint8_t *)seeds[i], strlen(seeds[i]));
    for (long it = 0; it < iterations; it++) {
        const char *seed = seeds[rnd() % NSEEDS];
        size_t len = strlen(seed);
        memcpy(buf, seed, len);
        for (int rounds = 1 + (int)(rnd() % 3); rounds > 0; rounds--)
            len = mutate(buf, len, sizeof(buf));
        proto_request req;
        char err[256];
        if (proto_parse(buf, len, &req, err, sizeof(err)) == 0) accepted++;
        proto_request_free(&req);
        LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
    }
    printf("fuzz_proto: %ld inputs, %ld accepted, no fault\n", iterations,
           accepted);
    return 0;
}
#endif
