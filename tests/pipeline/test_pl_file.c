/* test_pl_file.c -- a pipeline file's errors name the file, the line and
 * the key (pl_file.h, pl_yaml.h); what it reads from a good one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>

#include "pl_file.h"

static const char good[] =
    "pipeline:\n"
    "  name: tiny\n"
    "  maximum_triggers: 3\n"
    "data:\n"
    "  dataset_id: tiny_dataset\n"
    "trigger:\n"
    "  id: DataAmountTrigger\n"
    "  num_samples: 2\n"
    "selection_strategy:\n"
    "  name: NewDataStrategy\n"
    "  tail_triggers: 0\n"
    "training:\n"
    "  command: python3 train.py\n"
    "  epochs_per_trigger: 2\n"
    "  batch_size: 4\n"
    "  use_previous_model: true\n"
    "  mem: 2g\n"
    "model_storage:\n"
    "  keep_last: 2\n";

/* Writes text to a temporary file, loads it: the rc, err holding why. */
static int load(const char *text, pl_file *cfg, char *err, size_t errlen,
                char *path) {
    strcpy(path, "/tmp/aegis-plfile-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    int rc = pl_file_load(path, false, cfg, err, errlen);
    unlink(path);
    return rc;
}

/* text fails to load with "PATH:LINE: want...". */
static void expect_error(const char *text, int line, const char *want) {
    pl_file cfg;
    char err[2048], path[64], head[128];
    assert_int_equal(load(text, &cfg, err, sizeof(err), path), -1);
    snprintf(head, sizeof(head), "%s:%d: ", path, line);
    if (strncmp(err, head, strlen(head)) != 0 || !strstr(err, want))
        fail_msg("got '%s', want '%s%s'", err, head, want);
}

/* good with its line `from` replaced by `to` (the first match). */
static char *edit(const char *from, const char *to) {
    static char out[4096];
    const char *at = strstr(good, from);
    assert_non_null(at);
    snprintf(out, sizeof(out), "%.*s%s%s", (int)(at - good), good, to,
             at + strlen(from));
    return out;
}

static void test_good(void **state) {
    (void)state;
    pl_file cfg;
    char err[1024], path[64];
    assert_int_equal(load(good, &cfg, err, sizeof(err), path), 0);
    assert_string_equal(cfg.name, "tiny");
    assert_string_equal(cfg.dataset, "tiny_dataset");
    assert_int_equal(cfg.max_triggers, 3);
    assert_int_equal(cfg.epochs, 2);
    assert_int_equal(cfg.batch_size, 4);
    assert_true(cfg.use_previous_model);
    assert_false(cfg.coalesce);
    assert_int_equal(cfg.gpus, 1);
    assert_true(cfg.mem_mib == 2048);
    assert_int_equal(cfg.keep_models, 2);
    assert_string_equal(json_string_value(json_array_get(cfg.command, 2)),
                        "python3 train.py");
    assert_int_equal(json_integer_value(json_object_get(cfg.trigger,
                                                        "num_samples")), 2);
    assert_int_equal(pl_yaml_line(&cfg.doc, "trigger.num_samples"), 8);
    pl_file_free(&cfg);
}

static void test_unknown_key(void **state) {
    (void)state;
    expect_error(edit("  batch_size: 4\n", "  batch_sise: 4\n"), 15,
                 "training.batch_sise: unknown key");
    expect_error(edit("data:\n", "datta:\n"), 4, "datta: unknown key");
}

static void test_bad_values(void **state) {
    (void)state;
    expect_error(edit("  epochs_per_trigger: 2\n",
                      "  epochs_per_trigger: two\n"), 14,
                 "training.epochs_per_trigger: expected a whole number");
    expect_error(edit("  epochs_per_trigger: 2\n",
                      "  epochs_per_trigger: 0\n"), 14,
                 "training.epochs_per_trigger: expected 1 to");
    expect_error(edit("  mem: 2g\n", "  mem: 2 gallons\n"), 17,
                 "training.mem: expected an amount of memory");
    expect_error(edit("  use_previous_model: true\n",
                      "  use_previous_model: 1\n"), 16,
                 "training.use_previous_model: expected true or false");
    expect_error(edit("  name: tiny\n", "  name: ../etc\n"), 2,
                 "pipeline.name: expected 1 to 40 letters");
    expect_error(edit("  command: python3 train.py\n", "  command: [1, 2]\n"),
                 13, "training.command[0]: expected a word");
    expect_error(edit("  command: python3 train.py\n", "  command: \" \"\n"),
                 13, "training.command: expected a command");
    /* under 1 MiB, as aegisd refuses it */
    const char *mems[] = {"-5", "0", "1e300", "0g", "0.5", "0.0001g"};
    for (size_t i = 0; i < sizeof(mems) / sizeof(*mems); i++) {
        char line[32];
        snprintf(line, sizeof(line), "  mem: %s\n", mems[i]);
        expect_error(edit("  mem: 2g\n", line), 17,
                     "training.mem: expected an amount of memory");
    }
}

/* A NUL byte in the text ("\0" in double quotes) is refused by key: the
 * text is read as a C string, and `command: "python3 \0 train.py"` ran
 * `python3 ` with check and start saying nothing. */
static void test_nul_byte(void **state) {
    (void)state;
    expect_error(edit("  command: python3 train.py\n",
                      "  command: \"python3 \\0 train.py\"\n"), 13,
                 "training.command: holds a NUL byte");
    expect_error(edit("  command: python3 train.py\n",
                      "  command: [python3, \"a\\0b\"]\n"), 13,
                 "training.command[1]: holds a NUL byte");
    expect_error(edit("  name: tiny\n", "  name: \"tiny\\0x\"\n"), 2,
                 "pipeline.name: holds a NUL byte");
    expect_error(edit("  keep_last: 2\n", "  \"keep_last\\0x\": 2\n"), 19,
                 "model_storage: a key holds a NUL byte");
}

static void test_missing(void **state) {
    (void)state;
    expect_error(edit("  command: python3 train.py\n", ""), 12,
                 "training: missing key command");
    expect_error(edit("  dataset_id: tiny_dataset\n", ""), 4,
                 "data: missing key dataset_id");
    expect_error("pipeline:\n  name: x\n", 1, "data: missing section");
}

static void test_yaml_syntax(void **state) {
    (void)state;
    expect_error(edit("  num_samples: 2\n", "  num_samples: [2\n"), 9, "");
    expect_error(edit("  num_samples: 2\n", "  num_samples: 2\n  id: X\n"), 9,
                 "trigger.id: given twice");
    expect_error("- a\n- b\n", 1, "expected a mapping of sections");
    char two[4096];
    snprintf(two, sizeof(two), "%s---\ngarbage: 1\n", good);
    expect_error(two, 21, "a second YAML document");
    snprintf(two, sizeof(two), "%s---\ngarbage: [\n", good);
    expect_error(two, 22, "");
    /* refused at the first level too deep, not after loading the whole
     * document, which took 77 s for this 100 KB */
    enum { DEEP = 100000 };
    char *deep = malloc(DEEP + 8);
    assert_non_null(deep);
    memcpy(deep, "a: ", 3);
    memset(deep + 3, '[', DEEP);
    deep[DEEP + 3] = '\0';
    expect_error(deep, 1, "lists and mappings nested more than 33 deep");
    free(deep);
}

/* A constructor's "trigger.KEY: ..." gets KEY's line; an unknown path its
 * section's. */
static void test_locate(void **state) {
    (void)state;
    pl_file cfg;
    char err[1024], path[64], out[2048], want[256];
    assert_int_equal(load(good, &cfg, err, sizeof(err), path), 0);
    pl_yaml_locate(&cfg.doc, "trigger.num_samples: must be positive", out,
                   sizeof(out));
    snprintf(want, sizeof(want), "%s:8: trigger.num_samples: must be "
             "positive", path);
    assert_string_equal(out, want);
    pl_yaml_locate(&cfg.doc, "selection_strategy.presampling.ratio: bad",
                   out, sizeof(out));
    snprintf(want, sizeof(want), "%s:9: selection_strategy.presampling."
             "ratio: bad", path);
    assert_string_equal(out, want);
    pl_file_free(&cfg);
}

/* Modyn's keys that aegis leaves to the training command are ignored,
 * not errors: a Modyn file loads. */
static void test_modyn_keys(void **state) {
    (void)state;
    pl_file cfg;
    char err[1024], path[64];
    const char *text = edit("  batch_size: 4\n",
                            "  batch_size: 4\n  device: cuda:0\n"
                            "  optimizers: [{name: default}]\n");
    assert_int_equal(load(text, &cfg, err, sizeof(err), path), 0);
    assert_null(json_object_get(json_object_get(cfg.doc.root, "training"),
                                "device"));
    pl_file_free(&cfg);
}

/* load with warn, stderr into warned: the rc. */
static int load_warned(const char *text, pl_file *cfg, char *path,
                       char *warned, size_t size) {
    char err[1024], log[] = "/tmp/aegis-plwarn-XXXXXX";
    int fd = mkstemp(log), saved = dup(2);
    assert_true(fd >= 0 && saved >= 0);
    strcpy(path, "/tmp/aegis-plfile-XXXXXX");
    int in = mkstemp(path);
    assert_int_equal(write(in, text, strlen(text)), (ssize_t)strlen(text));
    close(in);
    fflush(stderr);
    dup2(fd, 2);
    int rc = pl_file_load(path, true, cfg, err, sizeof(err));
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fd, warned, size - 1, 0);
    warned[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(log);
    unlink(path);
    return rc;
}

/* Modyn's keys inside the trigger and selection sections that change
 * nothing aegis does are said with their line and dropped (they were
 * unknown keys): a drift metric's device, also in an ensemble,
 * selection_strategy.processor_type, training's GPU measurements. */
static void test_modyn_nested(void **state) {
    (void)state;
    static char text[4096];
    pl_file cfg;
    char path[64], warned[4096], want[256];
    snprintf(text, sizeof(text), "%s",
             edit("  id: DataAmountTrigger\n  num_samples: 2\n",
                  "  id: EnsembleTrigger\n  subtriggers:\n    d:\n"
                  "      id: DataDriftTrigger\n      metrics:\n"
                  "        mmd: {id: AlibiDetectMmdDriftMetric, device: "
                  "gpu}\n  metrics:\n    ks: {id: x, device: cuda:0}\n"));
    const char *full = strstr(text, "  tail_triggers: 0\n");
    assert_non_null(full);
    const char *mem = strstr(text, "  mem: 2g\n") + strlen("  mem: 2g\n");
    static char both[4096];
    snprintf(both, sizeof(both), "%.*s  processor_type: basic\n%.*s"
             "  enable_accurate_gpu_measurements: true\n%s",
             (int)(full - text), text, (int)(mem - full), full, mem);
    assert_int_equal(load_warned(both, &cfg, path, warned, sizeof(warned)),
                     0);
    json_t *sub = json_object_get(json_object_get(cfg.trigger,
                                                  "subtriggers"), "d");
    assert_null(json_object_get(json_object_get(json_object_get(sub,
                                "metrics"), "mmd"), "device"));
    assert_null(json_object_get(cfg.selection, "processor_type"));
    const char *lines[][2] = {
        {"12", "trigger.subtriggers.d.metrics.mmd.device"},
        {"14", "trigger.metrics.ks.device"},
        {"17", "selection_strategy.processor_type"},
        {"25", "training.enable_accurate_gpu_measurements"}};
    for (size_t i = 0; i < 4; i++) {
        snprintf(want, sizeof(want), "%s:%s: %s: Modyn's key, not aegis's: "
                 "ignored", path, lines[i][0], lines[i][1]);
        if (!strstr(warned, want))
            fail_msg("want '%s' in:\n%s", want, warned);
    }
    pl_file_free(&cfg);
}

/* A YAML merge key is named as such (it was "name: missing" from the
 * selector, the merged mapping kept under a key "<<"). */
static void test_merge_key(void **state) {
    (void)state;
    expect_error(edit("  name: NewDataStrategy\n",
                      "  <<: {name: NewDataStrategy}\n"), 10,
                 "selection_strategy.<<: YAML merge keys are not supported");
}

/* Modyn's config.py rule for batch-then-sample downsampling: the batch
 * kept must divide training.batch_size (64 * 30 / 100 = 19 does not). */
static void test_bts_ratio(void **state) {
    (void)state;
    pl_file cfg;
    char err[1024], path[64];
    static char text[4096];
    const char *coreset = "  name: CoresetStrategy\n"
                          "  downsampling_config: {strategy: Loss, ";
    snprintf(text, sizeof(text), "%s", edit("  batch_size: 4\n",
                                            "  batch_size: 64\n"));
    char *at = strstr(text, "  name: NewDataStrategy\n");
    static char out[4096];
    /* the last: 30 of 100 again, scaled by 2^55 so that ratio * batch_size
     * is past a long (it overflowed) */
    const char *ratios[] = {"ratio: 30}\n", "ratio: 25}\n",
                            "ratio: 30, sample_then_batch: true}\n",
                            "ratio: 1}\n",
                            "ratio: 1080863910568919040, "
                            "ratio_max: 3602879701896396800}\n"};
    for (size_t i = 0; i < 5; i++) {
        snprintf(out, sizeof(out), "%.*s%s%s%s", (int)(at - text), text,
                 coreset, ratios[i], at + strlen("  name: NewDataStrategy\n"));
        int rc = load(out, &cfg, err, sizeof(err), path);
        if (i == 0 || i == 4) {
            assert_int_equal(rc, -1);
            assert_non_null(strstr(err, ":11: selection_strategy."
                                   "downsampling_config.ratio: "));
            assert_non_null(strstr(err, "keeps 19 of a batch of 64"));
        } else {
            if (rc != 0) fail_msg("%s: %s", ratios[i], err);
            pl_file_free(&cfg);
        }
    }
}

/* The embedding section: its command and resources, or errors naming
 * its keys' lines; absent, no command. */
static void test_embedding(void **state) {
    (void)state;
    pl_file cfg;
    char err[1024], path[64];
    assert_int_equal(load(good, &cfg, err, sizeof(err), path), 0);
    assert_null(cfg.embedding.command);
    pl_file_free(&cfg);
    const char *with = edit("model_storage:\n", "embedding:\n"
                            "  command: [python3, embed.py]\n  mem: 1g\n"
                            "model_storage:\n");
    assert_int_equal(load(with, &cfg, err, sizeof(err), path), 0);
    assert_string_equal(json_string_value(json_array_get(
                            cfg.embedding.command, 1)), "embed.py");
    assert_int_equal(cfg.embedding.gpus, 1);
    assert_true(cfg.embedding.mem_mib == 1024);
    pl_file_free(&cfg);
    expect_error(edit("model_storage:\n", "embedding:\n  gpus: 2\n"
                      "model_storage:\n"), 18,
                 "embedding: missing key command");
    expect_error(edit("model_storage:\n", "embedding:\n  command: x\n"
                      "  gpus: 0\nmodel_storage:\n"), 20,
                 "embedding.gpus: expected 1 to 8");
    expect_error(edit("model_storage:\n", "embedding:\n  command: x\n"
                      "  mem: lots\nmodel_storage:\n"), 20,
                 "embedding.mem: expected an amount of memory");
    expect_error(edit("model_storage:\n", "embedding:\n  command: x\n"
                      "  model: m\nmodel_storage:\n"), 20,
                 "embedding.model: unknown key");
}

/* good with line `from` replaced by `head`, n copies of `item` and
 * `tail` (malloc'd). */
static char *edit_repeated(const char *from, const char *head,
                           const char *item, size_t n, const char *tail) {
    const char *at = strstr(good, from);
    assert_non_null(at);
    const char *rest = at + strlen(from);
    size_t before = (size_t)(at - good), hlen = strlen(head);
    size_t ilen = strlen(item), tlen = strlen(tail);
    char *out = malloc(before + hlen + ilen * n + tlen + strlen(rest) + 1);
    assert_non_null(out);
    char *end = out + before + hlen + ilen * n;
    memcpy(out, good, before);
    memcpy(out + before, head, hlen);
    for (size_t i = 0; i < n; i++)
        memcpy(out + before + hlen + i * ilen, item, ilen);
    memcpy(end, tail, tlen);
    strcpy(end + tlen, rest);
    return out;
}

/* pipeline.version (any value) as a list of an anchored 64 KiB scalar,
 * or a mapping with a 64 KiB key (as_key: an explicit one, as a plain key
 * holds 1024 bytes at most), and n aliases of it: 0, or -1
 * with err holding why. */
static int load_aliases(bool as_key, size_t n, char *err, size_t errlen) {
    static char big[64 * 1024 + 1];
    char head[sizeof(big) + 64], path[64];
    memset(big, 'a', sizeof(big) - 1);
    snprintf(head, sizeof(head), as_key ? "  name: tiny\n  version: [&d {? %s : 1}"
                                        : "  name: tiny\n  version: [&d %s",
             big);
    char *text = edit_repeated("  name: tiny\n", head, ", *d", n, "]\n");
    pl_file cfg;
    int rc = load(text, &cfg, err, errlen, path);
    free(text);
    if (rc == 0) pl_file_free(&cfg);
    return rc;
}

/* The text of scalars, values and keys, counted through aliases: 63 of
 * 64 KiB and the rest of the file are read, 64 are more than the budget
 * of 4 MiB (a file of 308 KB loaded to 575 MB). */
static void test_alias_bytes(void **state) {
    (void)state;
    char err[1024];
    for (int as_key = 0; as_key < 2; as_key++) {
        if (load_aliases(as_key, 62, err, sizeof(err)) != 0)
            fail_msg("%s", err);
        assert_int_equal(load_aliases(as_key, 64, err, sizeof(err)), -1);
        if (!strstr(err, ":3: pipeline.version[63]: more than 4194304 "
                    "bytes of text"))
            fail_msg("%s", err);
    }
}

/* good with training.command given as head, n times item, then tail. */
static char *with_command(const char *head, const char *item, size_t n,
                          const char *tail) {
    return edit_repeated("  command: python3 train.py\n", head, item, n,
                         tail);
}

/* text fails to load with "PATH:13: want..." (training.command's line). */
static void expect_command_error(char *text, const char *want) {
    expect_error(text, 13, want);
    free(text);
}

/* A command aegisd or exec would refuse at every trigger's job is refused
 * at check: more words than aegisd's jobs[].cmd takes, a word longer than
 * exec takes, or all of them with the environment past ARG_MAX; check
 * and start took 50,000 words and a 900 kB line. */
static void test_command_limits(void **state) {
    (void)state;
    /* aegisd takes 1 to CORE_MAX_JOB_GPUS GPUs a job; 9 to 64 were
     * taken here and each training refused */
    expect_error(edit("  mem: 2g\n", "  gpus: 9\n"), 17,
                 "training.gpus: expected 1 to 8");
    expect_command_error(with_command("  command: [x", ", x", 4096, "]\n"),
                         "training.command: 4097 words, more than aegisd "
                         "takes (4096)");
    pl_file cfg;
    char err[1024], path[64];
    char *text = with_command("  command: [x", ", x", 4095, "]\n");
    if (load(text, &cfg, err, sizeof(err), path) != 0) fail_msg("%s", err);
    pl_file_free(&cfg);
    free(text);
    expect_command_error(with_command("  command: ", "a", 200000, "\n"),
                         "training.command: a line of 200000 bytes, more "
                         "than exec takes in one word (131071)");
    expect_command_error(with_command("  command: [python3, ", "a", 131072,
                                      "]\n"),
                         "training.command[1]: a word of 131072 bytes");
    /* ARG_MAX as a stack of 8 MiB makes it: 2 MiB */
    struct rlimit stack = {8u << 20, 8u << 20};
    getrlimit(RLIMIT_STACK, &stack);
    stack.rlim_cur = 8u << 20;
    if (stack.rlim_max != RLIM_INFINITY && stack.rlim_max < stack.rlim_cur)
        skip();
    assert_int_equal(setrlimit(RLIMIT_STACK, &stack), 0);
    size_t words = (size_t)sysconf(_SC_ARG_MAX) / 100000 + 1;
    static char word[100001];
    char head[sizeof(word) + 32];
    memset(word, 'a', sizeof(word) - 1);
    snprintf(head, sizeof(head), "  command: [&w %s", word);
    expect_command_error(with_command(head, ", *w", words - 1, "]\n"),
                         "pass the 2097152 exec takes (ARG_MAX)");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),        cmocka_unit_test(test_unknown_key),
        cmocka_unit_test(test_bad_values),  cmocka_unit_test(test_missing),
        cmocka_unit_test(test_yaml_syntax), cmocka_unit_test(test_locate),
        cmocka_unit_test(test_modyn_keys),  cmocka_unit_test(test_embedding),
        cmocka_unit_test(test_modyn_nested), cmocka_unit_test(test_merge_key),
        cmocka_unit_test(test_bts_ratio),   cmocka_unit_test(test_alias_bytes),
        cmocka_unit_test(test_nul_byte),
        cmocka_unit_test(test_command_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
