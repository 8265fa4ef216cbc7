/* test_request_words.c -- aegisd's refusals said in the user's words
 * (request_words.c): a field path it knows becomes the option or the
 * spec's key, with the job of a spec that holds several; anything else
 * stays as aegisd said it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "request_words.h"

#include <string.h>

static const char *say(const request_words *w, const char *err) {
    static char buf[256];
    return request_words_say(w, err, buf, sizeof(buf));
}

static void test_option(void **state) {
    (void)state;
    request_words w = {.object = "jobs",
                       .words = request_words_submit_options};
    assert_string_equal(say(&w, "jobs[0].after: no job 999"),
                        "--after: no job 999");
    assert_string_equal(say(&w, "jobs[0].mem_mib: must be a number"),
                        "--gpu-mem: must be a number");
}

static void test_spec_job(void **state) {
    (void)state;
    request_words w = {.object = "jobs", .words = request_words_spec_keys,
                       .file = "x.yaml", .several = true};
    assert_string_equal(say(&w, "jobs[11].time_limit_s: too long"),
                        "x.yaml: job 12: time: too long");
    w.lines = json_pack("[i, i]", 2, 9);
    assert_string_equal(say(&w, "jobs[1].gpus: too many"),
                        "x.yaml: job 2 (line 9): gpus: too many");
    assert_string_equal(say(&w, "jobs[2].gpus: too many"),
                        "x.yaml: job 3: gpus: too many"); /* no line */
    json_decref(w.lines);
    w.several = false;
    assert_string_equal(say(&w, "jobs[0].cmd: empty"), "x.yaml: command: empty");
}

/* An AEGIS spec's keys, then the options that gave the rest. */
static void test_aegis_spec_then_options(void **state) {
    (void)state;
    request_words w = {.object = "jobs", .file = "a.yaml",
                       .words = request_words_aegis_spec_keys,
                       .also = request_words_submit_options};
    assert_string_equal(say(&w, "jobs[0].gpus: 9 GPUs"),
                        "a.yaml: resources.num_gpus: 9 GPUs");
    assert_string_equal(say(&w, "jobs[0].after: no job 9"),
                        "a.yaml: --after: no job 9");
}

/* A path deeper than one field, a field no word names, another object,
 * no field at all: as aegisd said it. */
static void test_unknown_kept(void **state) {
    (void)state;
    request_words w = {.object = "jobs",
                       .words = request_words_submit_options};
    const char *kept[] = {
        "jobs[0].after[1].id: no job 3", "jobs[0].meta: too deep",
        "drain.reason: too long", "jobs[0]: expected an object",
        "jobs[x].name: bad", "jobs[0].name", "server busy: try again",
    };
    for (size_t i = 0; i < sizeof(kept) / sizeof(*kept); i++)
        assert_string_equal(say(&w, kept[i]), kept[i]);
}

static void test_other_object(void **state) {
    (void)state;
    static const request_word fields[] = {{"reason", "--reason"},
                                          {NULL, NULL}};
    request_words w = {.object = "drain", .words = fields};
    assert_string_equal(say(&w, "drain.reason: too long"), "--reason: too long");
    assert_string_equal(say(&w, "drainage.reason: x"), "drainage.reason: x");
}

/* Said in a buffer too small: aegisd's own words, whole. */
static void test_small_buffer(void **state) {
    (void)state;
    request_words w = {.object = "jobs",
                       .words = request_words_submit_options};
    char buf[8];
    const char *err = "jobs[0].name: control characters";
    assert_ptr_equal(request_words_say(&w, err, buf, sizeof(buf)), err);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_option),
        cmocka_unit_test(test_spec_job),
        cmocka_unit_test(test_aegis_spec_then_options),
        cmocka_unit_test(test_unknown_kept),
        cmocka_unit_test(test_other_object),
        cmocka_unit_test(test_small_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
