/* dish_helpers.c -- the DISH tests' shared helpers (dish_helpers.h). */
#include "dish_helpers.h"

#include <stdio.h>
#include <string.h>

void bench_init(bench *b) {
    dish_sim_init(&b->sim);
    dish_vm_init(&b->vm, &b->sim.pl);
}

int compile_src(const char *src, uint8_t *img, char *err, size_t errlen) {
    return dish_compile("t.dish", src, strlen(src), img, DISH_MAX_IMAGE, err, errlen);
}

int32_t run_src(bench *b, const char *src, const int32_t *args, int nargs, int seconds) {
    uint8_t img[DISH_MAX_IMAGE];
    char err[256];
    int n = compile_src(src, img, err, sizeof err);
    if (n < 0 || dish_vm_load(&b->vm, img, (size_t)n, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return INT32_MIN;
    }
    int r = dish_vm_start(&b->vm, img[DISH_HDR], args, nargs);
    if (r < 0)
        return INT32_MIN;
    dish_vm_run(&b->vm, b->sim.local_ms + (int64_t)seconds * 1000);
    const dish_tlm *t = dish_sim_find(&b->sim, DISH_TLM_END, -1);
    return t && t->run == r && b->vm.runs[r].state == DISH_R_FREE ? t->value : INT32_MIN;
}

void recrc(uint8_t *img, size_t len) {
    dish_put32(img + 8, dish_crc32(img + DISH_HDR, len - DISH_HDR));
}

int craft(uint8_t *out, const dish_proc *p, int n, const uint8_t *code, int len) {
    memcpy(out, "DISH", 4);
    out[4] = DISH_VERSION;
    out[5] = (uint8_t)n;
    dish_put16(out + 6, (uint16_t)len);
    for (int k = 0; k < n; k++) {
        uint8_t *r = out + DISH_HDR + k * DISH_PROC_REC;
        r[0] = p[k].slot, r[1] = p[k].nargs, r[2] = p[k].nlocals, r[3] = p[k].ncounters;
        dish_put16(r + 4, p[k].off);
        dish_put16(r + 6, p[k].len);
    }
    int total = DISH_HDR + n * DISH_PROC_REC + len;
    memcpy(out + total - len, code, (size_t)len);
    recrc(out, (size_t)total);
    return total;
}
