/* test_pdef.c -- pipeline definitions: YAML read with errors that name the
 * file, line and field; the encoded form round-trips and fits the 188-byte
 * parameter (or is refused saying by how much); damaged bytes are refused,
 * never crash; printed YAML reads back to the same definition. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "pdef.h"

static const char mission[] =
    "pipeline: 3\n"
    "modules:\n"
    "  - name: debayer\n"
    "  - name: crop_tile\n"
    "    params: {x: 16, y: 16, tile: 224}\n"
    "  - name: cloud\n"
    "    params: {bright: 180, max_cover: 300}\n"
    "  - name: downsample\n"
    "    params: {factor: 2, gain: 1.25, mode: 'box'}\n"
    "  - name: encode_jpeg\n"
    "    config: 20\n"
    "    params: {quality: 85, offset: -7}\n";

static int parse(const char *text, pdef *d, char *err) {
    return pdef_from_yaml("m.yaml", text, strlen(text), d, err, 256);
}

static void test_round_trip_fits(void **s) {
    (void)s;
    pdef d, back;
    char err[256];
    uint8_t buf[PDEF_MAX_BYTES];
    assert_int_equal(parse(mission, &d, err), 0);
    assert_int_equal(d.id, 3);
    assert_int_equal(d.count, 5);
    int n = pdef_encode(&d, buf, err, sizeof err);
    assert_true(n > 0 && n <= PDEF_MAX_BYTES);
    print_message("5-module definition: %d bytes\n", n);
    assert_int_equal(pdef_decode(buf, (size_t)n, &back, err, sizeof err), 0);
    assert_memory_equal(&d, &back, sizeof d);
}

static void test_printed_yaml_reads_back(void **s) {
    (void)s;
    pdef d, back;
    char err[256], text[4096];
    assert_int_equal(parse(mission, &d, err), 0);
    FILE *f = fmemopen(text, sizeof text, "w");
    pdef_print_yaml(&d, f);
    fclose(f);
    assert_int_equal(parse(text, &back, err), 0);
    assert_memory_equal(&d, &back, sizeof d);
}

/* A new parameter of step st, name and type set. */
static dipp_param *add_param(pdef_step *st, const char *name, uint32_t type) {
    dipp_param *p = &st->params.item[st->params.count++];
    snprintf(p->name, sizeof p->name, "%s", name);
    p->type = type;
    return p;
}

static void add_text(pdef_step *st, const char *name, const char *text) {
    snprintf(add_param(st, name, DIPP_PARAM_STR)->s, DIPP_PARAM_STR_MAX, "%s", text);
}

/* A definition whose text needs quoting (a quote, a backslash, a newline,
 * a terminal's escape sequence, a name like "a: b") and floats that look
 * like integers or are far out of long long's range print as YAML that
 * reads back to the same definition, with no control byte in it raw (they
 * were printed as they were: refused, read otherwise, or sent to the
 * terminal by `dipp decode`). */
static void test_printed_yaml_quotes_text_and_keeps_floats(void **s) {
    (void)s;
    static const char *const texts[] = {"say \"hi\"", "back\\slash", "two\nlines",
                                        "\x1b[2Jcleared", "tab\there", "del\x7f",
                                        "# no comment", "'single'", "- 1: {x}", "12",
                                        /* U+0085 and U+2028 are breaks YAML folds,
                                         * U+0080 a C1 control, U+FEFF a byte-order
                                         * mark; the last is printed as it is */
                                        "nel\xc2\x85", "ls\xe2\x80\xa8", "c1\xc2\x80 \xef\xbb\xbf",
                                        "caf\xc3\xa9"};
    static const double floats[] = {1e15, 1e300, -0.5, -1e15, 1e16, 0.1, -0.0, 3.0, 1e-300};
    pdef d, back;
    char err[256], text[8192];
    memset(&d, 0, sizeof d);
    d.id = 2, d.count = 2;
    snprintf(d.step[0].name, sizeof d.step[0].name, "debayer");
    snprintf(d.step[1].name, sizeof d.step[1].name, "downsample");
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
        char name[16];
        snprintf(name, sizeof name, "t%zu", k);
        add_text(&d.step[0], name, texts[k]);
    }
    add_text(&d.step[0], "a: b", "x");
    add_text(&d.step[0], "q\"\\\n\x1b", "y");
    for (size_t k = 0; k < sizeof floats / sizeof floats[0]; k++) {
        char name[16];
        snprintf(name, sizeof name, "f%zu", k);
        add_param(&d.step[1], name, DIPP_PARAM_FLOAT)->f = floats[k];
    }
    add_param(&d.step[1], "min", DIPP_PARAM_INT)->i = INT64_MIN;
    add_param(&d.step[1], "max", DIPP_PARAM_INT)->i = INT64_MAX;
    FILE *f = fmemopen(text, sizeof text, "w");
    pdef_print_yaml(&d, f);
    fclose(f);
    print_message("%s", text);
    for (const char *c = text; *c; c++)
        assert_true(*c == '\n' || ((unsigned char)*c >= 0x20 && *c != 0x7f));
    if (parse(text, &back, err))
        fail_msg("%s", err);
    assert_memory_equal(&d, &back, sizeof d);
}

static void test_too_big_is_refused(void **s) {
    (void)s;
    pdef d;
    char err[256], text[4096] = "modules:\n";
    uint8_t buf[PDEF_MAX_BYTES];
    /* names and numbers that do not compress */
    for (unsigned k = 0; k < PDEF_MAX_STEPS; k++)
        snprintf(text + strlen(text), sizeof text - strlen(text),
                 "  - name: m%08x\n    params: {p%08x: %u.5, q: %u}\n", k * 2654435761u,
                 k * 40503u + 977u, k * 2246822519u, k * 7919u);
    assert_int_equal(parse(text, &d, err), 0);
    assert_int_equal(pdef_encode(&d, buf, err, sizeof err), -1);
    assert_non_null(strstr(err, "over the 188-byte parameter"));
}

/* The flight DIPP holds up to 20 modules a pipeline (discosat/DIPP
 * src/include/dipp_config.h, MAX_MODULES): a 20-step pipeline of short
 * names fits the 188 bytes and must be taken; a 21st step is refused,
 * naming the field. */
static void test_twenty_modules_as_the_flight(void **s) {
    (void)s;
    pdef d, back;
    char err[256], text[2048] = "modules:\n";
    uint8_t buf[PDEF_MAX_BYTES];
    for (unsigned k = 0; k < 20; k++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "  - name: m%u\n", k);
    if (parse(text, &d, err))
        fail_msg("%s", err);
    assert_int_equal(d.count, 20);
    int n = pdef_encode(&d, buf, err, sizeof err);
    if (n < 0)
        fail_msg("%s", err);
    assert_int_equal(pdef_decode(buf, (size_t)n, &back, err, sizeof err), 0);
    assert_int_equal(back.count, 20);
    strcat(text, "  - name: m20\n");
    assert_int_equal(parse(text, &d, err), -1);
    assert_non_null(strstr(err, "m.yaml:22:5: modules[20]: more than 20 modules"));
}

static void expect_error(const char *text, const char *where) {
    pdef d;
    char err[1024];
    assert_int_equal(pdef_from_yaml("m.yaml", text, strlen(text), &d, err, sizeof err), -1);
    print_message("%s\n", err);
    assert_non_null(strstr(err, where));
}

static void test_errors_name_line_and_field(void **s) {
    (void)s;
    expect_error("modules:\n  - name: debayer\n  - name: Bad/Name\n",
                 "m.yaml:3:11: modules[1].name");
    expect_error("pipeline: 9\nmodules:\n  - name: a\n", "m.yaml:1:11: pipeline");
    expect_error("modules:\n  - name: a\n    parms: {}\n", "m.yaml:3:5: modules[0].parms");
    expect_error("modules:\n  - name: a\n    params: [1]\n", "modules[0].params");
    expect_error("modules: [\n", "m.yaml:2:1: YAML");
    expect_error("pipeline: 1\n", "modules: missing");
    expect_error("modules:\n  - name: a\n    config: 21\n", "m.yaml:3:13: modules[0].config");
}

/* The flight DIPP's YAML (csp_ippc's 'ippc pipeline' and 'ippc module'
 * files, and the stage lists of discosat's classification pipeline) is
 * recognised and the message says how to write it here; no message has
 * an empty field name (the document's own was ": expected a mapping"). */
static void test_flight_yaml_named(void **s) {
    (void)s;
    expect_error("- order: 1\n  param_id: 3\n  name: debayer\n\n"
                 "- order: 2\n  param_id: 4\n  name: encode_jpeg\n",
                 "m.yaml:1:1: document: a list of order, param_id and name: the flight "
                 "DIPP's pipeline file (csp_ippc's 'ippc pipeline'); here write "
                 "'pipeline: N' and 'modules:', one '- name: NAME' a step in the order "
                 "they run, a param_id P as 'config: P'");
    expect_error("# comment\n  - key: \"quality\"\n    type: 3\n    value: 90\n",
                 "m.yaml:2:3: document: a list of key, type and value: the flight "
                 "DIPP's module configuration (csp_ippc's 'ippc module'); here a "
                 "configuration slot holds one module, 'modules: [{name: MODULE, "
                 "params: {KEY: VALUE}}]', stored with --config N");
    expect_error("pipeline:\n- name: classification\n  implementations:\n"
                 "    - param_id: 1\n      effort_level: low\n",
                 "m.yaml:2:1: pipeline: a list of stages with implementations "
                 "(param_id, effort_level), as in discosat's "
                 "dipp-image-classification-pipeline; here 'pipeline:' is the slot "
                 "number, 1 to 6, and 'modules:' lists one module a step");
    expect_error("- debayer\n", "m.yaml:1:1: document: a list; a definition is a "
                                 "mapping (pipeline, modules)");
    expect_error("debayer\n", "m.yaml:1:1: document: expected a mapping (pipeline, modules)");
    expect_error("pipeline: [1]\nmodules:\n  - name: a\n",
                 "m.yaml:1:11: pipeline: a slot number from 1 to 6");
}

/* What the YAML says is read whole or refused: an empty value (which
 * the decoder refuses, so a good slot was replaced by an unreadable one),
 * a key given twice (the last won, or two module lists were joined), a
 * number out of range (it became a string), a NUL cutting a name short,
 * a second document, and text too long to be a definition. */
static void test_yaml_read_whole_or_refused(void **s) {
    (void)s;
    expect_error("modules:\n  - name: cloud\n    params: {max_cover: \"\"}\n",
                 "m.yaml:3:25: modules[0].params.max_cover: an empty value");
    expect_error("modules:\n  - name: cloud\n    params: {max_cover: }\n",
                 "modules[0].params.max_cover: an empty value");
    expect_error("pipeline: 1\npipeline: 2\nmodules:\n  - name: a\n",
                 "m.yaml:2:1: pipeline: given twice");
    expect_error("modules:\n  - name: a\nmodules:\n  - name: b\n",
                 "m.yaml:3:1: modules: given twice");
    expect_error("modules:\n  - name: a\n    name: b\n",
                 "m.yaml:3:5: modules[0].name: given twice");
    expect_error("modules:\n  - name: a\n    params: {f: 2, f: 0}\n",
                 "modules[0].params.f: given twice");
    expect_error("modules:\n  - name: a\n    params: {f: 99999999999999999999}\n",
                 "modules[0].params.f: an integer out of range");
    expect_error("modules:\n  - name: a\n    params: {f: 1e400}\n",
                 "modules[0].params.f: a number out of range");
    expect_error("modules:\n  - name: a\n---\nmodules: []\n",
                 "m.yaml:4:1: document: a second YAML document");
    static char big[PDEF_YAML_MAX + 64];
    memset(big, '#', sizeof big - 1);
    memcpy(big, "modules:\n  - name: a\n#", 22);
    expect_error(big, "more than a definition's 16384");
    const char nul[] = "modules:\n  - name: \"debayer\\0 x\"\n";
    pdef d;
    char err[256];
    assert_int_equal(pdef_from_yaml("m.yaml", nul, sizeof nul - 1, &d, err,
                                    sizeof err), -1);
    assert_non_null(strstr(err, "m.yaml:2:11: value: holds a NUL byte"));
}

/* The parameter a one-parameter definition's value v reads as. */
static dipp_param value_of(const char *v) {
    char text[128], err[256];
    pdef d;
    snprintf(text, sizeof text, "modules:\n  - name: a\n    params: {f: %s}\n", v);
    if (parse(text, &d, err))
        fail_msg("%s: %s", v, err);
    return d.step[0].params.item[0];
}

/* A non-finite number is refused on the ground, with file, line and
 * field, as the decoder refuses it on board (it was encoded and stored,
 * then refused by the board as a malformed message). */
static void test_non_finite_refused(void **s) {
    (void)s;
    const char *bad[] = {".inf", "-.inf", "+.Inf", ".NaN", ".nan", "inf", "-inf",
                         "nan", "NaN", "Infinity", "-infinity"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char text[128];
        snprintf(text, sizeof text, "modules:\n  - name: a\n    params: {f: %s}\n", bad[k]);
        expect_error(text, "m.yaml:3:17: modules[0].params.f: a non-finite number");
    }
    /* quoted, it is a string */
    assert_int_equal(value_of("'inf'").type, DIPP_PARAM_STR);
}

/* Unquoted scalars read as YAML 1.2's core schema reads them, or, where
 * YAML 1.1 and 1.2 disagree or the value is not a number or a string,
 * are refused with a sentence saying how to write it. */
static void test_yaml_core_scalars(void **s) {
    (void)s;
    dipp_param v = value_of("0x55");
    assert_int_equal(v.type, DIPP_PARAM_INT);
    assert_int_equal(v.i, 85);
    v = value_of("0o17");
    assert_int_equal(v.type, DIPP_PARAM_INT);
    assert_int_equal(v.i, 15);
    v = value_of("+5");
    assert_int_equal(v.type, DIPP_PARAM_INT);
    assert_int_equal(v.i, 5);
    v = value_of("-12");
    assert_int_equal(v.i, -12);
    v = value_of("0");
    assert_int_equal(v.type, DIPP_PARAM_INT);
    v = value_of("1e3");
    assert_int_equal(v.type, DIPP_PARAM_FLOAT);
    assert_true(v.f == 1000.0);
    v = value_of(".5");
    assert_int_equal(v.type, DIPP_PARAM_FLOAT);
    v = value_of("2.");
    assert_int_equal(v.type, DIPP_PARAM_FLOAT);
    v = value_of("0x1p3"); /* C's hex float, not YAML's: a string */
    assert_int_equal(v.type, DIPP_PARAM_STR);
    v = value_of("box");
    assert_int_equal(v.type, DIPP_PARAM_STR);
    expect_error("modules:\n  - name: a\n    params: {f: ~}\n",
                 "m.yaml:3:17: modules[0].params.f: null");
    expect_error("modules:\n  - name: a\n    params: {f: null}\n", "params.f: null");
    expect_error("modules:\n  - name: a\n    params: {f: true}\n",
                 "params.f: a boolean");
    expect_error("modules:\n  - name: a\n    params: {f: Off}\n",
                 "params.f: a boolean in YAML 1.1");
    expect_error("modules:\n  - name: a\n    params: {f: 1_000}\n",
                 "params.f: 1_000 is 1000 in YAML 1.1");
    expect_error("modules:\n  - name: a\n    params: {f: 0b101}\n",
                 "params.f: 0b101 is a binary integer in YAML 1.1");
    expect_error("modules:\n  - name: a\n    params: {f: 017}\n",
                 "params.f: 017 is 17 in YAML 1.2 and 15 (octal) in YAML 1.1");
    assert_int_equal(value_of("0x").type, DIPP_PARAM_STR); /* no digits: YAML's string */
}

/* YAML 1.1's base-60 numbers (1:30 is 90 there, a string in YAML 1.2) are
 * refused like the other scalars the two versions read apart; a colon
 * that makes no base-60 number is a string in both. */
static void test_sexagesimal_refused(void **s) {
    (void)s;
    expect_error("modules:\n  - name: a\n    params:\n      t: 1:30\n",
                 "m.yaml:4:10: modules[0].params.t: 1:30 is 90 (base 60) in YAML 1.1 "
                 "and a string in YAML 1.2: write 90, or quote it for a string");
    expect_error("modules:\n  - name: a\n    params:\n      t: -1:00:05\n",
                 "params.t: -1:00:05 is -3605 (base 60) in YAML 1.1");
    expect_error("modules:\n  - name: a\n    params:\n      t: 190:20:30.15\n",
                 "params.t: 190:20:30.15 is 685230.15 (base 60) in YAML 1.1");
    assert_int_equal(value_of("'1:30'").type, DIPP_PARAM_STR);
    assert_int_equal(value_of("12:60").type, DIPP_PARAM_STR); /* 60 is no base-60 digit */
    assert_int_equal(value_of("01:30").type, DIPP_PARAM_STR); /* 1.1's int starts 1-9 */
}

/* Every truncation and every single-bit flip of a good encoding is either
 * refused or decodes to a valid definition: never a crash (ASan watches). */
static void test_damaged_bytes(void **s) {
    (void)s;
    pdef d, back;
    char err[256];
    uint8_t buf[PDEF_MAX_BYTES], bad[PDEF_MAX_BYTES];
    assert_int_equal(parse(mission, &d, err), 0);
    int n = pdef_encode(&d, buf, err, sizeof err);
    for (int len = 0; len < n; len++)
        assert_int_equal(pdef_decode(buf, (size_t)len, &back, err, sizeof err), -1);
    for (int bit = 0; bit < n * 8; bit++) {
        memcpy(bad, buf, (size_t)n);
        bad[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        if (pdef_decode(bad, (size_t)n, &back, err, sizeof err) == 0)
            assert_true(back.count >= 1 && back.count <= PDEF_MAX_STEPS);
    }
}

/* A container claiming 2^36 items in a 14-byte definition is refused
 * before any allocation for them (cbor_load would reserve 512 GiB). */
static void test_huge_count_refused(void **s) {
    (void)s;
    static const uint8_t lie[] = {0x00, 0x83, 0x01, 0x01, 0x9b, 0, 0, 0, 0x10,
                                  0, 0, 0, 0, 0x80};
    pdef d;
    char err[256];
    assert_int_equal(pdef_decode(lie, sizeof lie, &d, err, sizeof err), -1);
}

/* The bytes of hex, into out: how many. */
static size_t unhex(const char *hex, uint8_t *out) {
    size_t n = 0;
    for (; hex[0] && hex[1]; hex += 2)
        sscanf(hex, "%2hhx", &out[n++]);
    return n;
}

/* The decoder refuses what the YAML reader refuses: text holding a NUL
 * ("a\0b" was read as "a", a parameter name "\0" as an empty one, and
 * "debayer\0junk" passed as a module name), text that is not UTF-8
 * (libcbor's loader refuses it: a definition holding some could be
 * printed, never read back) and a parameter given twice. */
static void test_decode_refuses_what_yaml_refuses(void **s) {
    (void)s;
    static const char *const bad[] = {
        "0083010181826764656261796572a1616763610062",       /* g: "a\0b" */
        "0083010181826764656261796572a1610001",             /* "\0": 1 */
        "0083010181826c64656261796572006a756e6ba0",         /* debayer\0junk */
        "0083010181826764656261796572a2616701616702",       /* g: 1, g: 2 */
        "0083010181826764656261796572a1616761ff",           /* g: "\xff" */
        "0083010181826764656261796572a1616762c080",         /* overlong NUL */
        "0083010181826764656261796572a1616763eda080",       /* a surrogate */
    };
    uint8_t buf[PDEF_MAX_BYTES];
    pdef d;
    char err[256];
    size_t n = unhex("0083010181826764656261796572a2616701616802", buf); /* g: 1, h: 2 */
    assert_int_equal(pdef_decode(buf, n, &d, err, sizeof err), 0);
    int decoded = 0;
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        n = unhex(bad[k], buf);
        if (pdef_decode(buf, n, &d, err, sizeof err) == 0)
            print_message("%s: decoded\n", bad[k]), decoded++;
    }
    assert_int_equal(decoded, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_fits),
        cmocka_unit_test(test_printed_yaml_reads_back),
        cmocka_unit_test(test_printed_yaml_quotes_text_and_keeps_floats),
        cmocka_unit_test(test_too_big_is_refused),
        cmocka_unit_test(test_errors_name_line_and_field),
        cmocka_unit_test(test_flight_yaml_named),
        cmocka_unit_test(test_twenty_modules_as_the_flight),
        cmocka_unit_test(test_yaml_read_whole_or_refused),
        cmocka_unit_test(test_non_finite_refused),
        cmocka_unit_test(test_yaml_core_scalars),
        cmocka_unit_test(test_sexagesimal_refused),
        cmocka_unit_test(test_damaged_bytes),
        cmocka_unit_test(test_huge_count_refused),
        cmocka_unit_test(test_decode_refuses_what_yaml_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
