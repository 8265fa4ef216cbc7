/* monolith.c -- the reference of the update-size benchmark: the mission's
 * five modules (debayer, crop_tile, cloud, downsample, encode_jpeg)
 * linked statically into one executable with what they use, as a
 * monolithic payload binary would be. It runs them in turn on a synthetic
 * frame (so nothing is left out by the linker) and prints the image count.
 * Each module's exported symbol is renamed at compile time (CMake). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dipp_module.h"

extern const dipp_module_info dipp_module_debayer, dipp_module_crop_tile,
    dipp_module_cloud, dipp_module_downsample, dipp_module_encode_jpeg;

typedef struct heap_batch {
    dipp_batch api;
    dipp_image img[DIPP_BATCH_MAX];
} heap_batch;

static dipp_image *add(dipp_batch *b, uint32_t w, uint32_t h, uint32_t format,
                       uint64_t size) {
    if (b->count == DIPP_BATCH_MAX)
        return NULL;
    dipp_image *i = &b->images[b->count++];
    *i = (dipp_image){w, h, format, 0, 0, 0, size, calloc(1, size ? size : 1)};
    return i->data ? i : NULL;
}

static void defaults(const dipp_module_info *m, dipp_params *p) {
    memset(p, 0, sizeof *p);
    for (uint32_t k = 0; k < m->param_count; k++) {
        dipp_param *v = &p->item[p->count++];
        snprintf(v->name, sizeof v->name, "%s", m->params[k].name);
        v->type = m->params[k].type;
        v->i = (int64_t)m->params[k].def, v->f = m->params[k].def;
    }
}

int main(void) {
    static heap_batch b[2];
    const dipp_module_info *steps[] = {&dipp_module_debayer, &dipp_module_crop_tile,
                                       &dipp_module_cloud, &dipp_module_downsample,
                                       &dipp_module_encode_jpeg};
    b[0].api = (dipp_batch){0, b[0].img, add, NULL};
    dipp_image *frame = add(&b[0].api, 448, 448, DIPP_FMT_BAYER_RGGB8, 448 * 448);
    for (uint32_t k = 0; frame && k < 448u * 448u; k++)
        frame->data[k] = (uint8_t)(k * 2654435761u >> 24);
    for (int s = 0; s < 5; s++) {
        dipp_params p;
        heap_batch *in = &b[s % 2], *out = &b[(s + 1) % 2];
        out->api = (dipp_batch){0, out->img, add, NULL};
        defaults(steps[s], &p);
        if (steps[s]->run(&in->api, &p, &out->api)) {
            fprintf(stderr, "monolith: %s failed\n", steps[s]->name);
            return 1;
        }
    }
    printf("monolith: %u images\n", b[1].api.count);
    return 0;
}
