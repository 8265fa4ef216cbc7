/* estimate_cmd.c -- `aegis estimate`: GPU memory estimates of training jobs
 * from their model descriptions, by aegis's estimator and by Horus's.
 *
 * Reads description files, or JSON lines on stdin ("-"), so that the fit
 * script can get the physical components of thousands of models from the
 * one C implementation in a single run.
 */
#include "cli.h"
#include "client.h"
#include "submit.h"

#include "estimate.h"
#include "text_safe.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char help[] =
"NAME\n"
"    aegis estimate - GPU memory a training job will need, from its model\n"
"\n"
"SYNOPSIS\n"
"    aegis estimate [--estimator aegis|horus|all] [--stack aegis|gpumemnet]\n"
"                   [--cuda-context MIB] [--json] DESC.json... | -\n"
"\n"
"DESCRIPTION\n"
"    Prints, for each model description, the estimated peak GPU memory\n"
"    of one training process in MiB. A description (format aegis-model/1,\n"
"    written by python/aegis_describe.py or by hand) lists the model's leaf\n"
"    layers in forward order with each one's output elements per sample\n"
"    and trainable parameters, plus the batch size, the optimizer (sgd,\n"
"    sgd_momentum, adam, adamw, rmsprop, adagrad) and the precision (fp32,\n"
"    amp_fp16, amp_bf16, fp16, bf16). The extractor also writes what\n"
"    autograd was seen to keep of each layer (saved, saved_bytes, masks)\n"
"    and its warnings (a CPU pass, a forward pass that depends on the\n"
"    input's values, unused weights), which are repeated on stderr as\n"
"    'FILE: warning: ...'. With '-', descriptions are read from stdin,\n"
"    one JSON object per line (blank lines skipped; none at all is bad\n"
"    input). A description, a file or a line, may hold 16 MiB: a longer\n"
"    line ends the input, with a message naming it.\n"
"\n"
"ESTIMATORS\n"
"    aegis   (default) a physical model -- weights, gradients, optimizer\n"
"            state, the activations autograd keeps for backward (by layer\n"
"            category), backward and convolution workspace, CUDA context,\n"
"            allocator rounding -- corrected by a linear model fitted to 6,000\n"
"            measured MLP runs and 26 catalog workloads, times a safety\n"
"            margin calibrated on held-out runs so that underestimates\n"
"            are rare. The estimate is what aegis schedules on.\n"
"    horus   Horus's formula 4*[(A*B + P) + B*P] bytes (A: summed layer\n"
"            outputs per sample, B: batch size, P: parameters), plus\n"
"            --cuda-context MIB.\n"
"    all     both.\n"
"\n"
"OPTIONS\n"
"    --estimator NAME    aegis, horus or all (default aegis)\n"
"    --stack NAME        the software stack whose fixed costs (CUDA context,\n"
"                        kernels, allocator pools) aegis adds: aegis\n"
"                        (default; AEGIS's A100 server, CUDA lazy loading,\n"
"                        about 0.5 GiB) or gpumemnet (GPUMemNet's A100\n"
"                        measurements, about 1.4 GiB). aegis's only: with\n"
"                        --estimator horus it is a usage error\n"
"    --cuda-context MIB  added to Horus's estimate (default 0, the formula\n"
"                        as published). Horus's only: without --estimator\n"
"                        horus or all it is a usage error, as it would\n"
"                        change nothing; aegis's CUDA context is part of\n"
"                        --stack\n"
"    --json              one JSON object per description (one per line):\n"
"                        file (each byte of its name that is not UTF-8\n"
"                        as '?'), model, batch_size, and per estimator its\n"
"                        estimate_mib; aegis's also stack, predicted_mib,\n"
"                        margin_mib, margin_quantile and components (each\n"
"                        physical component in MiB, activations by layer\n"
"                        category, the correction's groups)\n"
"    --help              this text\n"
"\n"
"EXAMPLES\n"
"    aegis estimate data/models/resnet50_imagenet_bs32_1gpu.json\n"
"    aegis estimate --estimator all --json model.json\n"
"\n"
"EXIT STATUS\n"
"    0 success; 1 write error; 2 bad usage or a bad description (the\n"
"    message names the file and the field, e.g. layers[12].params, or\n"
"    says an implausible size: above 2^40 elements in a field or in all\n"
"    layers together, or a batch_size above 1000000, which\n"
"    aegis_describe.py refuses already). Every input is read: the bad\n"
"    ones are reported, the good ones estimated, and the status is 2 if\n"
"    any was bad.\n";

enum { WANT_AEGIS = 1, WANT_HORUS = 2 };

typedef struct estimate_cmd {
    int want;               /* WANT_* bits */
    est_stack stack;        /* whose fixed costs aegis adds */
    double cuda_context;    /* added to Horus */
    int cuda_context_given; /* --cuda-context was on the command line */
    int stack_given;        /* --stack was */
    int json;
} estimate_cmd;

static json_t *components_json(const est_components *c) {
    json_t *acts = json_object();
    for (int i = 0; i < EST_NCAT; i++)
        json_object_set_new(acts, est_category_name((est_category)i),
                            json_real(c->activations[i]));
    static const char *const group_names[EST_NGROUP] = {
        "state", "act_matmul", "act_elementwise", "act_input", "act_scores",
        "workspace", "conv_workspace"};
    double g[EST_NGROUP];
    est_groups(c, g);
    json_t *groups = json_object();
    for (int i = 0; i < EST_NGROUP; i++)
        json_object_set_new(groups, group_names[i], json_real(g[i]));
    return json_pack("{s:f, s:f, s:f, s:f, s:o, s:f, s:f, s:f, s:f, s:f, s:f,"
                     " s:o}",
                     "weights_mib", c->weights, "gradients_mib", c->gradients,
                     "optimizer_mib", c->optimizer, "input_mib", c->input,
                     "activations_mib", acts,
                     "activations_total_mib", est_activations_total(c),
                     "workspace_mib", c->workspace,
                     "conv_workspace_mib", c->conv_workspace,
                     "cuda_context_mib", c->cuda_context,
                     "rounding_mib", c->rounding,
                     "physical_total_mib", est_physical_total(c),
                     "groups_mib", groups);
}

/* A description's file name and its model's are any bytes (a file
 * another user wrote, a name as it was given): shown as text_safe()
 * shows them. */
static void print_text(const char *name, const est_desc *d,
                       const est_components *c, const est_result *r,
                       const estimate_cmd *cmd, double horus) {
    char file[4200], model[1024];
    text_safe(file, sizeof(file), name);
    text_safe(model, sizeof(model), d->model[0] ? d->model : "(unnamed model)");
    printf("%s: %s, batch %ld, %s, %s, %zu layers\n", file, model, d->batch_size,
           est_optimizer_name(d->optimizer), est_precision_name(d->precision),
           d->nlayers);
    if (cmd->want & WANT_AEGIS) {
        printf("  aegis  %10.0f MiB  (predicted %.0f + margin %.0f; stack %s)\n",
               r->estimate_mib, r->predicted_mib, r->margin_mib,
               est_stack_name(cmd->stack));
        printf("         physical %.0f MiB: weights %.1f, gradients %.1f, "
               "optimizer %.1f, activations %.1f, workspace %.1f, "
               "conv workspace %.1f, context %.0f, rounding %.1f\n",
               est_physical_total(c), c->weights, c->gradients, c->optimizer,
               est_activations_total(c), c->workspace, c->conv_workspace,
               c->cuda_context, c->rounding);
    }
    if (cmd->want & WANT_HORUS)
        printf("  horus  %10.0f MiB\n", horus);
}

/* The extractor's warnings say what the description stands on (a CPU
 * pass, values the forward pass depends on): repeated with the estimate. */
static void print_warnings(const char *name, const est_desc *d) {
    submit_desc_warnings("estimate", name, d);
}

static json_t *warnings_json(const est_desc *d) {
    json_t *list = json_array();
    for (size_t i = 0; i < d->nwarnings; i++)
        json_array_append_new(list, json_string(d->warnings[i]));
    return list;
}

static int estimate_one(const char *name, const est_desc *d,
                        const estimate_cmd *cmd) {
    print_warnings(name, d);
    est_components c;
    est_result r;
    est_physical(d, &c);
    est_correct(&c, &est_learned_shipped, cmd->stack, &r);
    double horus = est_horus(d, cmd->cuda_context);
    if (!cmd->json) {
        print_text(name, d, &c, &r, cmd, horus);
        return 0;
    }
    json_t *est = json_object();
    if (cmd->want & WANT_AEGIS)
        json_object_set_new(est, "aegis", json_pack(
            "{s:f, s:s, s:f, s:f, s:f, s:o}", "estimate_mib", r.estimate_mib,
            "stack", est_stack_name(cmd->stack),
            "predicted_mib", r.predicted_mib, "margin_mib", r.margin_mib,
            "margin_quantile", est_learned_shipped.margin_quantile,
            "components", components_json(&c)));
    if (cmd->want & WANT_HORUS)
        json_object_set_new(est, "horus", json_pack(
            "{s:f, s:f}", "estimate_mib", horus, "cuda_context_mib",
            cmd->cuda_context));
    /* name: a file's, whatever its bytes (client_json_text()) */
    json_t *out = json_pack("{s:o, s:s, s:I, s:o}", "file",
                            client_json_text(name), "model", d->model,
                            "batch_size", (json_int_t)d->batch_size,
                            "estimates", est);
    if (out && d->nwarnings)
        json_object_set_new(out, "warnings", warnings_json(d));
    if (!out) return -1;
    /* controls in the name, kept by client_json_text(), escaped */
    client_print_json_as(out, JSON_COMPACT | JSON_REAL_PRECISION(10));
    json_decref(out);
    return ferror(stdout) ? -1 : 0;
}

/* Why a description could not be read: the message names its file and
 * may quote it, any bytes, so it is shown safe. */
static void estimate_error(const char *err) {
    char safe[512]; /* the size of the callers' err */
    text_safe(safe, sizeof(safe), err);
    fprintf(stderr, "aegis estimate: %s\n", safe);
}

/* Folds the status of one input into the command's: a bad input (2) is
 * remembered and the next one read, a write error (1) ends the run. */
static int worst(int rc, int one) {
    if (rc == CLI_FAIL || one == CLI_FAIL) return CLI_FAIL;
    return one == CLI_USAGE ? CLI_USAGE : rc;
}

/* A line of stdin is one description, held to a file's EST_DESC_MAX:
 * the buffer grows to that, its '\n' and a NUL, and no further, so a
 * line without end costs 16 MiB, not all memory. */
#define LINE_ROOM (EST_DESC_MAX + 2)

/* The next line of in (its '\n' kept) into *buf, grown as needed: its
 * length, 0 at the end, -1 when out of memory, -2 at a NUL byte (binary
 * input, which no line after resyncs: /dev/zero has no end) and -3 past
 * EST_DESC_MAX bytes before its '\n' (read no further: the rest of such
 * a line may have no end either). */
static ssize_t read_line(FILE *in, char **buf, size_t *cap) {
    size_t len = 0;
    int c;
    while ((c = getc(in)) != EOF) {
        if (c == '\0') return -2;
        if (c != '\n' && len == EST_DESC_MAX) return -3;
        if (len + 2 > *cap) {
            size_t bigger = *cap ? *cap * 2 : 4096;
            if (bigger > LINE_ROOM) bigger = LINE_ROOM;
            char *grown = realloc(*buf, bigger);
            if (!grown) return -1;
            *buf = grown;
            *cap = bigger;
        }
        (*buf)[len++] = (char)c;
        if (c == '\n') break;
    }
    if (len) (*buf)[len] = '\0';
    return (ssize_t)len;
}

/* Why stdin's line `name` could not be read (read_line()'s n < 0), into
 * err. */
static void line_error(ssize_t n, const char *name, char *err,
                       size_t errlen) {
    if (n == -3)
        est_desc_too_big(name, err, errlen);
    else
        snprintf(err, errlen, "%s: %s", name,
                 n == -2 ? "a NUL byte: binary input, not JSON lines"
                         : "out of memory");
}

/* Descriptions as JSON lines on stdin; blank lines are skipped, a bad
 * line is reported and the next one read. */
static int estimate_stdin(const estimate_cmd *cmd) {
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0, described = 0, rc = CLI_OK;
    ssize_t n;
    while (rc != CLI_FAIL && (n = read_line(stdin, &line, &cap)) != 0) {
        lineno++;
        char name[32], err[512];
        snprintf(name, sizeof(name), "<stdin>:%d", lineno);
        if (n < 0) {
            line_error(n, name, err, sizeof(err));
            estimate_error(err);
            rc = n == -1 ? CLI_FAIL : worst(rc, CLI_USAGE);
            break;
        }
        if (line[strspn(line, " \t\r\n")] == '\0') continue;
        described++;
        json_error_t jerr;
        json_t *root = json_loads(line, JSON_REJECT_DUPLICATES, &jerr);
        est_desc *d = root ? est_desc_from_json(root, name, err, sizeof(err))
                           : NULL;
        if (!root)
            snprintf(err, sizeof(err), "%s: bad JSON: %s", name, jerr.text);
        if (!d) {
            estimate_error(err);
            rc = worst(rc, CLI_USAGE);
        } else if (estimate_one(name, d, cmd) < 0) {
            rc = CLI_FAIL;
        }
        est_desc_free(d);
        json_decref(root);
    }
    free(line);
    /* a run that estimated nothing must not pass for one that did */
    if (rc == CLI_OK && described == 0) {
        fputs("aegis estimate: <stdin>: no description (one JSON object a "
              "line)\n", stderr);
        rc = CLI_USAGE;
    }
    return rc;
}

static int estimate_file(const char *path, const estimate_cmd *cmd) {
    char err[512];
    est_desc *d = est_desc_load(path, err, sizeof(err));
    if (!d) {
        estimate_error(err);
        return CLI_USAGE;
    }
    int rc = estimate_one(path, d, cmd) < 0 ? CLI_FAIL : CLI_OK;
    est_desc_free(d);
    return rc;
}

static int parse_estimator(const char *text, int *want) {
    *want = !strcmp(text, "aegis")   ? WANT_AEGIS
          : !strcmp(text, "horus")   ? WANT_HORUS
          : !strcmp(text, "all")     ? WANT_AEGIS | WANT_HORUS
                                     : 0;
    if (*want) return 0;
    fprintf(stderr, "aegis estimate: --estimator: unknown estimator '%s' "
            "(aegis, horus or all)\n", text);
    return -1;
}

static int parse_stack(const char *text, est_stack *stack) {
    int s = est_stack_of(text);
    if (s >= 0) {
        *stack = (est_stack)s;
        return 0;
    }
    fprintf(stderr, "aegis estimate: --stack: unknown stack '%s' (aegis or "
            "gpumemnet)\n", text);
    return -1;
}

/* --cuda-context is added to Horus's estimate only, --stack to aegis's.
 * Given without its estimator either would change nothing, and a user who
 * meant it for the other estimate would trust a figure other than
 * intended: a usage error, not ignored. */
static int check_options_apply(const estimate_cmd *cmd) {
    if (cmd->cuda_context_given && !(cmd->want & WANT_HORUS)) {
        fputs("aegis estimate: --cuda-context is added to Horus's estimate "
              "only: give --estimator horus or all, or leave it out "
              "(aegis's CUDA context is part of --stack)\n", stderr);
        return -1;
    }
    if (cmd->stack_given && !(cmd->want & WANT_AEGIS)) {
        fputs("aegis estimate: --stack sets aegis's estimate only: give "
              "--estimator aegis or all, or leave it out (Horus's CUDA "
              "context is --cuda-context)\n", stderr);
        return -1;
    }
    return 0;
}

int cli_estimate(int argc, char **argv) {
    static const struct option options[] = {
        {"estimator", required_argument, NULL, 'e'},
        {"stack", required_argument, NULL, 's'},
        {"cuda-context", required_argument, NULL, 'c'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    estimate_cmd cmd = {.want = WANT_AEGIS, .stack = EST_STACK_AEGIS};
    int opt;
    while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
        int rc = 0;
        switch (opt) {
        case 'e': rc = parse_estimator(optarg, &cmd.want); break;
        case 's': rc = parse_stack(optarg, &cmd.stack);
                  cmd.stack_given = 1; break;
        case 'c': rc = cli_parse_double("estimate", "cuda-context", optarg, 0,
                                        1 << 20, &cmd.cuda_context);
                  cmd.cuda_context_given = 1; break;
        case 'j': cmd.json = 1; break;
        case 'h': fputs(help, stdout); return CLI_OK;
        default: rc = -1;
        }
        if (rc < 0) {
            fputs("(see 'aegis estimate --help')\n", stderr);
            return CLI_USAGE;
        }
    }
    if (check_options_apply(&cmd) < 0) {
        fputs("(see 'aegis estimate --help')\n", stderr);
        return CLI_USAGE;
    }
    if (optind == argc) {
        fputs("aegis estimate: give DESC.json files or - (see 'aegis "
              "estimate --help')\n", stderr);
        return CLI_USAGE;
    }
    /* Every input is estimated or reported, whatever came before it. */
    int rc = CLI_OK;
    for (int i = optind; i < argc && rc != CLI_FAIL; i++) {
        int one = strcmp(argv[i], "-") == 0 ? estimate_stdin(&cmd)
                                            : estimate_file(argv[i], &cmd);
        rc = worst(rc, one);
    }
    if (rc != CLI_FAIL && fflush(stdout) != 0) {
        fputs("aegis estimate: cannot write the estimates\n", stderr);
        rc = CLI_FAIL;
    }
    return rc;
}
