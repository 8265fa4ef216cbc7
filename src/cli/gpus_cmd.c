/* gpus_cmd.c -- `aegis gpus`, `drain` and `resume`: the server's
 * GPUs as aegisd sees them, and taking one out of placement.
 */
#include "cli.h"
#include "client.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define SOCKET_OPT \
"    --socket PATH   aegisd's socket (default $AEGIS_SOCKET, else\n" \
"                    " CLIENT_DEFAULT_SOCKET ")\n"

static const char gpus_help[] =
"NAME\n    aegis gpus - the GPUs aegisd manages\n\n"
"SYNOPSIS\n    aegis gpus [--json] [--socket PATH]\n\n"
"DESCRIPTION\n"
"    One line per GPU from its latest telemetry sample (taken every\n"
"    second): memory used of total, utilization, power, whether it is\n"
"    drained, and the jobs running on it; under a drained GPU, who\n"
"    drained it, when and why.\n\n"
"OPTIONS\n    --json          {gpus: [...], queued, running}; each GPU's\n"
"                    smact, smocc and drama are DCGM's latest (0..1),\n"
"                    null without DCGM or a fresh value; a drained\n"
"                    GPU's drain_reason, drained_by and drained_at\n"
"                    (Unix time)\n" SOCKET_OPT
"\nEXIT STATUS\n"
"    0 success, 1 aegisd unreachable, busy or failing, 2 bad usage.\n";

static const char drain_help[] =
"NAME\n    aegis drain, aegis resume - take a GPU out of placement, or back\n\n"
"SYNOPSIS\n    aegis drain GPU [--reason TEXT] [--socket PATH]\n"
"    aegis resume GPU [--socket PATH]\n\n"
"DESCRIPTION\n"
"    A drained GPU takes no new job; jobs on it keep running. GPU is its\n"
"    index as `aegis gpus` shows it. A drain is kept, with its reason and\n"
"    who drained the GPU, across restarts of aegisd until a resume (by\n"
"    the GPU's UUID: it stays with its GPU if the indices change). Only\n"
"    root or aegisd's user may drain or resume.\n\n"
"OPTIONS\n"
"    --reason TEXT   why, shown by aegis gpus (one line, at most 200\n"
"                    bytes): aegis drain 1 --reason 'fan failing, #42'\n"
SOCKET_OPT
"\nEXIT STATUS\n"
"    0 success, 1 aegisd unreachable, busy or failing, 2 bad usage or a\n"
"    request aegisd refused (no such GPU, not root).\n";

/* Under a drained GPU's line: who drained it, when, and why. */
static void gpus_print_drain(json_t *g) {
    time_t at = (time_t)json_number_value(json_object_get(g, "drained_at"));
    char when[32];
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M", localtime(&at));
    const char *reason = json_string_value(json_object_get(g, "drain_reason"));
    printf("    drained by %s at %s: %s\n",
           json_string_value(json_object_get(g, "drained_by")), when,
           reason && reason[0] ? reason : "no reason given");
}

static void gpus_print(json_t *ans) {
    printf("%-3s %-22s %17s %5s %7s %-7s %s\n", "GPU", "NAME", "MEMORY_MIB",
           "UTIL", "POWER_W", "STATE", "JOBS");
    size_t i, k;
    json_t *g, *id;
    json_array_foreach(json_object_get(ans, "gpus"), i, g) {
        double util = json_number_value(json_object_get(g, "util"));
        double power = json_number_value(json_object_get(g, "power_w"));
        printf("%-3lld %-22.22s %8.0f/%-8.0f ",
               (long long)json_integer_value(json_object_get(g, "index")),
               json_string_value(json_object_get(g, "name")),
               json_number_value(json_object_get(g, "used_mib")),
               json_number_value(json_object_get(g, "total_mib")));
        if (util >= 0) printf("%4.0f%% ", util * 100);
        else printf("%5s ", "-");
        if (power >= 0) printf("%7.0f ", power);
        else printf("%7s ", "-");
        printf("%-7s", json_is_true(json_object_get(g, "drained")) ? "drained"
                       : json_is_true(json_object_get(g, "ok")) ? "ok" : "error");
        json_array_foreach(json_object_get(g, "jobs"), k, id)
            printf(" %lld", (long long)json_integer_value(id));
        putchar('\n');
        if (json_is_true(json_object_get(g, "drained")))
            gpus_print_drain(g);
    }
    printf("queued %lld, running %lld\n",
           (long long)json_integer_value(json_object_get(ans, "queued")),
           (long long)json_integer_value(json_object_get(ans, "running")));
}

int cli_gpus(int argc, char **argv) {
    client_flags f;
    int rc = client_options("gpus", argc, argv, gpus_help, "j", 0, 0, &f);
    if (rc) return rc < 0 ? CLI_OK : rc;
    json_t *ans = client_call("gpus", client_socket(f.socket),
                              json_pack("{s:s}", "op", "gpus"), &rc);
    if (!ans) return rc;
    if (f.json) {
        json_object_del(ans, "ok");
        client_print_json(ans);
    } else {
        gpus_print(ans);
    }
    json_decref(ans);
    return CLI_OK;
}

/* What aegisd refuses in a drain, said as the option. */
static const request_word drain_fields[] = {{"reason", "--reason"},
                                           {NULL, NULL}};
static const request_words drain_words = {.object = "drain",
                                          .words = drain_fields};

static int drain_or_resume(const char *op, int argc, char **argv) {
    client_flags f;
    bool drain = !strcmp(op, "drain");
    int rc = client_options(op, argc, argv, drain_help, drain ? "r" : "", 1,
                            1, &f);
    if (rc) return rc < 0 ? CLI_OK : rc;
    long gpu;
    if (cli_parse_long(op, "GPU", argv[f.first_arg], 0, 63, &gpu))
        return CLI_USAGE;
    json_t *req = json_pack("{s:s, s:i}", "op", op, "gpu", (int)gpu);
    if (f.reason) {
        if (!client_text_option("drain", "reason", f.reason)) {
            json_decref(req);
            return CLI_USAGE;
        }
        json_object_set_new(req, "reason", json_string(f.reason));
    }
    json_t *ans = client_call_words(op, client_socket(f.socket), req,
                                    &drain_words, &rc);
    if (!ans) return rc;
    bool was = json_is_true(json_object_get(ans, "was_drained"));
    if (drain)
        printf("GPU %ld %s\n", gpu, was && !f.reason ? "was drained already"
                                   : was ? "drained: its reason changed"
                                         : "drained");
    else
        printf("GPU %ld %s\n", gpu, was ? "resumed" : "was not drained");
    json_decref(ans);
    return CLI_OK;
}

int cli_drain(int argc, char **argv) { return drain_or_resume("drain", argc, argv); }
int cli_resume(int argc, char **argv) { return drain_or_resume("resume", argc, argv); }
