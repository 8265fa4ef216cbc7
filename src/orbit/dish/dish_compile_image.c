/* dish_compile_image.c -- the compiled procedures as one bytecode image
 * (the layout in dish.h), checked by the same verifier the board runs
 * before anything leaves the ground. */
#include <stdio.h>
#include <string.h>

#include "dish_compile_int.h"
#include "dish_verify.h"

static void write_record(uint8_t *r, const dish_proc *p) {
    r[0] = p->slot, r[1] = p->nargs, r[2] = p->nlocals, r[3] = p->ncounters;
    dish_put16(r + 4, p->off);
    dish_put16(r + 6, p->len);
}

/* Header, procedure table, code and CRC into out: bytes, or -1. */
static int assemble(comp *c, uint8_t *out, size_t cap) {
    size_t n = DISH_HDR + (size_t)c->nprocs * DISH_PROC_REC + (size_t)c->bodylen;
    if (n > cap || n > DISH_MAX_IMAGE) {
        snprintf(c->err, c->errlen, "%s: the image would be %zu bytes, over %d", c->file,
                 n, DISH_MAX_IMAGE);
        return -1;
    }
    memcpy(out, "DISH", 4);
    out[4] = DISH_VERSION;
    out[5] = (uint8_t)c->nprocs;
    dish_put16(out + 6, (uint16_t)c->bodylen);
    for (int k = 0; k < c->nprocs; k++)
        write_record(out + DISH_HDR + k * DISH_PROC_REC, &c->recs[k]);
    memcpy(out + n - c->bodylen, c->body, (size_t)c->bodylen);
    dish_put32(out + 8, dish_crc32(out + DISH_HDR, n - DISH_HDR));
    return (int)n;
}

/* The verifier on the compiler's own output. A refusal at an instruction
 * (a call closing a cycle, calls nested too deep) is reported at the
 * source token that instruction came from, as the compiler's own errors
 * are; the rest (a procedure's instruction bound) name the file. */
static int verify_output(comp *c, const uint8_t *img, int n) {
    static dish_image im;
    char why[200];
    if (!dish_verify(img, (size_t)n, NULL, &im, why, sizeof why))
        return n;
    unsigned at = im.fail_proc >= 0 && im.fail_proc < c->nprocs
                      ? c->recs[im.fail_proc].off + (unsigned)im.fail_pc
                      : (unsigned)c->bodylen;
    if (at < (unsigned)c->bodylen) {
        const dish_tok *t = &c->t[c->body_site[at]];
        snprintf(c->err, c->errlen, "%s:%d:%d: the verifier refuses the result: %s",
                 c->file, t->line, t->col, why);
    } else {
        snprintf(c->err, c->errlen, "%s: the verifier refuses the result: %s", c->file,
                 why);
    }
    return -1;
}

int dc_write_image(comp *c, uint8_t *out, size_t cap) {
    int n = assemble(c, out, cap);
    return n > 0 ? verify_output(c, out, n) : -1;
}
