/* test_estimate.c -- unit tests of the estimate library: the description
 * parser's errors, the layer categories, Horus's formula, each physical
 * component on a model small enough to work out by hand, and the learned
 * correction and margin applied from a tiny table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "estimate.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MIB (1024.0 * 1024.0)

/* A description with a placeholder for one layer field, so each parser
 * test changes exactly one thing. */
static const char *const good =
    "{\"format\": \"aegis-model/1\", \"model\": \"hand\", \"batch_size\": 2,"
    " \"optimizer\": \"adam\", \"precision\": \"fp32\","
    " \"input_elements\": 10, \"layers\": ["
    "  {\"type\": \"Linear\", \"activations\": 8, \"params\": 88},"
    "  {\"type\": \"ReLU\", \"activations\": 8, \"params\": 0},"
    "  {\"type\": \"Dropout\", \"activations\": 8, \"params\": 0},"
    "  {\"type\": \"Linear\", \"activations\": 4, \"params\": 36},"
    "  {\"type\": \"Softmax\", \"activations\": 4, \"params\": 0}]}";

/* Parses text; returns the description, or NULL with the message in err. */
static est_desc *parse(const char *text, char *err, size_t errlen) {
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    assert_non_null(root);
    est_desc *d = est_desc_from_json(root, "d.json", err, errlen);
    json_decref(root);
    return d;
}

/* good with the first occurrence of from replaced by to must fail with
 * message. */
static void expect_error(const char *from, const char *to,
                         const char *message) {
    char text[2048], err[512] = "";
    const char *at = strstr(good, from);
    assert_non_null(at);
    snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - good), good, to,
             at + strlen(from));
    est_desc *d = parse(text, err, sizeof(err));
    if (d) fail_msg("accepted: %s", text);
    if (!strstr(err, message)) fail_msg("'%s' lacks '%s'", err, message);
}

static void test_parse_good(void **state) {
    char err[512];
    est_desc *d = parse(good, err, sizeof(err));
    assert_non_null(d);
    assert_string_equal(d->model, "hand");
    assert_int_equal(d->batch_size, 2);
    assert_int_equal(d->optimizer, EST_OPT_ADAM);
    assert_int_equal(d->precision, EST_PREC_FP32);
    assert_int_equal(d->nlayers, 5);
    assert_int_equal(d->layers[3].category, EST_CAT_LINEAR);
    assert_true(d->layers[3].params == 36);
    est_desc_free(d);
}

static void test_parse_errors(void **state) {
    expect_error("\"params\": 36", "\"params\": -1",
                 "d.json: layers[3].params: not a non-negative integer");
    expect_error("\"params\": 36", "\"params\": 3.5",
                 "layers[3].params: not a non-negative integer");
    expect_error("\"activations\": 4, \"params\": 36", "\"params\": 36",
                 "layers[3].activations: missing");
    expect_error("{\"type\": \"ReLU\",", "{\"type\": 7,",
                 "layers[1].type: missing or not a non-empty string");
    expect_error("{\"type\": \"ReLU\", \"activations\": 8, \"params\": 0}",
                 "[]", "layers[1]: not an object");
    expect_error("\"batch_size\": 2", "\"batch_size\": 0",
                 "d.json: batch_size: not a positive integer");
    /* 2^53 elements in one field is no model a GPU holds: refused, the
     * field named, before it gives absurd estimates. */
    expect_error("\"params\": 36", "\"params\": 9007199254740992",
                 "layers[3].params: 9007199254740992 is implausible");
    expect_error("\"activations\": 4,", "\"activations\": 1099511627777,",
                 "layers[3].activations: 1099511627777 is implausible");
    expect_error("\"input_elements\": 10", "\"input_elements\": 2e3",
                 "input_elements: not a non-negative integer");
    expect_error("\"params\": 0}]", "\"params\": 0, \"saved\": -4}]",
                 "layers[4].saved: not a non-negative integer");
    expect_error("\"params\": 0}]", "\"params\": 0, \"masks\": "
                 "1099511627777}]", "layers[4].masks: 1099511627777 is "
                 "implausible");
    /* Fields fine one by one can still add up to no real model. */
    expect_error("\"params\": 88", "\"params\": 1099511627776",
                 "layers: 1099511627812 parameters in all is implausible");
    expect_error("\"batch_size\": 2", "\"batch_size\": 20000000",
                 "batch_size: 20000000 is above 1000000");
    expect_error("\"adam\"", "\"lion\"",
                 "optimizer: unknown value 'lion' (one of: sgd, ");
    expect_error("\"fp32\"", "32", "precision: missing or not a string");
    expect_error("aegis-model/1", "aegis-model/2",
                 "format: expected \"aegis-model/1\"");
    expect_error("\"input_elements\": 10,", "",
                 "input_elements: missing");
    expect_error("\"layers\": [", "\"layers\": [], \"x\": [",
                 "layers: missing or not a non-empty array");
}

static void test_load_file_errors(void **state) {
    char err[512];
    assert_null(est_desc_load("/nonexistent/d.json", err, sizeof(err)));
    assert_non_null(strstr(err, "/nonexistent/d.json: cannot read"));
    char path[] = "/tmp/test_estimate_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("{\"format\": \n\"aegis-model/1\",,}", f);
    fclose(f);
    assert_null(est_desc_load(path, err, sizeof(err)));
    remove(path);
    char want[600];
    snprintf(want, sizeof(want), "%s:2:", path);
    if (!strstr(err, want) || !strstr(err, "bad JSON"))
        fail_msg("'%s' lacks '%s' and 'bad JSON'", err, want);
}

static void test_categories(void **state) {
    static const struct { const char *type; est_category cat; } cases[] = {
        {"Conv2d", EST_CAT_CONV}, {"ConvTranspose2d", EST_CAT_CONV},
        {"Linear", EST_CAT_LINEAR}, {"linear", EST_CAT_LINEAR},
        {"BatchNorm2d", EST_CAT_NORM}, {"batch_normalization", EST_CAT_NORM},
        {"LayerNorm", EST_CAT_NORM}, {"ReLU", EST_CAT_ACTIVATION},
        {"GELU", EST_CAT_ACTIVATION_IN},
        {"NewGELUActivation", EST_CAT_ACTIVATION_IN},
        {"SiLU", EST_CAT_ACTIVATION_IN}, {"ReLU6", EST_CAT_ACTIVATION_IN},
        {"LeakyReLU", EST_CAT_ACTIVATION_IN}, {"ELU", EST_CAT_ACTIVATION_IN},
        {"Sigmoid", EST_CAT_ACTIVATION}, {"Tanh", EST_CAT_ACTIVATION},
        {"MaxPool2d", EST_CAT_MAXPOOL}, {"max_pool2d", EST_CAT_MAXPOOL},
        {"AdaptiveMaxPool2d", EST_CAT_MAXPOOL}, {"avg_pool2d", EST_CAT_POOL},
        {"AdaptiveAvgPool2d", EST_CAT_POOL}, {"Dropout", EST_CAT_DROPOUT},
        {"Embedding", EST_CAT_EMBEDDING},
        {"MultiheadAttention", EST_CAT_ATTENTION},
        {"Softmax", EST_CAT_SOFTMAX}, {"LogSoftmax", EST_CAT_SOFTMAX},
        {"Flatten", EST_CAT_VIEW}, {"Identity", EST_CAT_VIEW},
        {"FrobnicatorBlock", EST_CAT_OTHER}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++)
        if (est_category_of(cases[i].type) != cases[i].cat)
            fail_msg("%s -> %s, expected %s", cases[i].type,
                     est_category_name(est_category_of(cases[i].type)),
                     est_category_name(cases[i].cat));
}

static void test_horus(void **state) {
    char err[512];
    est_desc *d = parse(good, err, sizeof(err));
    assert_non_null(d);
    /* A = 8+8+8+4+4 = 32, P = 124, B = 2: 4*((64 + 124) + 248) bytes. */
    assert_float_equal(est_horus(d, 0), 4.0 * 436 / MIB, 1e-12);
    assert_float_equal(est_horus(d, 300), 4.0 * 436 / MIB + 300, 1e-9);
    est_desc_free(d);
}

/* The hand example, worked out in bytes (fp32, Adam, batch 2):
 *   weights 124*4 = 496, gradients 496, Adam's two moments 992;
 *   input 10*2*4 = 80;
 *   Linear1's output feeds ReLU, which keeps its own output: not kept;
 *   ReLU keeps 8*2*4 = 64; Dropout's output feeds Linear2: 64 + a
 *   one-byte mask of 16 = 80; Linear2 feeds Softmax: not kept; Softmax
 *   keeps 4*2*4 = 32;
 *   workspace: twice the largest output, 2*16*4 = 128; no convolution,
 *   so no convolution workspace;
 *   rounding to 512 bytes: input 432; Linear1 weights 352 -> 160 for each
 *   of weight, gradient and 2 moments = 640; ReLU 448; Dropout's output
 *   448 and its mask, a tensor of its own, 496; Linear2 144 -> 368*4 =
 *   1472; Softmax 480: 4416 in all. */
static void test_physical_components(void **state) {
    char err[512];
    est_desc *d = parse(good, err, sizeof(err));
    assert_non_null(d);
    est_components c;
    est_physical(d, &c);
    assert_float_equal(c.weights * MIB, 496, 1e-6);
    assert_float_equal(c.gradients * MIB, 496, 1e-6);
    assert_float_equal(c.optimizer * MIB, 992, 1e-6);
    assert_float_equal(c.input * MIB, 80, 1e-6);
    assert_float_equal(c.activations[EST_CAT_LINEAR] * MIB, 0, 1e-6);
    assert_float_equal(c.activations[EST_CAT_ACTIVATION] * MIB, 64, 1e-6);
    assert_float_equal(c.activations[EST_CAT_DROPOUT] * MIB, 80, 1e-6);
    assert_float_equal(c.activations[EST_CAT_SOFTMAX] * MIB, 32, 1e-6);
    assert_float_equal(est_activations_total(&c) * MIB, 256, 1e-6);
    assert_float_equal(c.workspace * MIB, 128, 1e-6);
    assert_float_equal(c.conv_workspace, 0, 1e-12);
    assert_float_equal(c.rounding * MIB, 4416, 1e-6);
    assert_true(c.cuda_context > 0);
    assert_float_equal(est_physical_total(&c),
                       (496 + 496 + 992 + 256 + 128 + 4416) / MIB +
                           c.cuda_context, 1e-9);
    est_desc_free(d);
}

/* Optimizer state per parameter and mixed precision's half copies. */
static void test_physical_optimizer_precision(void **state) {
    char err[512];
    est_desc *d = parse(good, err, sizeof(err));
    assert_non_null(d);
    est_components c;
    const double per_param[EST_NOPT] = {0, 1, 2, 2, 1, 1};
    for (int o = 0; o < EST_NOPT; o++) {
        d->optimizer = (est_optimizer)o;
        est_physical(d, &c);
        assert_float_equal(c.optimizer * MIB, 124 * 4 * per_param[o], 1e-6);
    }
    d->optimizer = EST_OPT_SGD;
    d->precision = EST_PREC_AMP_FP16;
    est_physical(d, &c);
    /* fp32 master weights plus a 2-byte copy of each linear weight;
     * activations saved in half: ReLU 32, Dropout 32 + 16 mask. */
    assert_float_equal(c.weights * MIB, 124 * 4 + 124 * 2, 1e-6);
    assert_float_equal(c.gradients * MIB, 124 * 4, 1e-6);
    assert_float_equal(c.activations[EST_CAT_ACTIVATION] * MIB, 32, 1e-6);
    assert_float_equal(c.activations[EST_CAT_DROPOUT] * MIB, 48, 1e-6);
    d->precision = EST_PREC_BF16;
    est_physical(d, &c);
    assert_float_equal(c.weights * MIB, 124 * 2, 1e-6);
    est_desc_free(d);
}

/* A layer of the given category, output elements, parameters and
 * buffers, nothing measured. */
#define LAYER(cat, act, par, buf) \
    {.category = (cat), .activations = (act), .params = (par), \
     .buffers = (buf)}

/* The physical components of n hand-made layers (batch 1, SGD, fp32, no
 * input). */
static void physical_of(est_layer *layers, size_t n, est_components *c) {
    est_desc d = {.model = "", .batch_size = 1, .optimizer = EST_OPT_SGD,
                  .precision = EST_PREC_FP32, .input_elements = 0,
                  .layers = layers, .nlayers = n};
    est_physical(&d, c);
}

/* A GELU-like activation reads its input, so the layer before it is kept
 * (a ReLU in its place would keep only its own output). */
static void test_physical_input_activation(void **state) {
    est_layer layers[] = {
        LAYER(EST_CAT_LINEAR, 100, 0, 0),
        LAYER(EST_CAT_ACTIVATION_IN, 100, 0, 0),
        LAYER(EST_CAT_LINEAR, 10, 1010, 0)};
    est_components c;
    physical_of(layers, 3, &c);
    assert_float_equal(c.activations[EST_CAT_LINEAR] * MIB, 400 + 40, 1e-6);
    assert_float_equal(c.activations[EST_CAT_ACTIVATION_IN] * MIB, 400, 1e-6);
    layers[1].category = EST_CAT_ACTIVATION;
    physical_of(layers, 3, &c);
    assert_float_equal(c.activations[EST_CAT_LINEAR] * MIB, 40, 1e-6);
    assert_float_equal(c.activations[EST_CAT_ACTIVATION] * MIB, 400, 1e-6);
}

/* A view layer shares its input's memory: nothing of its own is kept, and
 * the layer before it is kept when the layer after it needs its input. */
static void test_physical_view(void **state) {
    est_layer layers[] = {
        LAYER(EST_CAT_ACTIVATION, 100, 0, 0), LAYER(EST_CAT_VIEW, 100, 0, 0),
        LAYER(EST_CAT_LINEAR, 10, 1010, 0)};
    est_components c;
    physical_of(layers, 3, &c);
    assert_float_equal(c.activations[EST_CAT_VIEW], 0, 1e-12);
    assert_float_equal(c.activations[EST_CAT_ACTIVATION] * MIB, 400, 1e-6);
    /* The last layer's output is kept for the loss. */
    assert_float_equal(c.activations[EST_CAT_LINEAR] * MIB, 40, 1e-6);
}

/* An in-place ReLU (listed with 0 activations) keeps the tensor it
 * overwrote: the norm layer's output before it, not a copy of its own. */
static void test_physical_in_place(void **state) {
    est_layer layers[] = {
        LAYER(EST_CAT_CONV, 100, 0, 0), LAYER(EST_CAT_NORM, 100, 0, 0),
        LAYER(EST_CAT_ACTIVATION, 0, 0, 0),
        LAYER(EST_CAT_CONV, 10, 1010, 0)};
    est_components c;
    physical_of(layers, 4, &c);
    /* conv 1's output for the norm's backward, conv 2's for the loss */
    assert_float_equal(c.activations[EST_CAT_CONV] * MIB, 400 + 40, 1e-6);
    assert_float_equal(c.activations[EST_CAT_NORM] * MIB, 400, 1e-6);
    assert_float_equal(c.activations[EST_CAT_ACTIVATION], 0, 1e-12);
}

/* Max pooling keeps its int64 argmax indices (8 bytes per output element
 * in any precision) besides its input; the convolution workspace's unit is
 * the largest convolution's output. */
static void test_physical_max_pool_and_conv(void **state) {
    est_layer layers[] = {
        LAYER(EST_CAT_CONV, 100, 0, 0), LAYER(EST_CAT_MAXPOOL, 25, 0, 0),
        LAYER(EST_CAT_CONV, 10, 0, 0)};
    est_components c;
    physical_of(layers, 3, &c);
    /* conv 1's output for the pool's backward, conv 2's for the loss */
    assert_float_equal(c.activations[EST_CAT_CONV] * MIB, 400 + 40, 1e-6);
    /* the pool's output for conv 2's backward, and its indices */
    assert_float_equal(c.activations[EST_CAT_MAXPOOL] * MIB, 100 + 200, 1e-6);
    assert_float_equal(c.conv_workspace * MIB, 400, 1e-6);
    est_desc d = {.model = "", .batch_size = 3, .optimizer = EST_OPT_SGD,
                  .precision = EST_PREC_AMP_FP16, .input_elements = 0,
                  .layers = layers, .nlayers = 3};
    est_physical(&d, &c);
    assert_float_equal(c.activations[EST_CAT_MAXPOOL] * MIB,
                       3 * (25 * 2 + 25 * 8), 1e-6);
    assert_float_equal(c.conv_workspace * MIB, 3 * 100 * 2, 1e-6);
}

/* A measured description (the extractor's autograd pass): a layer keeps
 * exactly what it says it saved -- its saved elements at the activation
 * precision, its fixed-size bytes (int64 indices) and its dropout masks at
 * one byte each, as the GPU keeps them -- whatever its category; a layer
 * that gives none of them keeps nothing. */
static void test_physical_measured(void **state) {
    est_layer layers[] = {
        LAYER(EST_CAT_CONV, 100, 10, 0),
        {.category = EST_CAT_ACTIVATION_IN, .activations = 100,
         .saved = 100},
        {.category = EST_CAT_MAXPOOL, .activations = 25, .saved = 100,
         .saved_bytes = 200},
        {.category = EST_CAT_DROPOUT, .activations = 25, .saved = 25,
         .masks = 25},
        {.category = EST_CAT_ATTENTION, .activations = 40, .saved = 1000},
        LAYER(EST_CAT_LINEAR, 10, 0, 0)};
    est_desc d = {.model = "", .batch_size = 2, .optimizer = EST_OPT_SGD,
                  .precision = EST_PREC_FP32, .input_elements = 0,
                  .layers = layers, .nlayers = 6, .measured = 1};
    est_components c;
    est_physical(&d, &c);
    assert_float_equal(c.activations[EST_CAT_CONV], 0, 1e-12);
    assert_float_equal(c.activations[EST_CAT_ACTIVATION_IN] * MIB,
                       2 * 100 * 4, 1e-6);
    assert_float_equal(c.activations[EST_CAT_MAXPOOL] * MIB,
                       2 * (100 * 4 + 200), 1e-6);
    assert_float_equal(c.activations[EST_CAT_DROPOUT] * MIB,
                       2 * (25 * 4 + 25), 1e-6);
    /* attention's scores and softmax as measured, no guessed multiple */
    assert_float_equal(c.activations[EST_CAT_ATTENTION] * MIB,
                       2 * 1000 * 4, 1e-6);
    /* the last output is the loss's business, in the description too */
    assert_float_equal(c.activations[EST_CAT_LINEAR], 0, 1e-12);
    d.precision = EST_PREC_AMP_BF16;
    est_physical(&d, &c);
    assert_float_equal(c.activations[EST_CAT_MAXPOOL] * MIB,
                       2 * (100 * 2 + 200), 1e-6);
    assert_float_equal(c.activations[EST_CAT_DROPOUT] * MIB,
                       2 * (25 * 2 + 25), 1e-6);
}

/* Any layer with a saved field makes the whole description measured. */
static void test_parse_measured(void **state) {
    char err[512];
    est_desc *d = parse(good, err, sizeof(err));
    assert_non_null(d);
    assert_false(d->measured);
    est_desc_free(d);
    char text[2048];
    const char *at = strstr(good, "\"params\": 0}]");
    snprintf(text, sizeof(text), "%.*s\"params\": 0, \"saved\": 4, "
             "\"saved_bytes\": 8, \"masks\": 2}]}", (int)(at - good), good);
    d = parse(text, err, sizeof(err));
    if (!d) fail_msg("%s", err);
    assert_true(d->measured);
    assert_true(d->layers[4].saved == 4 && d->layers[4].saved_bytes == 8 &&
                d->layers[4].masks == 2);
    assert_true(d->layers[0].saved == 0);
    est_desc_free(d);
}

static void test_correction_and_margin(void **state) {
    est_components c = {0};
    c.weights = 10, c.gradients = 10, c.optimizer = 20;   /* state 40 */
    c.input = 5, c.activations[EST_CAT_CONV] = 15;        /* matmul 20 */
    c.activations[EST_CAT_NORM] = 30;                     /* elementwise 30 */
    c.activations[EST_CAT_ACTIVATION_IN] = 16;            /* input kept 16 */
    c.activations[EST_CAT_SOFTMAX] = 6;                   /* scores 8 */
    c.activations[EST_CAT_DROPOUT] = 2;
    c.workspace = 7, c.rounding = 3;                      /* workspace 10 */
    c.conv_workspace = 4;
    c.cuda_context = 512; /* not a group: the intercept stands for it */
    double g[EST_NGROUP];
    est_groups(&c, g);
    assert_float_equal(g[EST_G_STATE], 40, 1e-12);
    assert_float_equal(g[EST_G_ACT_MATMUL], 20, 1e-12);
    assert_float_equal(g[EST_G_ACT_ELEMENTWISE], 30, 1e-12);
    assert_float_equal(g[EST_G_ACT_INPUT], 16, 1e-12);
    assert_float_equal(g[EST_G_ACT_SCORES], 8, 1e-12);
    assert_float_equal(g[EST_G_WORKSPACE], 10, 1e-12);
    assert_float_equal(g[EST_G_CONV_WORKSPACE], 4, 1e-12);
    const est_learned table = {.intercept_mib = {100, 1000},
                               .coef = {2, 1, 0.5, 0.125, 0.25, 0, 3},
                               .margin_log = log(1.1),
                               .margin_quantile = 0.95};
    est_result r;
    est_correct(&c, &table, EST_STACK_AEGIS, &r);
    assert_float_equal(r.predicted_mib, 100 + 80 + 20 + 15 + 2 + 2 + 12,
                       1e-9);
    assert_float_equal(r.estimate_mib, 231 * 1.1, 1e-9);
    assert_float_equal(r.margin_mib, 23.1, 1e-9);
    est_correct(&c, &table, EST_STACK_GPUMEMNET, &r);
    assert_float_equal(r.predicted_mib, 1000 + 80 + 20 + 15 + 2 + 2 + 12,
                       1e-9);
    assert_int_equal(est_stack_of("gpumemnet"), EST_STACK_GPUMEMNET);
    assert_int_equal(est_stack_of("cuda12"), -1);
}

/* The shipped table must give a margin that only adds memory. */
static void test_shipped_table_sane(void **state) {
    assert_true(est_learned_shipped.margin_log >= 0);
    for (int s = 0; s < EST_NSTACK; s++)
        assert_true(est_learned_shipped.intercept_mib[s] >= 0);
    for (int i = 0; i < EST_NGROUP; i++)
        assert_true(est_learned_shipped.coef[i] >= 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_good),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_load_file_errors),
        cmocka_unit_test(test_categories),
        cmocka_unit_test(test_horus),
        cmocka_unit_test(test_physical_components),
        cmocka_unit_test(test_physical_optimizer_precision),
        cmocka_unit_test(test_physical_input_activation),
        cmocka_unit_test(test_physical_view),
        cmocka_unit_test(test_physical_in_place),
        cmocka_unit_test(test_physical_max_pool_and_conv),
        cmocka_unit_test(test_physical_measured),
        cmocka_unit_test(test_parse_measured),
        cmocka_unit_test(test_correction_and_margin),
        cmocka_unit_test(test_shipped_table_sane),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
