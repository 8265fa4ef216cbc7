/* physical.c -- the physically grounded part of aegis's memory estimate.
 *
 * The one idea: at the peak of a training step (the start of backward) the
 * GPU holds the model state (weights, gradients, optimizer state), every
 * tensor autograd saved during forward, the gradients of the layer being
 * differentiated, the CUDA context, and what the caching allocator lost to
 * rounding. Which layer outputs autograd saves follows from what each
 * layer's backward needs: a conv, linear, norm or pool layer needs its
 * input (so the previous layer's output stays), as do GELU-like
 * activations; ReLU-like activations and softmax need their own output;
 * dropout keeps a one-byte mask and max pooling its argmax indices.
 * That inference is for descriptions that only list layer outputs (the
 * GPUMemNet MLPs, hand-written ones). The extractor measures instead what
 * autograd keeps in a forward pass (est_desc.measured): then each layer's
 * saved elements, fixed-size bytes and dropout masks are taken as they
 * are.
 * Convolutions also take cuDNN workspace; its size depends on the
 * algorithm cuDNN picks, so this file gives only its unit (the largest
 * convolution's output) and the learned correction its multiple.
 */
#include "estimate.h"

#include <math.h>

#define MIB (1024.0 * 1024.0)

/* PyTorch on an A100 with lazy module loading (the default since CUDA
 * 11.7): the context and the kernels it loads. The smallest catalog job
 * (efficientnet_cifar100_bs32_20e_1gpu) peaks at 668 MiB in total, which
 * bounds it from above; the learned intercept refines it. */
#define CUDA_CONTEXT_MIB 512.0

/* PyTorch's caching allocator rounds requests to 512 bytes and carves
 * those under 10 MiB out of shared segments; larger ones get a segment of
 * their own, rounded up to 2 MiB (kMinLargeAlloc, kRoundLarge in
 * c10/cuda/CUDACachingAllocator.cpp). */
#define LARGE_BLOCK (10.0 * MIB)
#define LARGE_GRANULE (2.0 * MIB)
#define SMALL_GRANULE 512.0

/* Optimizer state elements per parameter: momentum buffer (SGD with
 * momentum), exp_avg and exp_avg_sq (Adam, AdamW), square_avg (RMSprop),
 * sum (Adagrad). */
static const double state_per_param[EST_NOPT] = {0, 1, 2, 2, 1, 1};

/* Bytes of one weight element, and of one activation element. Mixed
 * precision keeps fp32 weights but computes (and saves) in half. */
static const double weight_bytes[EST_NPREC] = {4, 4, 4, 2, 2};
static const double act_bytes[EST_NPREC] = {4, 2, 2, 2, 2};

/* What each category's backward needs. internal: elements saved inside
 * the layer per output element, beyond its input and output (attention's
 * query, key, value and context; the attention matrix is not in the
 * description and is left to the learned correction). side_bytes: a
 * tensor of its own saved beside the activations, in bytes per output
 * element whatever the precision: dropout's bool mask (native_dropout)
 * and max pooling's int64 argmax indices (max_pool2d_with_indices). */
static const struct {
    int needs_input;        /* backward reads the layer's input */
    int keeps_output;       /* backward reads the layer's own output */
    double internal;
    double side_bytes;
} role[EST_NCAT] = {
    [EST_CAT_CONV] = {1, 0, 0, 0},    [EST_CAT_LINEAR] = {1, 0, 0, 0},
    [EST_CAT_NORM] = {1, 0, 0, 0},    [EST_CAT_ACTIVATION] = {0, 1, 0, 0},
    [EST_CAT_ACTIVATION_IN] = {1, 0, 0, 0},
    [EST_CAT_POOL] = {1, 0, 0, 0},    [EST_CAT_MAXPOOL] = {1, 0, 0, 8},
    [EST_CAT_DROPOUT] = {0, 0, 0, 1}, [EST_CAT_EMBEDDING] = {0, 0, 0, 0},
    [EST_CAT_ATTENTION] = {1, 0, 4, 0},
    [EST_CAT_SOFTMAX] = {0, 1, 0, 0}, [EST_CAT_VIEW] = {0, 0, 0, 0},
    /* Unknown layers: assume they need their input, the costlier case. */
    [EST_CAT_OTHER] = {1, 0, 0, 0},
};

/* Bytes the allocator hands out for a request of `bytes`, minus `bytes`. */
static double rounding_loss(double bytes) {
    if (bytes <= 0) return 0;
    double granule = bytes > LARGE_BLOCK ? LARGE_GRANULE : SMALL_GRANULE;
    return ceil(bytes / granule) * granule - bytes;
}

/* A layer whose output is its input (a view such as Flatten, or an
 * in-place op, which the extractor lists with 0 activations) adds no
 * tensor: its input's memory is counted where that input was made. */
static int aliases_input(const est_layer *l) {
    return l->category == EST_CAT_VIEW || l->activations == 0;
}

/* Whether autograd keeps layer i's output: its own backward reads it, or
 * the next layer that makes a tensor reads its input, or an aliasing layer
 * in between keeps its output (an in-place ReLU saves its result, which is
 * this very tensor); the last output is kept by the loss. */
static int output_kept(const est_desc *d, size_t i) {
    if (aliases_input(&d->layers[i])) return 0;
    if (role[d->layers[i].category].keeps_output) return 1;
    for (size_t j = i + 1; j < d->nlayers; j++) {
        const est_layer *next = &d->layers[j];
        if (!aliases_input(next)) return role[next->category].needs_input;
        if (next->category != EST_CAT_VIEW &&
            (role[next->category].keeps_output ||
             role[next->category].needs_input))
            return 1;
    }
    return 1;
}

void est_physical(const est_desc *d, est_components *out) {
    *out = (est_components){0};
    const double batch = (double)d->batch_size;
    const double wb = weight_bytes[d->precision];
    const double ab = act_bytes[d->precision];
    const double states = state_per_param[d->optimizer];
    const int amp = d->precision == EST_PREC_AMP_FP16 ||
                    d->precision == EST_PREC_AMP_BF16;
    double round_bytes = rounding_loss(d->input_elements * batch * 4);
    double largest = 0, largest_conv = 0;
    for (size_t i = 0; i < d->nlayers; i++) {
        const est_layer *l = &d->layers[i];
        double w = l->params * wb;
        /* Autocast caches a half copy of each matmul weight per step. */
        if (amp && (l->category == EST_CAT_CONV ||
                    l->category == EST_CAT_LINEAR ||
                    l->category == EST_CAT_ATTENTION))
            w += l->params * 2;
        out->weights += w + l->buffers * wb;
        out->gradients += l->params * wb;
        out->optimizer += l->params * wb * states;
        double act = l->activations * batch;
        double kept, side;
        if (d->measured) {
            /* What autograd was seen to keep; dropout masks at the byte
             * per element of the GPU's fused kernel. */
            kept = l->saved * batch * ab;
            side = (l->saved_bytes + l->masks) * batch;
        } else {
            kept = (output_kept(d, i) + role[l->category].internal) * act *
                   ab;
            side = role[l->category].side_bytes * act;
        }
        out->activations[l->category] += kept + side;
        round_bytes += rounding_loss(l->params * wb) * (2 + states) +
                       rounding_loss(kept) + rounding_loss(side);
        if (act > largest) largest = act;
        if (l->category == EST_CAT_CONV && act > largest_conv)
            largest_conv = act;
    }
    out->input = d->input_elements * batch * 4;
    /* Backward through the largest layer holds its output's gradient and
     * its input's gradient at once. */
    out->workspace = 2 * largest * ab;
    out->conv_workspace = largest_conv * ab;
    out->rounding = round_bytes;
    out->weights /= MIB;
    out->gradients /= MIB;
    out->optimizer /= MIB;
    out->input /= MIB;
    for (int c = 0; c < EST_NCAT; c++) out->activations[c] /= MIB;
    out->workspace /= MIB;
    out->conv_workspace /= MIB;
    out->rounding /= MIB;
    out->cuda_context = CUDA_CONTEXT_MIB;
}

double est_activations_total(const est_components *c) {
    double sum = c->input;
    for (int i = 0; i < EST_NCAT; i++) sum += c->activations[i];
    return sum;
}

double est_physical_total(const est_components *c) {
    return c->weights + c->gradients + c->optimizer +
           est_activations_total(c) + c->workspace + c->conv_workspace +
           c->cuda_context + c->rounding;
}
