/* fuzz_driver.c -- runs a fuzz target (fuzz.h) without libFuzzer: every
 * build's test of it.
 *
 *   fuzz_NAME ITERATIONS SEED_DIR
 *
 * Each file of SEED_DIR (valid inputs, in name order) goes to the target
 * as it is, then ITERATIONS inputs made from them: a seed with one to
 * four edits, up to three times over (a byte changed or inserted from the
 * target's tokens or at random, a run deleted, a piece of another seed
 * spliced in, a run repeated, which nests brackets deeper). The sequence
 * is fixed, so a fault reproduces exactly; it is blind, where libFuzzer
 * follows coverage, so it guards the paths the seeds lead to and the
 * faults found before, not new ground.
 */
#include "fuzz.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_SEEDS_MAX 64
#define FUZZ_INPUT_MAX 8192

typedef struct seed {
    uint8_t *data;
    size_t len;
} seed;

static seed seeds[FUZZ_SEEDS_MAX];
static size_t nseeds;

/* xorshift64: the same sequence on every run. */
static uint64_t rnd(void) {
    static uint64_t state = 0x9E3779B97F4A7C15ull;
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Reads SEED_DIR/name into the next seed, up to FUZZ_INPUT_MAX bytes. */
static void load_seed(const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    seed *s = &seeds[nseeds];
    s->data = malloc(FUZZ_INPUT_MAX);
    if (!f || !s->data) {
        perror(path);
        exit(2);
    }
    s->len = fread(s->data, 1, FUZZ_INPUT_MAX, f);
    fclose(f);
    nseeds++;
}

/* Every regular file of dir, in name order. */
static void load_seeds(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        exit(2);
    }
    char *names[FUZZ_SEEDS_MAX];
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < FUZZ_SEEDS_MAX;)
        if (e->d_name[0] != '.') names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, n, sizeof(*names), by_name);
    for (size_t i = 0; i < n; i++) {
        load_seed(dir, names[i]);
        free(names[i]);
    }
    if (nseeds == 0) {
        fprintf(stderr, "%s: no seeds\n", dir);
        exit(2);
    }
}

/* A byte to put in: one of the target's tokens, or any. */
static uint8_t some_byte(void) {
    return fuzz_ntokens && rnd() % 4
               ? (uint8_t)fuzz_tokens[rnd() % fuzz_ntokens]
               : (uint8_t)rnd();
}

/* Puts n bytes of piece at buf[at], moving the rest up, when they fit. */
static size_t insert(uint8_t *buf, size_t len, size_t at, const uint8_t *piece,
                     size_t n) {
    if (len + n > FUZZ_INPUT_MAX) return len;
    memmove(buf + at + n, buf + at, len - at);
    memmove(buf + at, piece, n);
    return len + n;
}

static size_t edit(uint8_t *buf, size_t len) {
    size_t at = len ? rnd() % len : 0, n = 1 + rnd() % 16;
    uint8_t byte = some_byte();
    const seed *other = &seeds[rnd() % nseeds];
    switch (rnd() % 6) {
    case 0: if (len) buf[at] = byte; return len;
    case 1: return insert(buf, len, at, &byte, 1);
    case 2: /* delete a run */
        if (n > len - at) n = len - at;
        memmove(buf + at, buf + at + n, len - at - n);
        return len - n;
    case 3: { /* splice in a piece of another seed */
        if (!other->len) return len;
        size_t from = rnd() % other->len;
        if (n > other->len - from) n = other->len - from;
        return insert(buf, len, at, other->data + from, n);
    }
    case 4: { /* repeat a run up to 64 times */
        if (n > len - at) n = len - at;
        uint8_t run[16];
        memcpy(run, buf + at, n);
        for (int k = 1 + (int)(rnd() % 64); k > 0; k--)
            len = insert(buf, len, at, run, n);
        return len;
    }
    default: /* cut: the file ends early */
        return at;
    }
}

/* Runs the target on a copy of the input in a block of its own size, as
 * libFuzzer does, so that a sanitizer sees a read past its end. */
static void run_exactly(const uint8_t *data, size_t len) {
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy) {
        perror("fuzz");
        exit(2);
    }
    memcpy(copy, data, len);
    LLVMFuzzerTestOneInput(copy, len);
    free(copy);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s ITERATIONS SEED_DIR\n", argv[0]);
        return 2;
    }
    long iterations = atol(argv[1]);
    load_seeds(argv[2]);
    static uint8_t buf[FUZZ_INPUT_MAX];
    for (size_t i = 0; i < nseeds; i++)
        run_exactly(seeds[i].data, seeds[i].len);
    for (long it = 0; it < iterations; it++) {
        const seed *s = &seeds[rnd() % nseeds];
        size_t len = s->len;
        memcpy(buf, s->data, len);
        for (int rounds = 1 + (int)(rnd() % 3); rounds > 0; rounds--)
            for (int edits = 1 + (int)(rnd() % 4); edits > 0; edits--)
                len = edit(buf, len);
        run_exactly(buf, len);
    }
    printf("%s: %zu seeds and %ld edited inputs, no fault\n", argv[0], nseeds,
           iterations);
    for (size_t i = 0; i < nseeds; i++) free(seeds[i].data);
    return 0;
}
