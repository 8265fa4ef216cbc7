/* upload_install.c -- turning a complete upload into the active version:
 * the payload's hash, the delta against the version on board, the
 * module's hash and architecture, the candidate's test-run in the sandbox,
 * then the switch, which is one save of the index. An image of procedures
 * is handed to the runtime (up_config's accept) where a module is
 * test-run, and only its version is kept here. A failure drops the
 * upload (reported with its code) and leaves the active version as it was;
 * a payload whose hash is wrong is asked for again, whole. */
#include "upload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "platform.h"

static int drop(up_store *s, const up_manifest *m, int code, up_result *r) {
    char file[UP_NAME_MAX + 16];
    up_result saved = *r;
    up_module *mod = up_module_of(s, m->name);
    if (mod && code != DIPP_E_UP_STORE)
        mod->highest = m->version; /* refused once: a replay is refused too */
    s->idx.uploading = 0, s->idx.received = 0;
    up_version_file(m->name, m->version, file, sizeof file);
    plat_file_remove(s->dir, file);
    if (up_index_save(s, r))
        return r->code;
    plat_file_remove(s->dir, "upload.part");
    *r = saved;
    return r->code = code;
}

static int read_file(const up_store *s, const char *name, uint8_t **data,
                     size_t *len, up_result *r) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", s->dir, name);
    int rc = plat_file_read(path, data, len);
    return rc ? up_fail(r, DIPP_E_UP_STORE, "%s: %s", path, strerror(-rc)) : 0;
}

/* The payload on board, checked against its hash: a wrong one means a
 * chunk went bad on the way (or on board), so all are asked for again. */
static int payload_of(up_store *s, const up_manifest *m, uint8_t **payload,
                      up_result *r) {
    size_t len;
    uint8_t sha[UP_SHA_BYTES];
    if (read_file(s, "upload.part", payload, &len, r))
        return -1;
    if (len >= m->payload_size)
        up_sha256(*payload, m->payload_size, sha);
    if (len >= m->payload_size && memcmp(sha, m->payload_sha256, UP_SHA_BYTES) == 0)
        return 0;
    free(*payload);
    *payload = NULL;
    s->idx.received = 0;
    memset(s->idx.map, 0, sizeof s->idx.map);
    r->missing = up_chunk_count(m);
    if (up_index_save(s, r) == 0)
        up_fail(r, DIPP_E_UP_HASH, "%s v%u: payload hash differs: every chunk is "
                "needed again", m->name, m->version);
    return -1;
}

/* The module's bytes: the payload decoded, against the active version
 * for a delta. */
static int module_of(up_store *s, const up_manifest *m, const uint8_t *payload,
                     uint8_t **mod, up_result *r) {
    uint8_t *base = NULL, sha[UP_SHA_BYTES];
    size_t base_len = 0;
    char file[UP_NAME_MAX + 16];
    const up_module *rec = up_find(s, m->name);
    if (m->flags & UP_FLAG_DELTA) {
        up_version_file(m->name, m->base_version, file, sizeof file);
        if (!rec || rec->active != m->base_version || read_file(s, file, &base, &base_len, r))
            return up_fail(r, DIPP_E_UP_DELTA, "%s v%u: base v%u not on board",
                           m->name, m->version, m->base_version);
    }
    int rc = up_payload_decode(m, payload, base, base_len, mod, r->detail,
                               sizeof r->detail);
    free(base);
    if (rc)
        return r->code = DIPP_E_UP_DELTA;
    up_sha256(*mod, m->size, sha);
    if (memcmp(sha, m->sha256, UP_SHA_BYTES) != 0)
        return up_fail(r, DIPP_E_UP_HASH, "%s v%u: module hash differs", m->name,
                       m->version);
    if (m->kind == UP_KIND_MODULE && !up_elf_arch_ok(*mod, m->size, s->cfg.arch))
        return up_fail(r, DIPP_E_UP_ARCH, "%s v%u: not a shared object for "
                       "architecture %u", m->name, m->version, s->cfg.arch);
    return 0;
}

/* The switch: the candidate becomes active, the active previous, and the
 * old previous is garbage, all in one save. */
static int activate(up_store *s, const up_manifest *m, up_module *mod,
                    up_result *r) {
    if (mod->previous)
        up_version_file(m->name, mod->previous, s->idx.garbage, sizeof s->idx.garbage);
    mod->previous = mod->active, mod->previous_size = mod->active_size;
    memcpy(mod->previous_sha, mod->active_sha, UP_SHA_BYTES);
    mod->active = mod->highest = m->version, mod->active_size = m->size;
    memcpy(mod->active_sha, m->sha256, UP_SHA_BYTES);
    mod->failures = 0;
    s->idx.uploading = 0, s->idx.received = 0;
    if (up_index_save(s, r))
        return r->code;
    if (s->idx.garbage[0] && plat_file_remove(s->dir, s->idx.garbage) == 0)
        s->idx.garbage[0] = 0;
    plat_file_remove(s->dir, "upload.part");
    r->installed = 1;
    snprintf(r->detail, sizeof r->detail, "%s v%u active", m->name, m->version);
    return 0;
}

/* Procedures are the runtime's to keep (cfg.accept stores them): the
 * update store keeps only the version, the floor of the next, and the
 * image's hash, which marks the entry as one installed (up_module_of
 * never gives its place to another name). */
static int taken(up_store *s, const up_manifest *m, up_module *mod, up_result *r) {
    mod->highest = m->version;
    memcpy(mod->active_sha, m->sha256, UP_SHA_BYTES);
    s->idx.uploading = 0, s->idx.received = 0;
    if (up_index_save(s, r))
        return r->code;
    plat_file_remove(s->dir, "upload.part");
    r->installed = 1;
    return 0;
}

static int test_run(up_store *s, const up_manifest *m, const uint8_t *bytes,
                    up_result *r) {
    char file[UP_NAME_MAX + 16], path[600];
    if (m->kind == UP_KIND_PROCS)
        return r->code = s->cfg.accept(s->cfg.accept_ctx, m, bytes, r->detail,
                                       sizeof r->detail);
    up_version_file(m->name, m->version, file, sizeof file);
    int rc = plat_file_replace(s->dir, file, bytes, m->size);
    if (rc)
        return up_fail(r, DIPP_E_UP_STORE, "%s/%s: %s", s->dir, file, strerror(-rc));
    snprintf(path, sizeof path, "%s/%s", s->dir, file);
    r->code = s->test ? s->test(s->test_ctx, path, m, r->detail, sizeof r->detail) : 0;
    return r->code;
}

int up_install(up_store *s, up_result *r) {
    up_manifest m;
    uint8_t *payload = NULL, *bytes = NULL;
    if (up_manifest_decode(s->idx.manifest, UP_MANIFEST_BYTES, &m, r->detail,
                           sizeof r->detail))
        return r->code = DIPP_E_UP_STORE;
    if (payload_of(s, &m, &payload, r))
        return r->code;
    up_module *mod = up_module_of(s, m.name);
    int code = !mod ? up_fail(r, DIPP_E_UP_QUOTA, "%s: already %d modules on board",
                              m.name, UP_MAX_MODULES)
                    : module_of(s, &m, payload, &bytes, r);
    if (!code)
        code = test_run(s, &m, bytes, r);
    free(payload);
    free(bytes);
    if (code)
        return drop(s, &m, code, r);
    return m.kind == UP_KIND_PROCS ? taken(s, &m, mod, r) : activate(s, &m, mod, r);
}
