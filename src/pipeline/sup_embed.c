/* sup_embed.c -- a drift trigger's windows embedded by the pipeline's
 * embedding command (the file's `embedding` section; trigger.h,
 * pl_embed_fn), run as an aegis job with the newest model:
 *
 *   embeddings/K.tset  the samples' keys, in order (a training set's
 *                      format, so aegis_pipeline reads them)
 *   embeddings/K.out   what the command writes: n rows of float32
 *   embeddings/K.emb   the answer kept: a header, then the rows
 *
 * Why answers are kept: a restarted supervisor feeds its trigger the
 * stream again and so asks for the same embeddings in the same order.
 * The K-th ask of a run gets the answer kept for K, if it is for the same
 * keys and model, and so the trigger fires where it fired before
 * (trigger.h) with no job run twice. An embedding that failed is kept as
 * such (no rows): that detection point votes no drift again.
 */
#include "supervisor.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "trainset.h"

#define EMB_MAGIC "AEGEMB1"

/* The widest embedding a command may write (floats a row): bounds what a
 * broken command can make the supervisor read. */
#define EMB_MAX_DIM 65536

/* K.emb's header; the rows (n x dim float32) follow. dim 0: failed. */
typedef struct emb_head {
    char magic[8];
    int64_t model;          /* the trigger whose model embedded them */
    uint64_t n, dim;
    uint32_t keys_crc;      /* CRC-32 of the keys asked for */
    uint32_t reserved;
} emb_head;

_Static_assert(sizeof(emb_head) == 40, "embedding header layout");

/* What one ask is: its files, the keys (the dataset's), the model. */
typedef struct emb_ask {
    uint32_t k;
    char tset[4400], out[4400], kept[4400], model_path[4400];
    int64_t model;
    const uint64_t *keys;
    size_t n;
    uint32_t keys_crc;
} emb_ask;

static uint32_t emb_crc(const uint64_t *keys, size_t n) {
    uLong crc = crc32(0L, Z_NULL, 0);
    for (size_t done = 0; done < n;) {
        size_t part = n - done < (1u << 24) ? n - done : (1u << 24);
        crc = crc32(crc, (const Bytef *)(keys + done),
                    (uInt)(part * sizeof(*keys)));
        done += part;
    }
    return (uint32_t)crc;
}

/* The whole of path into a malloc'd buffer. 0, or -1 (errno set). */
static int emb_slurp(const char *path, unsigned char **data, size_t *size) {
    FILE *f = fopen(path, "rb");
    struct stat st;
    *data = NULL;
    if (!f) return -1;
    if (fstat(fileno(f), &st) == 0 && (*data = malloc(st.st_size + 1)))
        *size = fread(*data, 1, (size_t)st.st_size, f);
    int failed = !*data || ferror(f);
    fclose(f);
    if (failed) {
        free(*data);
        *data = NULL;
        errno = errno ? errno : EIO;
    }
    return failed ? -1 : 0;
}

/* The answer kept for ask a: 0 with *out and *dim (dim 0: it failed), 1
 * when none is kept, or -1 with err when the one kept is for other keys
 * or another model, or unreadable: asked the same again, a run must
 * answer the same, and cannot here. */
static int emb_load(const emb_ask *a, float **out, size_t *dim, char *err,
                    size_t errlen) {
    unsigned char *data;
    size_t size;
    if (emb_slurp(a->kept, &data, &size) != 0) {
        if (errno == ENOENT) return 1;
        snprintf(err, errlen, "%s: %s", a->kept, strerror(errno));
        return -1;
    }
    emb_head h;
    int found = size >= sizeof(h);
    if (found) memcpy(&h, data, sizeof(h));
    found = found && memcmp(h.magic, EMB_MAGIC, 8) == 0 &&
            h.model == a->model && h.n == a->n && h.keys_crc == a->keys_crc &&
            h.dim <= (size - sizeof(h)) / 4 &&
            size == sizeof(h) + h.n * h.dim * sizeof(float);
    if (found) {
        *dim = h.dim;
        *out = malloc(h.n * h.dim * sizeof(float) + 1);
        if (*out) memcpy(*out, data + sizeof(h), h.n * h.dim * sizeof(float));
    }
    free(data);
    if (found && *out) return 0;
    snprintf(err, errlen, "%s: %s", a->kept, found ? "out of memory"
             : "kept for other samples or another model than this run asks "
               "(the dataset or the trigger changed?); remove the "
               "pipeline's embeddings folder to embed again");
    return -1;
}

/* Keeps the answer (dim 0: failed) in K.emb, synced, through a rename.
 * 0, or -1 with err. */
static int emb_keep(const emb_ask *a, const float *rows, size_t dim,
                    char *err, size_t errlen) {
    char tmp[4500];
    snprintf(tmp, sizeof(tmp), "%s.tmp", a->kept);
    emb_head h = {.model = a->model, .n = a->n, .dim = dim,
                  .keys_crc = a->keys_crc};
    memcpy(h.magic, EMB_MAGIC, 8);
    FILE *f = fopen(tmp, "wb");
    int ok = f && fwrite(&h, sizeof(h), 1, f) == 1 &&
             (dim == 0 || fwrite(rows, sizeof(float) * dim, a->n, f) == a->n) &&
             fflush(f) == 0 && fsync(fileno(f)) == 0;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok || rename(tmp, a->kept) != 0) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* The command's output: n rows of float32, all finite, at most
 * EMB_MAX_DIM wide. 0 with *rows and *dim, or -1 with why. */
static int emb_read_output(const emb_ask *a, float **rows, size_t *dim,
                           char *why, size_t whylen) {
    struct stat st;
    size_t row = a->n * sizeof(float);
    if (stat(a->out, &st) != 0) {
        snprintf(why, whylen, "%s: %s", a->out, strerror(errno));
        return -1;
    }
    if (st.st_size == 0 || (size_t)st.st_size % row != 0 ||
        (size_t)st.st_size / row > EMB_MAX_DIM) {
        snprintf(why, whylen, "%s: %lld bytes is not %zu rows of 1 to %d "
                 "float32", a->out, (long long)st.st_size, a->n, EMB_MAX_DIM);
        return -1;
    }
    unsigned char *data;
    size_t size;
    if (emb_slurp(a->out, &data, &size) != 0 || size != (size_t)st.st_size) {
        snprintf(why, whylen, "%s: changed or unreadable while read", a->out);
        if (data) free(data);
        return -1;
    }
    const float *got = (const float *)data;
    for (size_t i = 0; i < size / sizeof(float); i++)
        if (!isfinite(got[i])) {
            snprintf(why, whylen, "%s: row %zu holds %g", a->out,
                     i / (size / row), (double)got[i]);
            free(data);
            return -1;
        }
    *dim = size / row;
    *rows = (float *)data;
    return 0;
}

/* K.tset: the keys to embed, in order. 0, or -1 with err. */
static int emb_write_keys(const emb_ask *a, char *err, size_t errlen) {
    pl_trainset_item *items = calloc(a->n ? a->n : 1, sizeof(*items));
    if (!items) {
        snprintf(err, errlen, "embedding %u: out of memory", a->k);
        return -1;
    }
    for (size_t i = 0; i < a->n; i++) {
        items[i].key = a->keys[i];
        items[i].weight = 1;
    }
    int rc = pl_trainset_write(a->tset, items, a->n, 0, (uint32_t)a->model,
                               err, errlen);
    free(items);
    return rc;
}

/* A new embedding job's inputs: its keys, and what it finds in its
 * environment (docs/pipelines.md, "The embedding command"). */
static int emb_prepare(sup *s, void *ctx, char *err, size_t errlen) {
    const emb_ask *a = ctx;
    if (access(a->model_path, R_OK) != 0) {
        snprintf(err, errlen, "embedding %u: model %s: %s", a->k,
                 a->model_path, strerror(errno));
        return -1;
    }
    if (emb_write_keys(a, err, errlen) != 0) return -1;
    unlink(a->out);
    sup_job_env(s, s->cfg.dataset);
    setenv("AEGIS_EMBED_KEYS", a->tset, 1);
    setenv("AEGIS_EMBED_OUT", a->out, 1);
    setenv("AEGIS_MODEL", a->model_path, 1);
    return 0;
}

/* Ask a's job; its end state into state. 0, or -1 with err. */
static int emb_job(sup *s, emb_ask *a, char *state, size_t size, char *err,
                   size_t errlen) {
    /* the folder's name: a replay's (NAME.replay) are its own */
    char name[128];
    snprintf(name, sizeof(name), "%s:e%u", strrchr(s->dir, '/') + 1, a->k);
    if (sup_run_job(s, name, &s->cfg.embedding, emb_prepare, a, state, size,
                    err, errlen) != 0)
        return -1;
    printf("embedding %u: %s (model of trigger %" PRId64 ", %zu samples)\n",
           a->k, state, a->model, a->n);
    return 0;
}

/* Runs ask a's job and keeps its answer (rows, or that it failed). */
static int emb_run(sup *s, emb_ask *a, float **out, size_t *dim,
                   char *err, size_t errlen) {
    char state[16], why[4600] = "";
    if (emb_job(s, a, state, sizeof(state), err, errlen) != 0) return -1;
    *dim = 0;
    if (strcmp(state, "done") != 0)
        snprintf(why, sizeof(why), "its job ended %s", state);
    else if (emb_read_output(a, out, dim, why, sizeof(why)) != 0)
        *dim = 0;
    if (*dim == 0)
        printf("embedding %u: %s; this detection point votes no drift\n",
               a->k, why);
    if (emb_keep(a, *out, *dim, err, errlen) != 0) return -1;
    unlink(a->out);
    unlink(a->tset);
    return 0;
}

/* The dataset's keys of the trigger's (a replay feeds places). NULL when
 * out of memory. */
static uint64_t *emb_dataset_keys(const sup *s, const uint64_t *keys,
                                  size_t n) {
    uint64_t *own = malloc((n ? n : 1) * sizeof(*own));
    for (size_t i = 0; own && i < n; i++)
        own[i] = s->replay ? s->order_keys[keys[i]] : keys[i];
    return own;
}

int sup_embed(void *ctx, const uint64_t *keys, size_t n, float **out,
              size_t *dim, char *err, size_t errlen) {
    sup *s = ctx;
    emb_ask a = {.k = s->nembeds++, .n = n};
    *out = NULL;
    *dim = 0;
    /* No fire can follow maximum_triggers: nothing to decide. */
    if (s->cfg.max_triggers > 0 && s->nfires >= s->cfg.max_triggers) return 1;
    while (s->next < s->nfires)
        if (sup_settle(s, err, errlen) != 0) return -1;
    a.model = sup_newest_model(s, a.model_path, sizeof(a.model_path));
    if (a.model < 0) return 1;
    uint64_t *own = emb_dataset_keys(s, keys, n);
    if (!own) {
        snprintf(err, errlen, "embedding %u: out of memory", a.k);
        return -1;
    }
    a.keys = own;
    a.keys_crc = emb_crc(own, n);
    sup_file(s, "embeddings", "tset", a.k, a.tset, sizeof(a.tset));
    sup_file(s, "embeddings", "out", a.k, a.out, sizeof(a.out));
    sup_file(s, "embeddings", "emb", a.k, a.kept, sizeof(a.kept));
    int rc = emb_load(&a, out, dim, err, errlen);
    if (rc == 1) rc = emb_run(s, &a, out, dim, err, errlen);
    free(own);
    if (rc == 0 && *dim == 0) {
        free(*out);
        *out = NULL;
        return 1;
    }
    return rc;
}
