/* category.c -- names: torch.nn class names to layer categories, and the
 * spelling of the description's enumerations (optimizer, precision).
 *
 * Class names are matched case-insensitively by the word they contain
 * ("BatchNorm2d" and GPUMemNet's "batch_normalization" are both norms),
 * so the many variants torch has of each kind need no list of their own.
 */
#include "estimate.h"

#include <ctype.h>
#include <stddef.h>
#include <string.h>

static const char *const category_names[EST_NCAT] = {
    "conv", "linear", "norm", "activation", "activation_in", "pool",
    "maxpool", "dropout", "embedding", "attention", "softmax", "view",
    "other"};

/* Substrings that decide a category, tried in this order: "softmax" before
 * the activations (Softmax is not kept like ReLU), "attention" before
 * "linear", max pooling (class MaxPool2d, function max_pool2d) before
 * "pool", and the activations whose backward reads their input (PyTorch's
 * derivatives of GELU, SiLU, ELU, LeakyReLU, hardtanh = ReLU6, ...) before
 * "relu", which would match LeakyReLU, PReLU and ReLU6, and "relu" before
 * "elu", which would match ReLU. */
static const struct { const char *word; est_category cat; } words[] = {
    {"softmax", EST_CAT_SOFTMAX}, {"softmin", EST_CAT_SOFTMAX},
    {"attention", EST_CAT_ATTENTION}, {"embedding", EST_CAT_EMBEDDING},
    {"conv", EST_CAT_CONV}, {"linear", EST_CAT_LINEAR},
    {"norm", EST_CAT_NORM}, {"maxpool", EST_CAT_MAXPOOL},
    {"max_pool", EST_CAT_MAXPOOL}, {"pool", EST_CAT_POOL},
    {"dropout", EST_CAT_DROPOUT},
    {"gelu", EST_CAT_ACTIVATION_IN}, {"silu", EST_CAT_ACTIVATION_IN},
    {"swish", EST_CAT_ACTIVATION_IN}, {"mish", EST_CAT_ACTIVATION_IN},
    {"softplus", EST_CAT_ACTIVATION_IN}, {"leakyrelu", EST_CAT_ACTIVATION_IN},
    {"prelu", EST_CAT_ACTIVATION_IN}, {"relu6", EST_CAT_ACTIVATION_IN},
    {"hardtanh", EST_CAT_ACTIVATION_IN},
    {"hardsigmoid", EST_CAT_ACTIVATION_IN},
    {"relu", EST_CAT_ACTIVATION}, {"elu", EST_CAT_ACTIVATION_IN},
    {"sigmoid", EST_CAT_ACTIVATION}, {"tanh", EST_CAT_ACTIVATION},
    {"activation", EST_CAT_ACTIVATION},
    {"identity", EST_CAT_VIEW}, {"flatten", EST_CAT_VIEW},
    {"unflatten", EST_CAT_VIEW}};

/* Matching is case-insensitive, on at most 64 bytes of the name (longer
 * class names are not torch.nn's), lowered once for all the words: a big
 * description has hundreds of layers. */
est_category est_category_of(const char *type) {
    char low[65];
    size_t n = 0;
    for (; type[n] && n < sizeof(low) - 1; n++)
        low[n] = (char)tolower((unsigned char)type[n]);
    low[n] = '\0';
    for (size_t i = 0; i < sizeof(words) / sizeof(*words); i++)
        if (strstr(low, words[i].word)) return words[i].cat;
    return EST_CAT_OTHER;
}

const char *est_category_name(est_category cat) { return category_names[cat]; }

static const char *const optimizer_names[EST_NOPT] = {
    "sgd", "sgd_momentum", "adam", "adamw", "rmsprop", "adagrad"};
static const char *const precision_names[EST_NPREC] = {
    "fp32", "amp_fp16", "amp_bf16", "fp16", "bf16"};

const char *est_optimizer_name(est_optimizer opt) { return optimizer_names[opt]; }
const char *est_precision_name(est_precision prec) {
    return precision_names[prec];
}
