/* submit_cmd.c -- `aegis submit`: one command, a YAML job spec, or an
 * array file of commands, sent to aegisd as one request (so one
 * transaction: all the jobs are accepted or none).
 *
 * Nothing given is dropped or altered on the way: a number out of range
 * or not whole where a whole one is needed, text that is not UTF-8 (the
 * request is JSON) or that holds a NUL byte (a C string would end there)
 * is refused, naming the option or FILE:LINE and key, with exit 2.
 */
#include "cli.h"
#include "client.h"
#include "estimate.h"

#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

extern char **environ;

static const char help[] =
"NAME\n"
"    aegis submit - queue training jobs on aegisd\n"
"\n"
"SYNOPSIS\n"
"    aegis submit [OPTIONS] [--] COMMAND [ARG...]\n"
"    aegis submit [OPTIONS] SPEC.yaml\n"
"    aegis submit [OPTIONS] --array FILE\n"
"\n"
"DESCRIPTION\n"
"    Queues jobs and prints their ids, one per line, once aegisd has\n"
"    committed them to its database (a job whose id was printed survives\n"
"    a crash of aegisd). Each job runs as you, in the current directory,\n"
"    with the current environment, on GPUs aegisd chooses (given to it in\n"
"    CUDA_VISIBLE_DEVICES).\n"
"\n"
"    With --array, each non-empty line of FILE not starting with '#' is a\n"
"    shell command (run with /bin/sh -c); all of them are queued in one\n"
"    transaction.\n"
"\n"
"    A SPEC.yaml (a file ending in .yaml or .yml) holds one job as a\n"
"    mapping, or several under the key jobs:\n"
"\n"
"        jobs:\n"
"          - name: bert\n"
"            command: python train.py --bs 32   # string: run by /bin/sh -c\n"
"            gpus: 1\n"
"            mem_mib: 20000\n"
"          - command: [python, eval.py]         # list: run as is\n"
"            after: 41\n"
"            mps_threads_pct: 50                # see --mps-threads\n"
"          - command: python train_resnet.py\n"
"            model: resnet50_bs32.json          # mem_mib from the model\n"
"\n"
"    model: names a model description (see aegis estimate; a relative\n"
"    path is taken from the spec's folder); aegis's memory estimate of it\n"
"    becomes the job's mem_mib unless the job also gives mem_mib.\n"
"\n"
"    The options below apply to every job that does not say otherwise.\n"
"\n"
"OPTIONS\n"
"    --gpus N        GPUs per job (default 1)\n"
"    --mem MIB       the job's expected peak GPU memory; aegis admits it\n"
"                    where MIB + 2048 fit. Without it, 5120 MiB are\n"
"                    assumed and an out-of-memory exit climbs the\n"
"                    recovery ladder\n"
"    --model FILE    a model description (aegis-model/1 JSON): the job's\n"
"                    memory is aegis's estimate of it (as printed by\n"
"                    `aegis estimate FILE`); --mem, if also given, wins\n"
"    --name S        a name shown by `aegis ls`\n"
"    --feed NAME     the job reads the shared data feed NAME (see the\n"
"                    aegis_feed Python module): recorded with the job, so\n"
"                    that jobs sharing a feed can be told apart and placed\n"
"                    together\n"
"    --after ID      run once job ID has succeeded; cancelled if it fails\n"
"    --mps-threads PCT  on a GPU aegisd shares through MPS, the job may use\n"
"                    at most PCT% (1..100) of the GPU's SMs\n"
"                    (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE); elsewhere ignored\n"
"    --array FILE    one command per line, as above\n"
"    --json          print {\"ids\": [...]} instead\n"
"    --socket PATH   aegisd's socket (default $AEGIS_SOCKET, else\n"
"                    " CLIENT_DEFAULT_SOCKET ")\n"
"\n"
"EXIT STATUS\n"
"    0 queued, 1 aegisd unreachable, busy or failing, 2 bad usage or bad\n"
"    input (aegisd's refusals too: more GPUs than it has, no --after job).\n";

/* The options every job starts from. */
typedef struct submit_defaults {
    long gpus;
    double mem;             /* < 0: none */
    const char *name;
    const char *feed;       /* shared data feed; NULL: none */
    long after;             /* 0: none */
    long mps_threads;       /* MPS thread percentage; 0: none */
} submit_defaults;

static json_t *submit_job(json_t *cmd, const submit_defaults *def) {
    json_t *job = json_pack("{s:o, s:i}", "cmd", cmd, "gpus", (int)def->gpus);
    if (def->mem >= 0) json_object_set_new(job, "mem_mib", json_real(def->mem));
    if (def->name) json_object_set_new(job, "name", json_string(def->name));
    if (def->feed) json_object_set_new(job, "feed", json_string(def->feed));
    if (def->after > 0) json_object_set_new(job, "after", json_integer(def->after));
    if (def->mps_threads > 0)
        json_object_set_new(job, "mps_threads_pct",
                            json_integer(def->mps_threads));
    return job;
}

/* aegis's estimate (with its safety margin) of the model described in
 * path: the job's expected peak memory. */
static int submit_model_mem(const char *path, double *mem) {
    char err[512];
    est_desc *d = est_desc_load(path, err, sizeof(err));
    if (!d) {
        fprintf(stderr, "aegis submit: %s\n", err);
        return -1;
    }
    est_components c;
    est_result r;
    est_physical(d, &c);
    est_correct(&c, &est_learned_shipped, EST_STACK_AEGIS, &r);
    est_desc_free(d);
    /* The daemon takes at most 1 TiB (2^20 MiB), as --mem does. */
    *mem = r.estimate_mib < (1 << 20) ? r.estimate_mib : (1 << 20);
    return 0;
}

static json_t *submit_shell(const char *line) {
    return json_pack("[s, s, s]", "/bin/sh", "-c", line);
}

/* Reads an array file: one job per command line. */
static int submit_array(const char *path, const submit_defaults *def,
                        json_t *jobs) {
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int lineno = 0, rc = 0;
    while ((n = getline(&line, &cap, f)) > 0) {
        lineno++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        const char *p = line + strspn(line, " \t");
        if (memchr(line, '\0', (size_t)n)) {
            fprintf(stderr, "aegis submit: %s:%d: holds a NUL byte\n", path,
                    lineno);
            rc = -1;
            break;
        }
        if (*p == '\0' || *p == '#') continue;
        json_t *cmd = submit_shell(p);
        if (!cmd) {
            fprintf(stderr, "aegis submit: %s:%d: not UTF-8 text\n", path,
                    lineno);
            rc = -1;
            break;
        }
        json_array_append_new(jobs, submit_job(cmd, def));
    }
    free(line);
    fclose(f);
    if (rc == 0 && json_array_size(jobs) == 0) {
        fprintf(stderr, "aegis submit: %s: no commands\n", path);
        rc = -1;
    }
    return rc;
}

/* ---- YAML job specs -------------------------------------------------------- */

static const char *spec_scalar(yaml_document_t *doc, yaml_node_t *n) {
    (void)doc;
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value
                                            : NULL;
}

static int spec_error(const char *path, yaml_node_t *n, const char *msg,
                      const char *key) {
    fprintf(stderr, "aegis submit: %s:%d: %s%s%s\n", path,
            (int)n->start_mark.line + 1, key ? key : "", key ? ": " : "", msg);
    return -1;
}

/* The text of scalar v into *out; -1 with a message naming key when v is
 * not a scalar or holds a NUL byte (YAML's "\0"), which would cut it short.
 * libyaml has checked the rest: a scalar is UTF-8. */
static int spec_text(const char *path, yaml_node_t *v, const char *key,
                     const char *what, const char **out) {
    *out = spec_scalar(NULL, v);
    if (!*out) return spec_error(path, v, what, key);
    if (strlen(*out) != v->data.scalar.length)
        return spec_error(path, v, "holds a NUL byte", key);
    return 0;
}

/* A number in [lo, hi], whole when `whole`; NaN and fractions are refused,
 * never rounded or dropped. */
static int spec_number(const char *path, yaml_node_t *v, const char *key,
                       double lo, double hi, bool whole, double *out) {
    const char *text = spec_scalar(NULL, v);
    char *end;
    double d = text ? strtod(text, &end) : 0;
    if (!text || end == text || *end || !(d >= lo && d <= hi) ||
        (whole && d != floor(d))) {
        char msg[160];
        snprintf(msg, sizeof(msg), "'%.40s' is not a %s in [%g, %g]",
                 text ? text : "", whole ? "whole number" : "number", lo, hi);
        return spec_error(path, v, msg, key);
    }
    *out = d;
    return 0;
}

/* A spec's model: file, relative to the spec's folder unless absolute. */
static int spec_model(const char *spec, const char *file, double *mem) {
    const char *slash = strrchr(spec, '/');
    if (file[0] == '/' || !slash) return submit_model_mem(file, mem);
    int dir = (int)(slash - spec);
    size_t len = (size_t)dir + strlen(file) + 2;
    char *joined = malloc(len);
    if (!joined) {
        perror("aegis submit");
        return -1;
    }
    snprintf(joined, len, "%.*s/%s", dir, spec, file);
    int rc = submit_model_mem(joined, mem);
    free(joined);
    return rc;
}

/* The command of a spec: a string for /bin/sh -c, or a list of words;
 * NULL once the fault is told. */
static json_t *spec_command(const char *path, yaml_document_t *doc,
                            yaml_node_t *v, const char *key) {
    static const char what[] = "expected a string or a list of words";
    const char *w;
    if (v->type == YAML_SCALAR_NODE)
        return spec_text(path, v, key, what, &w) ? NULL : submit_shell(w);
    if (v->type != YAML_SEQUENCE_NODE ||
        v->data.sequence.items.start == v->data.sequence.items.top) {
        spec_error(path, v, what, key);
        return NULL;
    }
    json_t *cmd = json_array();
    for (yaml_node_item_t *it = v->data.sequence.items.start;
         it < v->data.sequence.items.top; it++) {
        if (spec_text(path, yaml_document_get_node(doc, *it), key, what,
                      &w) != 0) {
            json_decref(cmd);
            return NULL;
        }
        json_array_append_new(cmd, json_string(w));
    }
    return cmd;
}

static int spec_job(const char *path, yaml_document_t *doc, yaml_node_t *map,
                    const submit_defaults *def, json_t *jobs) {
    if (map->type != YAML_MAPPING_NODE)
        return spec_error(path, map, "expected a job (a mapping)", NULL);
    submit_defaults d = *def;
    json_t *cmd = NULL;
    double num, model_mem = -1;
    bool has_mem = false;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
         p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = yaml_document_get_node(doc, p->key);
        yaml_node_t *v = yaml_document_get_node(doc, p->value);
        const char *k = spec_scalar(doc, kn);
        int rc = 0;
        if (!k) rc = spec_error(path, kn, "expected a key", NULL);
        else if (!strcmp(k, "command")) {
            json_decref(cmd);
            if (!(cmd = spec_command(path, doc, v, k))) rc = -1;
        } else if (!strcmp(k, "name")) {
            rc = spec_text(path, v, k, "expected a string", &d.name);
        } else if (!strcmp(k, "feed")) {
            rc = spec_text(path, v, k, "expected a string", &d.feed);
        } else if (!strcmp(k, "gpus")) {
            rc = spec_number(path, v, k, 1, 64, true, &num);
            d.gpus = (long)num;
        } else if (!strcmp(k, "mem_mib")) {
            rc = spec_number(path, v, k, 0, 1 << 20, false, &d.mem);
            has_mem = true;
        } else if (!strcmp(k, "model")) {
            const char *file;
            rc = spec_text(path, v, k, "expected a file name", &file);
            if (rc == 0) rc = spec_model(path, file, &model_mem);
        } else if (!strcmp(k, "after")) {
            rc = spec_number(path, v, k, 1, 1e15, true, &num);
            d.after = (long)num;
        } else if (!strcmp(k, "mps_threads_pct")) {
            rc = spec_number(path, v, k, 1, 100, true, &num);
            d.mps_threads = (long)num;
        } else {
            rc = spec_error(path, kn, "unknown key (command, name, feed, "
                            "gpus, mem_mib, model, after, mps_threads_pct)", k);
        }
        if (rc) {
            json_decref(cmd);
            return -1;
        }
    }
    if (!cmd) return spec_error(path, map, "command: missing", NULL);
    if (model_mem >= 0 && !has_mem) d.mem = model_mem;
    json_array_append_new(jobs, submit_job(cmd, &d));
    return 0;
}

static int submit_spec(const char *path, const submit_defaults *def,
                       json_t *jobs) {
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return -1;
    }
    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_file(&parser, f);
    int rc = -1;
    if (!yaml_parser_load(&parser, &doc)) {
        fprintf(stderr, "aegis submit: %s:%d: %s\n", path,
                (int)parser.problem_mark.line + 1, parser.problem);
    } else {
        yaml_node_t *root = yaml_document_get_root_node(&doc);
        yaml_node_t *list = NULL;
        if (root && root->type == YAML_MAPPING_NODE)
            for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
                 p < root->data.mapping.pairs.top; p++) {
                const char *k = spec_scalar(&doc,
                    yaml_document_get_node(&doc, p->key));
                if (k && !strcmp(k, "jobs"))
                    list = yaml_document_get_node(&doc, p->value);
            }
        if (!root) {
            fprintf(stderr, "aegis submit: %s: empty spec\n", path);
        } else if (!list) {
            rc = spec_job(path, &doc, root, def, jobs);
        } else if (list->type != YAML_SEQUENCE_NODE) {
            rc = spec_error(path, list, "expected a list of jobs", "jobs");
        } else {
            rc = 0;
            for (yaml_node_item_t *it = list->data.sequence.items.start;
                 rc == 0 && it < list->data.sequence.items.top; it++)
                rc = spec_job(path, &doc, yaml_document_get_node(&doc, *it),
                              def, jobs);
        }
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&parser);
    fclose(f);
    return rc;
}

static bool submit_is_spec(const char *arg) {
    size_t n = strlen(arg);
    return (n > 5 && !strcmp(arg + n - 5, ".yaml")) ||
           (n > 4 && !strcmp(arg + n - 4, ".yml"));
}

/* The submit request: this directory, this environment, the jobs; NULL
 * once the fault is told (it is the input's: exit 2). The request is JSON,
 * which holds UTF-8 text only: a directory that is not cannot be sent, and
 * a variable that is not is left out, saying so. */
static json_t *submit_request(json_t *jobs) {
    char cwd[4096];
    if (!getcwd(cwd, sizeof(cwd))) {
        perror("aegis submit: the current directory");
        json_decref(jobs);
        return NULL;
    }
    json_t *dir = json_string(cwd);
    if (!dir) {
        fprintf(stderr, "aegis submit: the current directory's path is "
                "not UTF-8, and aegisd's requests (JSON) carry UTF-8 text "
                "only: submit from a directory whose path is UTF-8\n");
        json_decref(jobs);
        return NULL;
    }
    json_t *env = json_array();
    for (char **e = environ; *e; e++) {
        json_t *s = json_string(*e);
        if (s && strchr(*e, '=') && **e != '=') json_array_append_new(env, s);
        else json_decref(s);
        if (!s)
            fprintf(stderr, "aegis submit: %.*s is not passed to the job: "
                    "not UTF-8 text\n", (int)strcspn(*e, "="), *e);
    }
    return json_pack("{s:s, s:o, s:o, s:o}", "op", "submit", "cwd", dir,
                     "env", env, "jobs", jobs);
}

/* Option opt's value when it is UTF-8 text; NULL after saying not. */
static const char *submit_text_option(const char *opt, const char *value) {
    json_t *s = json_string(value);
    if (!s) {
        fprintf(stderr, "aegis submit: --%s: not UTF-8 text\n", opt);
        return NULL;
    }
    json_decref(s);
    return value;
}

int cli_submit(int argc, char **argv) {
    static const struct option opts[] = {
        {"gpus", required_argument, NULL, 'g'},
        {"mem", required_argument, NULL, 'm'},
        {"model", required_argument, NULL, 'M'},
        {"name", required_argument, NULL, 'n'},
        {"feed", required_argument, NULL, 'F'},
        {"after", required_argument, NULL, 'a'},
        {"mps-threads", required_argument, NULL, 'T'},
        {"array", required_argument, NULL, 'A'},
        {"json", no_argument, NULL, 'j'},
        {"socket", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    submit_defaults def = {.gpus = 1, .mem = -1};
    double model_mem = -1;
    bool has_mem = false;
    const char *array = NULL, *socket = NULL;
    bool json = false;
    int ch;
    /* "+": options end at the command, whose own options are its own. */
    while ((ch = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (ch) {
        case 'g':
            if (cli_parse_long("submit", "gpus", optarg, 1, 64, &def.gpus))
                return CLI_USAGE;
            break;
        case 'm':
            if (cli_parse_double("submit", "mem", optarg, 0, 1 << 20, &def.mem))
                return CLI_USAGE;
            has_mem = true;
            break;
        case 'M':
            if (submit_model_mem(optarg, &model_mem) < 0) return CLI_USAGE;
            break;
        case 'n':
            if (!(def.name = submit_text_option("name", optarg)))
                return CLI_USAGE;
            break;
        case 'F':
            if (!(def.feed = submit_text_option("feed", optarg)))
                return CLI_USAGE;
            break;
        case 'a':
            if (cli_parse_long("submit", "after", optarg, 1, 0x7fffffffL,
                               &def.after))
                return CLI_USAGE;
            break;
        case 'T':
            if (cli_parse_long("submit", "mps-threads", optarg, 1, 100,
                               &def.mps_threads))
                return CLI_USAGE;
            break;
        case 'A': array = optarg; break;
        case 'j': json = true; break;
        case 's': socket = optarg; break;
        case 'h': fputs(help, stdout); return CLI_OK;
        default: fputs("Run 'aegis submit --help' for usage.\n", stderr);
                 return CLI_USAGE;
        }
    }
    if (model_mem >= 0 && !has_mem) def.mem = model_mem;
    bool dashes = optind > 1 && !strcmp(argv[optind - 1], "--");
    if ((array != NULL) == (optind < argc)) {
        fprintf(stderr, "aegis submit: give a command, a SPEC.yaml or "
                "--array FILE\nRun 'aegis submit --help' for usage.\n");
        return CLI_USAGE;
    }
    json_t *jobs = json_array();
    int rc = 0;
    if (array) {
        rc = submit_array(array, &def, jobs);
    } else if (!dashes && optind == argc - 1 && submit_is_spec(argv[optind])) {
        rc = submit_spec(argv[optind], &def, jobs);
    } else {
        json_t *cmd = json_array();
        for (int i = optind; i < argc; i++) {
            json_t *w = json_string(argv[i]);
            if (!w) {
                fprintf(stderr, "aegis submit: argument %d is not UTF-8\n",
                        i - optind + 1);
                rc = -1;
            }
            json_array_append_new(cmd, w);
        }
        json_array_append_new(jobs, submit_job(cmd, &def));
    }
    if (rc != 0) {
        json_decref(jobs);
        return CLI_USAGE;
    }
    json_t *req = submit_request(jobs);
    if (!req) return CLI_USAGE;
    json_t *ans = client_call("submit", client_socket(socket), req, &rc);
    if (!ans) return rc;
    json_t *ids = json_object_get(ans, "ids");
    if (json) {
        json_t *out = json_pack("{s:O}", "ids", ids);
        json_dumpf(out, stdout, JSON_COMPACT);
        putchar('\n');
        json_decref(out);
    } else {
        size_t i;
        json_t *id;
        json_array_foreach(ids, i, id)
            printf("%lld\n", (long long)json_integer_value(id));
    }
    json_decref(ans);
    return CLI_OK;
}
