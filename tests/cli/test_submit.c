/* test_submit.c -- cmocka tests of what `aegis submit` reads without
 * talking to aegisd: --mem amounts, --after dependencies, --array ranges,
 * shell strings, YAML specs in aegis's and AEGIS's formats (nulls,
 * comments, conda, names of the same file, time limits, models, the
 * limits on jobs, words, nodes and text reached through aliases, the
 * nesting named whatever the spec's path), and the nearest
 * catalog names that sim and gen-trace suggest.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "catalog.h"
#include "submit.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[256];

static int setup_dir(void **state) {
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/aegis-submit-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_dir(void **state) {
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *write_file(const char *name, const char *text, int mode) {
    static char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    chmod(path, (mode_t)mode);
    return path;
}

/* ---- values of options ---------------------------------------------------- */

static void test_mem_units(void **state) {
    (void)state;
    static const struct { const char *text; double mib; } good[] = {
        {"4096", 4096}, {"4g", 4096}, {"4G", 4096}, {"4GiB", 4096},
        {"4gb", 4096}, {"4000m", 4000}, {"4000MiB", 4000}, {"0.5g", 512},
        {"1t", 1048576}, {"1.5", 1.5}, {"1", 1}, {"0.0009765625g", 1},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
        double mib = -1;
        if (submit_parse_mem(good[i].text, &mib) != 0 || mib != good[i].mib)
            fail_msg("'%s': %g", good[i].text, mib);
    }
    /* under 1 MiB, underflowing to 0 too, was a job of 0 MiB */
    static const char *const bad[] = {"", "g", "4x", "4 g", "-1g", "nan",
                                      "inf", "2t", "4gg", "0x10", "0", "0g",
                                      "0.0001", "0.5", "1e-400", "0.0009g"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        double mib = -1;
        if (submit_parse_mem(bad[i], &mib) == 0)
            fail_msg("'%s' accepted as %g", bad[i], mib);
    }
}

static void expect_deps(const char *text, bool names, const char *want) {
    json_t *deps = json_array();
    char err[256] = "";
    if (submit_parse_after(text, names, deps, err, sizeof(err)) != 0)
        fail_msg("'%s': %s", text, err);
    char *got = json_dumps(deps, JSON_COMPACT | JSON_SORT_KEYS);
    if (strcmp(got, want) != 0) fail_msg("'%s': %s, not %s", text, got, want);
    free(got);
    json_decref(deps);
}

static void expect_bad_deps(const char *text, bool names, const char *want) {
    json_t *deps = json_array();
    char err[256] = "";
    if (submit_parse_after(text, names, deps, err, sizeof(err)) == 0)
        fail_msg("'%s' accepted", text);
    if (!strstr(err, want)) fail_msg("'%s': '%s' lacks '%s'", text, err, want);
    json_decref(deps);
}

static void test_after_forms(void **state) {
    (void)state;
    expect_deps("4", false, "[{\"id\":4,\"kind\":\"afterok\"}]");
    expect_deps("4,5", false, "[{\"id\":4,\"kind\":\"afterok\"},"
                              "{\"id\":5,\"kind\":\"afterok\"}]");
    expect_deps("afterok:4:5", false, "[{\"id\":4,\"kind\":\"afterok\"},"
                                      "{\"id\":5,\"kind\":\"afterok\"}]");
    expect_deps("afterany:4,afternotok:6", false,
                "[{\"id\":4,\"kind\":\"afterany\"},"
                "{\"id\":6,\"kind\":\"afternotok\"}]");
    expect_deps("prep,afterany:7:train", true,
                "[{\"kind\":\"afterok\",\"name\":\"prep\"},"
                "{\"id\":7,\"kind\":\"afterany\"},"
                "{\"kind\":\"afterany\",\"name\":\"train\"}]");
    expect_bad_deps("prep", false, "'prep' is not a job id");
    expect_bad_deps("after:4", false, "after:");
    expect_bad_deps("afterok:", false, "afterok:");
    expect_bad_deps("0", false, "'0' is not a job id (ids start at 1)");
    expect_bad_deps("99999999999999999999", false, "'99999999999999999999' is "
                    "too large for a job id (at most 15 digits)");
    expect_bad_deps("4?5", false, "4?5");
    expect_bad_deps("", false, "no job");
    expect_bad_deps("4,,5", false, "empty");
    expect_bad_deps("singleton", true, "singleton");
}

static void expect_range(const char *text, const char *want) {
    char err[256] = "";
    json_t *idx = submit_parse_range(text, err, sizeof(err));
    if (!idx) fail_msg("'%s': %s", text, err);
    char *got = json_dumps(idx, JSON_COMPACT);
    if (strcmp(got, want) != 0) fail_msg("'%s': %s, not %s", text, got, want);
    free(got);
    json_decref(idx);
}

static void test_array_ranges(void **state) {
    (void)state;
    expect_range("0-3", "[0,1,2,3]");
    expect_range("5", "[5]");
    expect_range("0-3,7", "[0,1,2,3,7]");
    expect_range("2-8:3", "[2,5,8]");
    /* each index once, rising, as Slurm's index bitmap holds them */
    expect_range("1,1", "[1]");
    expect_range("1,1,0-2", "[0,1,2]");
    expect_range("7,0-3:3", "[0,3,7]");
    /* a STEP without a range ("5:2" queued index 5) */
    static const char *const bad[] = {"", "a", "5-2", "1-", "-1", "0-3:0",
                                      "0-99999999", "1,,2", "0-3:x", "x.txt",
                                      "5:2", "1,5:2"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        char err[256] = "";
        json_t *idx = submit_parse_range(bad[i], err, sizeof(err));
        if (idx) fail_msg("'%s' accepted", bad[i]);
        if (!err[0]) fail_msg("'%s': no message", bad[i]);
    }
}

static void test_shell_words(void **state) {
    (void)state;
    assert_true(submit_is_shell("a && b"));
    assert_true(submit_is_shell("echo $HOME"));
    assert_true(submit_is_shell("python train.py --bs 32"));
    assert_true(submit_is_shell("ls *.txt"));
    assert_true(submit_is_shell("a|b"));
    assert_false(submit_is_shell("true"));
    assert_false(submit_is_shell("./train.sh"));
    assert_false(submit_is_shell("/usr/bin/python3"));
    assert_true(submit_blank(""));
    assert_true(submit_blank(" \t\n"));
    assert_false(submit_blank(" a "));
}

/* ---- specs ---------------------------------------------------------------- */

/* Reads a spec written to name; returns its jobs (NULL when refused) and
 * what it said on stderr in said. */
static json_t *read_spec(const char *name, const char *text, char *said,
                         size_t saidlen) {
    const char *path = write_file(name, text, 0644);
    char errpath[300];
    snprintf(errpath, sizeof(errpath), "%s/stderr", tmpdir);
    fflush(stderr);
    int saved = dup(2);
    FILE *err = freopen(errpath, "w", stderr);
    assert_non_null(err);
    submit_defaults def = {.gpus = 1, .mem = -1};
    json_t *jobs = json_array();
    char copy[PATH_MAX];
    snprintf(copy, sizeof(copy), "%s", path);
    int rc = submit_spec(copy, &def, jobs, NULL);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *f = fopen(errpath, "r");
    size_t n = fread(said, 1, saidlen - 1, f);
    said[n] = '\0';
    fclose(f);
    if (rc != 0) {
        json_decref(jobs);
        return NULL;
    }
    return jobs;
}

static const char aegis_example[] =
    "version: 1\n"
    "job:\n"
    "  conda_env: tf\n"
    "  command: python train.py --batch_size 32\n"
    "resources:\n"
    "  num_gpus: 1\n"
    "  gpu_memory_requirement_mib: 3352\n"
    "estimates:\n"
    "  horus_mib: 93617.0674\n"
    "  faketensor_mib: 2425.279457\n"
    "  gpumemnet_mib: 8000\n"
    "profile:\n"
    "  peak_memory_mib: 2816\n"
    "  avg_smact: 41.2\n"
    "  avg_smocc: 37.8\n"
    "  avg_drama: 12.4\n"
    "  profiling_duration_s: 200\n"
    "  source: lucid_200s_profile\n"
    "  extra_metrics: {}\n"
    "online_estimation:\n"
    "  summary_path: mobilenet_32.model\n"
    "  parser_arg_1: /raid/datasets/imagenet\n"
    "  parser_arg_2: 32\n";

/* read_spec() with a conda on PATH, its path into conda (300 bytes). */
static json_t *read_spec_conda(const char *name, const char *text,
                               char *conda, char *said, size_t saidlen) {
    snprintf(conda, 300, "%s",
             write_file("conda", "#!/bin/sh\nexit 0\n", 0755));
    char path_env[400];
    const char *old = getenv("PATH");
    char *saved = old ? strdup(old) : NULL;
    snprintf(path_env, sizeof(path_env), "%s:/usr/bin:/bin", tmpdir);
    setenv("PATH", path_env, 1);
    json_t *jobs = read_spec(name, text, said, saidlen);
    if (saved) setenv("PATH", saved, 1);
    free(saved);
    return jobs;
}

static void test_spec_aegis_example(void **state) {
    (void)state;
    char conda[300], said[2048];
    json_t *jobs = read_spec_conda("aegis.yaml", aegis_example, conda, said,
                                   sizeof(said));
    if (!jobs) fail_msg("refused: %s", said);
    assert_non_null(strstr(said, "aegis.yaml:20: online_estimation: section "
                                 "ignored"));
    assert_int_equal(json_array_size(jobs), 1);
    json_t *job = json_array_get(jobs, 0);
    assert_int_equal(json_integer_value(json_object_get(job, "gpus")), 1);
    assert_true(json_number_value(json_object_get(job, "mem_mib")) == 3352);
    json_t *cmd = json_object_get(job, "cmd");
    assert_string_equal(json_string_value(json_array_get(cmd, 0)), conda);
    assert_string_equal(json_string_value(json_array_get(cmd, 3)), "tf");
    assert_string_equal(json_string_value(json_array_get(cmd, 7)),
                        "python train.py --batch_size 32");
    json_t *meta = json_object_get(job, "meta");
    json_t *est = json_object_get(meta, "estimates");
    assert_true(json_real_value(json_object_get(est, "horus_mib")) ==
                93617.0674);
    assert_int_equal(json_integer_value(json_object_get(est, "gpumemnet_mib")),
                     8000);
    json_t *prof = json_object_get(meta, "profile");
    assert_string_equal(json_string_value(json_object_get(prof, "source")),
                        "lucid_200s_profile");
    assert_true(json_is_object(json_object_get(prof, "extra_metrics")));
    assert_null(json_object_get(meta, "online_estimation"));
    json_decref(jobs);
}

static void test_spec_aegis_variants(void **state) {
    (void)state;
    char said[2048];
    /* nulls are absent, comments ignored, quoted numbers stay text */
    json_t *jobs = read_spec("nulls.yaml",
        "# no estimates\n"
        "version: 1  # format\n"
        "job:\n"
        "  conda_env: ~\n"
        "  command: [python, train.py]\n"
        "resources:\n"
        "  num_gpus: null\n"
        "  gpu_memory_requirement_mib:\n"
        "estimates:\n"
        "  horus_mib: null\n"
        "profile:\n"
        "  source: '200'\n"
        "  lucid_class: medium\n"
        "  flags: [1, true, null]\n", said, sizeof(said));
    if (!jobs) fail_msg("refused: %s", said);
    assert_string_equal(said, "");
    json_t *job = json_array_get(jobs, 0);
    char *text = json_dumps(job, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(text,
        "{\"cmd\":[\"python\",\"train.py\"],\"gpus\":1,\"meta\":{\"profile\":"
        "{\"flags\":[1,true,null],\"lucid_class\":\"medium\",\"source\":\"200\"}},"
        "\"name\":\"nulls\"}");
    free(text);
    json_decref(jobs);
    /* refusals name the file, the line and the dotted key */
    static const struct { const char *text, *want; } bad[] = {
        {"version: 2\njob:\n  command: x\n", "f.yaml:1: version: "},
        {"version: 1\nresources:\n  num_gpus: 1\n", "f.yaml:1: job.command: missing"},
        {"version: 1\njob:\n  command: x\nresources:\n  num_gpus: 0\n",
         "f.yaml:5: resources.num_gpus: "},
        {"version: 1\njob:\n  command: x\nresources:\n"
         "  gpu_memory_requirement_mib: lots\n",
         "f.yaml:5: resources.gpu_memory_requirement_mib: "},
        {"version: 1\njob: [x]\n", "f.yaml:2: job: expected a mapping"},
        {"version: 1\njob:\n  command: x\n  conda_env: [a]\n",
         "f.yaml:4: job.conda_env: "},
        {"version: 1\njob:\n  command: x\nestimates: 3\n",
         "f.yaml:4: estimates: expected a mapping"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        jobs = read_spec("f.yaml", bad[i].text, said, sizeof(said));
        if (jobs || !strstr(said, bad[i].want))
            fail_msg("case %zu: '%s' lacks '%s'", i, said, bad[i].want);
    }
    /* an unknown key in a known section is a warning too */
    jobs = read_spec("w.yaml", "version: 1\njob:\n  command: x\n  shell: zsh\n",
                     said, sizeof(said));
    assert_non_null(jobs);
    assert_non_null(strstr(said, "w.yaml:4: job.shell: ignored"));
    json_decref(jobs);
}

static void test_spec_conda_missing(void **state) {
    (void)state;
    char said[2048];
    const char *old = getenv("PATH");
    char *saved = old ? strdup(old) : NULL;
    setenv("PATH", "/nonexistent", 1);
    json_t *jobs = read_spec("c.yaml", aegis_example, said, sizeof(said));
    if (saved) setenv("PATH", saved, 1);
    free(saved);
    assert_null(jobs);
    assert_non_null(strstr(said, "c.yaml:3: job.conda_env: "));
    assert_non_null(strstr(said, "conda"));
}

/* A conda found in a folder whose path is not UTF-8 cannot be a word of
 * the job's command (JSON): refused, naming it, where the job was left
 * with no command. */
static void test_spec_conda_not_utf8(void **state) {
    (void)state;
    char dir[300], said[2048], path_env[400];
    snprintf(dir, sizeof(dir), "%s/c\xff", tmpdir);
    assert_int_equal(mkdir(dir, 0755), 0);
    write_file("c\xff/conda", "#!/bin/sh\nexit 0\n", 0755);
    const char *old = getenv("PATH");
    char *saved = old ? strdup(old) : NULL;
    snprintf(path_env, sizeof(path_env), "%s:/usr/bin:/bin", dir);
    setenv("PATH", path_env, 1);
    json_t *jobs = read_spec("c.yaml", aegis_example, said, sizeof(said));
    if (saved) setenv("PATH", saved, 1);
    free(saved);
    if (jobs) fail_msg("taken: %s", json_dumps(jobs, JSON_COMPACT));
    if (!strstr(said, "c.yaml:3: job.conda_env: conda's path '") ||
        !strstr(said, "/c?/conda' is not UTF-8 text"))
        fail_msg("said: %s", said);
}

static void test_spec_names(void **state) {
    (void)state;
    char said[2048];
    json_t *jobs = read_spec("n.yaml",
        "jobs:\n"
        "  - name: prep\n    command: a\n"
        "  - name: train\n    command: b\n    after: prep\n"
        "  - command: c\n    after: [afterany:train, 12, afternotok:prep]\n",
        said, sizeof(said));
    if (!jobs) fail_msg("refused: %s", said);
    char *text = json_dumps(json_object_get(json_array_get(jobs, 2), "after"),
                            JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(text, "[{\"index\":1,\"kind\":\"afterany\"},"
                              "{\"id\":12,\"kind\":\"afterok\"},"
                              "{\"index\":0,\"kind\":\"afternotok\"}]");
    free(text);
    text = json_dumps(json_object_get(json_array_get(jobs, 1), "after"),
                      JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(text, "[{\"index\":0,\"kind\":\"afterok\"}]");
    free(text);
    json_decref(jobs);
    static const struct { const char *text, *want; } bad[] = {
        {"jobs:\n  - command: a\n    after: b\n  - name: b\n    command: b\n",
         "f.yaml:3: after: 'b' comes later in the file"},
        {"jobs:\n  - name: a\n    command: a\n    after: a\n",
         "f.yaml:4: after: 'a' is this job"},
        {"jobs:\n  - command: a\n    after: nobody\n",
         "f.yaml:3: after: no job named 'nobody'"},
        {"jobs:\n  - name: a\n    command: a\n  - name: a\n    command: a\n"
         "  - command: c\n    after: a\n",
         "f.yaml:7: after: 2 jobs are named 'a'"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        jobs = read_spec("f.yaml", bad[i].text, said, sizeof(said));
        if (jobs || !strstr(said, bad[i].want))
            fail_msg("case %zu: '%s' lacks '%s'", i, said, bad[i].want);
    }
}

/* An AEGIS spec's job is named by its file's stem, whatever its bytes:
 * each byte that is not UTF-8, and each control aegisd refuses in a name,
 * as '?' (a stem that was not UTF-8 left the job without a name). */
static void test_spec_stem_not_utf8(void **state) {
    (void)state;
    char said[2048];
    json_t *jobs = read_spec("tr\xff\x1b.yaml",
                             "version: 1\njob:\n  command: [python, t.py]\n",
                             said, sizeof(said));
    if (!jobs) fail_msg("refused: %s", said);
    const char *name = json_string_value(
        json_object_get(json_array_get(jobs, 0), "name"));
    if (!name) fail_msg("no name");
    assert_string_equal(name, "tr??");
    json_decref(jobs);
}

/* A spec's model: a file that cannot be read is refused naming the
 * spec's line and key, as every other fault of a spec is. */
static void test_spec_model_unreadable(void **state) {
    (void)state;
    char said[1024];
    assert_null(read_spec("m.yaml", "command: x\nmodel: nofile\n", said,
                          sizeof(said)));
    assert_non_null(strstr(said, "m.yaml:2: model: "));
}

/* head, item n times, then tail: a large spec, malloc'd. */
static char *repeated(const char *head, const char *item, size_t n,
                      const char *tail) {
    size_t hlen = strlen(head), ilen = strlen(item);
    char *text = malloc(hlen + ilen * n + strlen(tail) + 1);
    assert_non_null(text);
    memcpy(text, head, hlen);
    for (size_t i = 0; i < n; i++) memcpy(text + hlen + i * ilen, item, ilen);
    strcpy(text + hlen + ilen * n, tail);
    return text;
}

/* Reads text (taken) as the file name: the number of its jobs, or 0 when
 * it is refused saying want. */
static size_t spec_jobs_at(const char *name, char *text, const char *want) {
    static char said[PATH_MAX + 1024];
    json_t *jobs = read_spec(name, text, said, sizeof(said));
    free(text);
    size_t n = json_array_size(jobs);
    json_decref(jobs);
    if (!want[0] && !jobs) fail_msg("refused: %s", said);
    if (want[0] && jobs) fail_msg("accepted, not refused with '%s'", want);
    if (want[0] && !strstr(said, want))
        fail_msg("'%s' lacks '%s'", said, want);
    return n;
}

/* spec_jobs_at() of f.yaml. */
static size_t spec_jobs(char *text, const char *want) {
    return spec_jobs_at("f.yaml", text, want);
}

/* aegisd's limits on jobs in a submit and words in a command, checked as
 * the spec is read (each job here an alias of the first). */
static void test_spec_proto_limits(void **state) {
    (void)state;
    assert_int_equal(spec_jobs(repeated("jobs:\n  - &j {command: x}\n",
                                        "  - *j\n", 99999, ""), ""),
                     100000);
    spec_jobs(repeated("jobs:\n  - &j {command: x}\n", "  - *j\n", 100000,
                       ""), "f.yaml:2: jobs: more than 100000 jobs");
    assert_int_equal(spec_jobs(repeated("command: [a", ", a", 4095, "]\n"),
                               ""), 1);
    spec_jobs(repeated("command: [a", ", a", 4096, "]\n"),
              "f.yaml:1: command: more than 4096 words");
}

/* conda's 5 words count against aegisd's limit on a command's words:
 * a command within it alone went to aegisd over it, refused there without
 * the spec's line. */
static void test_spec_conda_words(void **state) {
    (void)state;
    char conda[300], said[2048];
    char *text = repeated("version: 1\njob:\n  conda_env: tf\n  command: [a",
                          ", a", 4090, "]\n");
    json_t *jobs = read_spec_conda("c.yaml", text, conda, said, sizeof(said));
    if (!jobs) fail_msg("refused: %s", said);
    assert_int_equal(json_array_size(json_object_get(json_array_get(jobs, 0),
                                                     "cmd")), 4096);
    json_decref(jobs);
    free(text);
    text = repeated("version: 1\njob:\n  conda_env: tf\n  command: [a", ", a",
                    4091, "]\n");
    assert_null(read_spec_conda("c.yaml", text, conda, said, sizeof(said)));
    if (!strstr(said, "c.yaml:3: job.conda_env: the command in conda is 4097 "
                      "words"))
        fail_msg("said: %s", said);
    free(text);
}

/* The spec's node budget, which counts an alias's nodes each time they
 * are reached: aliases made 30 KB of YAML a request of 36 million words
 * (over 2 GiB). Here 1,500 jobs of 1,000 words, each job but the first an
 * alias of it, within aegisd's limits, are refused when the budget runs
 * out (in about 100 MB). */
static void test_spec_alias_budget(void **state) {
    (void)state;
    char *job = repeated("jobs:\n  - &j {command: [a", ", a", 999, "]}\n");
    spec_jobs(repeated(job, "  - *j\n", 1499, ""),
              "f.yaml:2: command: the spec expands to more than 1000000 "
              "nodes");
    free(job);
}

/* The text of scalars, counted through aliases like nodes: a word of
 * 64 KiB repeated by 256 aliases (16 MiB, the budget, with its anchor) is
 * read; one more alias is refused (2,000 aliases of 200 KB made a request
 * of 400 MB). */
static void test_spec_alias_bytes(void **state) {
    (void)state;
    char *word = repeated("command: [&w ", "a", 64 * 1024, "");
    assert_int_equal(spec_jobs(repeated(word, ", *w", 255, "]\n"), ""), 1);
    spec_jobs(repeated(word, ", *w", 256, "]\n"),
              "f.yaml:1: command: the spec's text expands to more than "
              "16777216 bytes");
    free(word);
}

/* A spec too deeply nested is refused naming its line, however long its
 * path (the message was cut at 512 bytes). */
static void test_spec_nesting_long_path(void **state) {
    (void)state;
    char *name = repeated("", "./", 300, "deep.yaml");
    char *text = repeated("", "[", 65, "");
    spec_jobs_at(name, text, "deep.yaml:1: lists and mappings nested more "
                 "than 64 deep");
    free(name);
}

/* A spec's memory is at least 1 MiB, as --gpu-mem's: 0 and what
 * underflows to it were a job of 0 MiB. */
static void test_spec_mem_min(void **state) {
    (void)state;
    static const struct { const char *text, *want; } bad[] = {
        {"command: a\nmem_mib: 0\n",
         "f.yaml:2: mem_mib: '0' is not a number in [1, 1048576]"},
        {"command: a\nmem_mib: 1e-400\n", "f.yaml:2: mem_mib: '1e-400'"},
        {"command: a\nmem: 0.0001\n",
         "f.yaml:2: mem: expected an amount of memory from 1 MiB to 1 TiB"},
        {"command: a\nhost_mem: 0.5m\n", "f.yaml:2: host_mem: expected an"},
        {"version: 1\njob:\n  command: a\nresources:\n"
         "  gpu_memory_requirement_mib: 0\n",
         "f.yaml:5: resources.gpu_memory_requirement_mib: '0' is not a number "
         "in [1, 1048576]"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        spec_jobs(strdup(bad[i].text), bad[i].want);
    assert_int_equal(spec_jobs(strdup("command: a\nmem_mib: 1\n"), ""), 1);
}

/* An empty command is refused where it is written: "" and "  " were
 * queued (a shell that runs nothing), [] said only what a command is,
 * and ["", x] went to aegisd, refused there without the line. */
static void test_spec_empty_command(void **state) {
    (void)state;
    static const struct { const char *text, *want; } bad[] = {
        {"command: \"\"\n", "f.yaml:1: command: an empty command"},
        {"command: \"  \\t\"\n", "f.yaml:1: command: an empty command"},
        {"command: []\n", "f.yaml:1: command: an empty command"},
        {"command: [\"\", x]\n",
         "f.yaml:1: command: the first word, the program, is empty"},
        {"jobs:\n  - command: a\n  - command: ' '\n",
         "f.yaml:3: command: an empty command"},
        {"version: 1\njob:\n  command: ''\n",
         "f.yaml:3: job.command: an empty command"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        spec_jobs(strdup(bad[i].text), bad[i].want);
    /* an empty word after the program is the program's to take */
    assert_int_equal(spec_jobs(strdup("command: [echo, \"\"]\n"), ""), 1);
}

/* A spec that starts with a UTF-8 byte order mark (Notepad's) is read
 * as without it: libyaml skips it, as YAML says. */
static void test_spec_bom(void **state) {
    (void)state;
    char said[512];
    json_t *jobs = read_spec("bom.yaml", "\xef\xbb\xbf" "command: [echo, one]\r\n"
                             "gpus: 2\r\n", said, sizeof(said));
    if (!jobs) fail_msg("refused: %s", said);
    json_t *job = json_array_get(jobs, 0);
    assert_string_equal(json_string_value(json_array_get(
                            json_object_get(job, "cmd"), 0)), "echo");
    assert_int_equal(json_integer_value(json_object_get(job, "gpus")), 2);
    json_decref(jobs);
    jobs = read_spec("bom.yaml", "\xef\xbb\xbf" "version: 1\njob:\n  command: x\n",
                     said, sizeof(said));
    if (!jobs) fail_msg("refused: %s", said);
    json_decref(jobs);
}

/* Beside jobs:, a key belongs to no job: it was ignored without a word. */
static void test_spec_jobs_alone(void **state) {
    (void)state;
    static const char *const keys[] = {"command: x", "name: a", "gpus: 2",
                                       "bogus: 1"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++) {
        char text[128], want[64];
        snprintf(text, sizeof(text), "jobs:\n  - command: a\n%s\n", keys[i]);
        snprintf(want, sizeof(want), "f.yaml:3: %.*s: beside jobs:, a key "
                 "applies to no job", (int)strcspn(keys[i], ":"), keys[i]);
        spec_jobs(strdup(text), want);
    }
    spec_jobs(strdup("gpus: 2\njobs: [{command: a}]\n"),
              "f.yaml:1: gpus: beside jobs:");
}

/* mem and mem_mib in one job: the later silently won. */
static void test_spec_mem_twice(void **state) {
    (void)state;
    spec_jobs(strdup("command: a\nmem: 2g\nmem_mib: 1000\n"),
              "f.yaml:3: mem_mib: mem is given too (line 2): give one of mem "
              "and mem_mib");
    spec_jobs(strdup("jobs:\n  - command: a\n    mem_mib: 1000\n"
                     "    mem: 2g\n"),
              "f.yaml:4: mem: mem_mib is given too (line 3)");
    /* a null one is not given */
    assert_int_equal(spec_jobs(strdup("command: a\nmem: ~\nmem_mib: 10\n"),
                               ""), 1);
}

/* A spec's numbers are what the options take: a whole one digits only
 * (nice: 1e3 was taken where --nice 1e3 is refused, gpus: 0x1 and a
 * quoted "1" too). */
static void test_spec_numbers_plain(void **state) {
    (void)state;
    static const struct { const char *text, *want; } bad[] = {
        {"command: a\nnice: 1e3\n",
         "f.yaml:2: nice: '1e3' is not a whole number in [0, 10000]"},
        {"command: a\ngpus: \"1\"\n", "f.yaml:2: gpus: '1' is quoted"},
        {"command: a\ngpus: '2'\n", "f.yaml:2: gpus: '2' is quoted"},
        {"command: a\ngpus: 0x1\n", "f.yaml:2: gpus: '0x1' is not a whole"},
        {"command: a\ngpus: +1\n", "f.yaml:2: gpus: '+1' is not a whole"},
        {"command: a\ngpus: 1.0\n", "f.yaml:2: gpus: '1.0' is not a whole"},
        {"command: a\ncpus: 2.\n", "f.yaml:2: cpus: '2.' is not a whole"},
        {"command: a\nmps_threads_pct: 5e1\n", "f.yaml:2: mps_threads_pct: "},
        {"command: a\nmem_mib: 0x400\n", "f.yaml:2: mem_mib: '0x400' is not"},
        {"command: a\nmem_mib: \"1000\"\n", "f.yaml:2: mem_mib: '1000' is "
         "quoted"},
        {"command: a\nmem_mib: .inf\n", "f.yaml:2: mem_mib: '.inf' is not"},
        {"version: 1\njob:\n  command: a\nresources:\n  num_gpus: 0x2\n",
         "f.yaml:5: resources.num_gpus: '0x2' is not a whole number in [1, 64]"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        spec_jobs(strdup(bad[i].text), bad[i].want);
    char said[512];
    json_t *jobs = read_spec("ok.yaml", "command: a\ngpus: 2\nnice: 10000\n"
                             "mem_mib: 1.5e3\ncpus: 4\nmps_threads_pct: 50\n",
                             said, sizeof(said));
    if (!jobs) fail_msg("refused: %s", said);
    json_t *job = json_array_get(jobs, 0);
    assert_int_equal(json_integer_value(json_object_get(job, "gpus")), 2);
    assert_int_equal(json_integer_value(json_object_get(job, "nice")), 10000);
    assert_true(json_number_value(json_object_get(job, "mem_mib")) == 1500);
    json_decref(jobs);
}

/* ---- nearest workload names ------------------------------------------------ */

/* A spec's time: takes --time's forms, and none other. */
static void test_spec_time(void **state) {
    (void)state;
    char said[512];
    json_t *jobs = read_spec("t.yaml", "jobs:\n"
                             "  - command: a\n    time: 10:00\n"
                             "  - command: b\n    time: 2h   # Slurm's 2:00:00\n"
                             "  - command: c\n    time: ~\n",
                             said, sizeof(said));
    assert_non_null(jobs);
    json_t *limit = json_object_get(json_array_get(jobs, 0), "time_limit_s");
    assert_true(json_number_value(limit) == 600);
    limit = json_object_get(json_array_get(jobs, 1), "time_limit_s");
    assert_true(json_number_value(limit) == 7200);
    assert_null(json_object_get(json_array_get(jobs, 2), "time_limit_s"));
    json_decref(jobs);
    assert_null(read_spec("bad.yaml", "command: a\ntime: 1:75\n", said,
                          sizeof(said)));
    assert_non_null(strstr(said, ":2: time: expected a time limit"));
}

/* A spec's notify: a shell command, kept as it is; "" for none. */
static void test_spec_notify(void **state) {
    (void)state;
    char said[512];
    json_t *jobs = read_spec("n.yaml", "jobs:\n"
                             "  - command: a\n    notify: echo \"$AEGIS_JOB_ID\"\n"
                             "  - command: b\n    notify: ''\n"
                             "  - command: c\n",
                             said, sizeof(said));
    assert_non_null(jobs);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(jobs, 0), "notify")),
                        "echo \"$AEGIS_JOB_ID\"");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(jobs, 1), "notify")), "");
    assert_null(json_object_get(json_array_get(jobs, 2), "notify"));
    json_decref(jobs);
    assert_null(read_spec("bad.yaml", "command: a\nnotify: [x]\n", said,
                          sizeof(said)));
    assert_non_null(strstr(said, ":2: notify: expected a shell command"));
}

/* feed_producer: a boolean, and only beside a feed. */
static void test_spec_feed_producer(void **state) {
    (void)state;
    char said[512];
    json_t *jobs = read_spec("f.yaml", "jobs:\n"
                             "  - command: produce\n    feed: imagenet\n"
                             "    feed_producer: true\n"
                             "  - command: train\n    feed: imagenet\n",
                             said, sizeof(said));
    assert_non_null(jobs);
    assert_true(json_is_true(json_object_get(json_array_get(jobs, 0),
                                             "feed_producer")));
    assert_null(json_object_get(json_array_get(jobs, 1), "feed_producer"));
    json_decref(jobs);
    assert_null(read_spec("f.yaml", "command: a\nfeed_producer: true\n", said,
                          sizeof(said)));
    assert_non_null(strstr(said, ":1: feed_producer: true needs a feed"));
    assert_null(read_spec("f.yaml", "command: a\nfeed: x\nfeed_producer: "
                          "yes please\n", said, sizeof(said)));
    assert_non_null(strstr(said, ":3: feed_producer: expected true or false"));
}

static void test_nearest_names(void **state) {
    (void)state;
    const char *path = write_file("cat.csv",
        "name,num_gpus,solo_duration_s,peak_memory_mib\n"
        "bert_base_bs32,1,100,1000\n"
        "bert_base_bs64,1,100,1000\n"
        "resnet50_bs32,1,100,1000\n", 0644);
    char err[512], out[512];
    cat_catalog *cat = cat_load(path, err, sizeof(err));
    if (!cat) fail_msg("%s", err);
    cat_suggest(cat, "bert_base_bs3", 13, out, sizeof(out));
    assert_string_equal(out, "; did you mean bert_base_bs32 or bert_base_bs64?");
    cat_suggest(cat, "resnet50", 8, out, sizeof(out));
    assert_string_equal(out, "; did you mean resnet50_bs32?");
    cat_suggest(cat, "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", 30, out, sizeof(out));
    assert_string_equal(out, "");
    cat_free(cat);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mem_units),
        cmocka_unit_test(test_after_forms),
        cmocka_unit_test(test_array_ranges),
        cmocka_unit_test(test_shell_words),
        cmocka_unit_test(test_spec_aegis_example),
        cmocka_unit_test(test_spec_aegis_variants),
        cmocka_unit_test(test_spec_conda_missing),
        cmocka_unit_test(test_spec_conda_not_utf8),
        cmocka_unit_test(test_spec_names),
        cmocka_unit_test(test_spec_time),
        cmocka_unit_test(test_spec_notify),
        cmocka_unit_test(test_spec_feed_producer),
        cmocka_unit_test(test_spec_mem_min),
        cmocka_unit_test(test_spec_empty_command),
        cmocka_unit_test(test_spec_bom),
        cmocka_unit_test(test_spec_jobs_alone),
        cmocka_unit_test(test_spec_mem_twice),
        cmocka_unit_test(test_spec_numbers_plain),
        cmocka_unit_test(test_spec_model_unreadable),
        cmocka_unit_test(test_spec_stem_not_utf8),
        cmocka_unit_test(test_spec_proto_limits),
        cmocka_unit_test(test_spec_conda_words),
        cmocka_unit_test(test_spec_alias_budget),
        cmocka_unit_test(test_spec_alias_bytes),
        cmocka_unit_test(test_spec_nesting_long_path),
        cmocka_unit_test(test_nearest_names),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
