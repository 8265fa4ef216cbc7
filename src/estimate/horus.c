/* horus.c -- Horus's analytical memory estimate, as published:
 * 4 * [(A*B + P) + B*P] bytes, A = summed per-sample layer outputs,
 * B = batch size, P = parameters (fp32 elements). It ignores optimizer,
 * precision and context; aegis keeps it as the baseline the AEGIS
 * sensitivity data measured (median estimate/actual 2.14). */
#include "estimate.h"

double est_horus(const est_desc *d, double context_mib) {
    double a = 0, p = 0;
    for (size_t i = 0; i < d->nlayers; i++) {
        a += d->layers[i].activations;
        p += d->layers[i].params;
    }
    double b = (double)d->batch_size;
    return 4.0 * ((a * b + p) + b * p) / (1024.0 * 1024.0) + context_mib;
}
