/* correct.c -- the learned correction and the safety margin.
 *
 * The physical components are grouped into a few sums that the data can
 * pin down; a fitted linear model of the groups gives the predicted peak,
 * and a multiplicative margin (a high quantile of the held-out ratio
 * actual/predicted) turns it into the value aegis schedules on. The fit
 * and the table are tools/fit_estimator.py's; this file only applies them.
 */
#include "estimate.h"

#include <math.h>
#include <string.h>

static const char *const stack_names[EST_NSTACK] = {"aegis", "gpumemnet"};

const char *est_stack_name(est_stack stack) { return stack_names[stack]; }

int est_stack_of(const char *name) {
    for (int i = 0; i < EST_NSTACK; i++)
        if (strcmp(name, stack_names[i]) == 0) return i;
    return -1;
}

void est_groups(const est_components *c, double g[EST_NGROUP]) {
    g[EST_G_STATE] = c->weights + c->gradients + c->optimizer;
    g[EST_G_ACT_MATMUL] = c->input + c->activations[EST_CAT_CONV] +
                          c->activations[EST_CAT_LINEAR] +
                          c->activations[EST_CAT_EMBEDDING] +
                          c->activations[EST_CAT_ATTENTION] +
                          c->activations[EST_CAT_OTHER];
    g[EST_G_ACT_ELEMENTWISE] = c->activations[EST_CAT_NORM] +
                               c->activations[EST_CAT_ACTIVATION] +
                               c->activations[EST_CAT_POOL] +
                               c->activations[EST_CAT_MAXPOOL] +
                               c->activations[EST_CAT_VIEW];
    g[EST_G_ACT_INPUT] = c->activations[EST_CAT_ACTIVATION_IN];
    g[EST_G_ACT_SCORES] = c->activations[EST_CAT_DROPOUT] +
                          c->activations[EST_CAT_SOFTMAX];
    g[EST_G_WORKSPACE] = c->workspace + c->rounding;
    g[EST_G_CONV_WORKSPACE] = c->conv_workspace;
}

void est_correct(const est_components *c, const est_learned *t,
                 est_stack stack, est_result *out) {
    double g[EST_NGROUP];
    est_groups(c, g);
    double predicted = t->intercept_mib[stack];
    for (int i = 0; i < EST_NGROUP; i++) predicted += t->coef[i] * g[i];
    out->predicted_mib = predicted;
    out->estimate_mib = predicted * exp(t->margin_log);
    out->margin_mib = out->estimate_mib - predicted;
}
