/* upload_index.c -- the update store's index: loading and checking it,
 * saving it crash-safe (the store's only commit point), and what opening
 * the store does after a power cut. */
#include "upload.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "platform.h"

int up_fail(up_result *r, int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->detail, sizeof r->detail, fmt, ap);
    va_end(ap);
    return r->code = code;
}

up_config up_config_default(void) {
    up_config c = {16u << 20, 3, up_board_arch(), NULL, NULL, 0, 0};
    return c;
}

void up_version_file(const char *name, uint32_t version, char *out, size_t cap) {
    snprintf(out, cap, "%s@%u.so", name, (unsigned)version);
}

static void checksum(const up_index *x, uint8_t out[UP_SHA_BYTES]) {
    up_sha256((const uint8_t *)x, offsetof(up_index, sum), out);
}

int up_index_save(up_store *s, up_result *r) {
    checksum(&s->idx, s->idx.sum);
    int rc = plat_file_replace(s->dir, "index", &s->idx, sizeof s->idx);
    return rc ? up_fail(r, DIPP_E_UP_STORE, "%s/index: %s", s->dir, strerror(-rc)) : 0;
}

/* The chunks of the upload in progress marked on board, which received
 * counts: none when there is no upload. */
static uint32_t chunks_marked(const up_store *s) {
    up_manifest m;
    char err[128];
    if (!s->idx.uploading ||
        up_manifest_decode(s->idx.manifest, UP_MANIFEST_BYTES, &m, err, sizeof err))
        return 0;
    return up_chunk_count(&m) - up_missing(s, NULL, 0);
}

/* The first field of a whole index (its checksum holds) that this store
 * never writes, or NULL. The checksum tells a torn file, not one another
 * build wrote or bits flipped before it was made; the store indexes its
 * table by nmods, reads names and garbage as strings, and ends the
 * upload when received reaches the chunk count. */
static const char *index_bad_field(const up_store *s) {
    const up_index *x = &s->idx;
    if (x->nmods > UP_MAX_MODULES)
        return "nmods past the end of the table";
    for (uint32_t k = 0; k < x->nmods; k++)
        if (!up_name_ok(x->mod[k].name))
            return "a module name not [a-z0-9_] and NUL-ended";
    if (!memchr(x->garbage, 0, sizeof x->garbage))
        return "garbage not NUL-ended";
    if (x->received != chunks_marked(s))
        return "received not the chunks marked";
    return NULL;
}

static int index_load(up_store *s, const uint8_t *first_pk, up_result *r) {
    char path[600];
    uint8_t *data, sum[UP_SHA_BYTES];
    size_t len;
    snprintf(path, sizeof path, "%s/index", s->dir);
    int rc = plat_file_read(path, &data, &len);
    if (rc == -ENOENT) { /* a new store: the ground's first key */
        memset(&s->idx, 0, sizeof s->idx);
        memcpy(s->idx.magic, "DIX1", 4);
        s->idx.key_serial = 1;
        memcpy(s->idx.pk, first_pk, UP_PK_BYTES);
        return up_index_save(s, r);
    }
    if (rc)
        return up_fail(r, DIPP_E_UP_STORE, "%s: %s", path, strerror(-rc));
    if (len == sizeof s->idx)
        memcpy(&s->idx, data, len);
    free(data);
    checksum(&s->idx, sum);
    if (len != sizeof s->idx || memcmp(s->idx.magic, "DIX1", 4) ||
        memcmp(sum, s->idx.sum, UP_SHA_BYTES))
        return up_fail(r, DIPP_E_UP_STORE, "%s: %zu bytes, corrupt or foreign", path, len);
    const char *bad = index_bad_field(s);
    return bad ? up_fail(r, DIPP_E_UP_STORE, "%s: %s, corrupt or foreign", path, bad) : 0;
}

/* A power cut may leave an old version after its switch, or a candidate
 * that was never activated: neither is named active or previous. */
static int sweep(up_store *s, up_result *r) {
    up_manifest m;
    char file[UP_NAME_MAX + 16], err[128];
    if (s->idx.garbage[0] && plat_file_remove(s->dir, s->idx.garbage) == 0) {
        s->idx.garbage[0] = 0;
        if (up_index_save(s, r))
            return -1;
    }
    if (!s->idx.uploading ||
        up_manifest_decode(s->idx.manifest, UP_MANIFEST_BYTES, &m, err, sizeof err))
        return 0;
    up_version_file(m.name, m.version, file, sizeof file);
    plat_file_remove(s->dir, file);
    return 0;
}

int up_open(up_store *s, const char *dir, const uint8_t first_pk[UP_PK_BYTES],
            const up_config *cfg, up_test_fn test, void *test_ctx,
            up_result *r) {
    memset(s, 0, sizeof *s);
    memset(r, 0, sizeof *r);
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    s->cfg = cfg ? *cfg : up_config_default();
    s->test = test, s->test_ctx = test_ctx;
    if (index_load(s, first_pk, r) || sweep(s, r))
        return -1;
    r->missing = up_missing(s, NULL, 0);
    if (s->idx.uploading && r->missing == 0)
        up_install(s, r); /* its outcome is r's, the store is open */
    return 0;
}

const up_module *up_find(const up_store *s, const char *name) {
    for (uint32_t k = 0; k < s->idx.nmods; k++)
        if (strcmp(s->idx.mod[k].name, name) == 0)
            return &s->idx.mod[k];
    return NULL;
}

bool up_holds_procs(const up_module *m) {
    static const uint8_t none[UP_SHA_BYTES];
    return !m->active && !m->previous &&
           memcmp(m->active_sha, none, UP_SHA_BYTES) != 0;
}

/* Whether an entry ever held an installed module (active or previous)
 * or procedure set. */
static bool up_ever_installed(const up_module *m) {
    return m->active || m->previous || up_holds_procs(m);
}

/* A place of the full table held by a name never installed (kept only
 * for a refusal's replay floor); NULL when every one was installed. */
static const up_module *up_never_installed(const up_store *s) {
    for (uint32_t k = 0; k < s->idx.nmods; k++)
        if (!up_ever_installed(&s->idx.mod[k]))
            return &s->idx.mod[k];
    return NULL;
}

bool up_module_room(const up_store *s, const char *name) {
    return up_find(s, name) || s->idx.nmods < UP_MAX_MODULES ||
           up_never_installed(s);
}

up_module *up_module_of(up_store *s, const char *name) {
    up_module *m = (up_module *)up_find(s, name);
    if (m)
        return m;
    if (s->idx.nmods < UP_MAX_MODULES)
        m = &s->idx.mod[s->idx.nmods++];
    else if (!(m = (up_module *)up_never_installed(s)))
        return NULL;
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    return m;
}

int up_active_path(const up_store *s, const char *name, char *path, size_t cap) {
    const up_module *m = up_find(s, name);
    char file[UP_NAME_MAX + 16];
    if (!m || !m->active)
        return -1;
    up_version_file(name, m->active, file, sizeof file);
    snprintf(path, cap, "%s/%s", s->dir, file);
    return 0;
}

uint32_t up_missing(const up_store *s, uint32_t *list, uint32_t max) {
    up_manifest m;
    char err[128];
    if (!s->idx.uploading ||
        up_manifest_decode(s->idx.manifest, UP_MANIFEST_BYTES, &m, err, sizeof err))
        return 0;
    uint32_t n = 0, count = up_chunk_count(&m);
    for (uint32_t k = 0; k < count; k++)
        if (!(s->idx.map[k / 8] & (1u << (k % 8)))) {
            if (list && n < max)
                list[n] = k;
            n++;
        }
    return n;
}
