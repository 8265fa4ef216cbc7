/* upload.c -- the update store's messages: a manifest is checked
 * (signature, key, ABI, architecture, version, delta base, quota) before a
 * byte of its payload is kept; chunks are kept synced and counted in the
 * index; a key rotation must be signed by the key it replaces; and a
 * module failing in flight is rolled back. */
#include "upload.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "dipp_module.h"
#include "errors.h"
#include "platform.h"

static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static uint64_t bytes_kept(const up_store *s) {
    uint64_t n = 0;
    for (uint32_t k = 0; k < s->idx.nmods; k++)
        n += (uint64_t)s->idx.mod[k].active_size + s->idx.mod[k].previous_size;
    return n;
}

/* What a manifest must pass before its upload starts. */
static int admit(const up_store *s, const up_manifest *m, up_result *r) {
    const up_module *mod = up_find(s, m->name);
    int procs = m->kind == UP_KIND_PROCS;
    if (m->key_serial != s->idx.key_serial || !up_manifest_verify(m, s->idx.pk))
        return up_fail(r, DIPP_E_UP_SIGNATURE, "%s v%u: signature does not verify "
                       "with key %u", m->name, m->version, s->idx.key_serial);
    if (procs && !s->cfg.accept)
        return up_fail(r, DIPP_E_UP_PROCS, "%s v%u: this board runs no procedures",
                       m->name, m->version);
    if (procs && m->abi != s->cfg.procs_version)
        return up_fail(r, DIPP_E_UP_PROCS, "%s v%u: bytecode version %u is unknown "
                       "(this runtime runs %u)", m->name, m->version, m->abi,
                       s->cfg.procs_version);
    if (procs && m->size > s->cfg.procs_max_bytes)
        return up_fail(r, DIPP_E_UP_PROCS, "%s v%u: an image of %u bytes, the runtime "
                       "takes %u at most", m->name, m->version, m->size,
                       s->cfg.procs_max_bytes);
    if (!procs && m->abi != DIPP_ABI_VERSION)
        return up_fail(r, DIPP_E_ABI, "%s v%u: ABI version %u, board runs %u",
                       m->name, m->version, m->abi, DIPP_ABI_VERSION);
    if (!procs && m->arch != s->cfg.arch)
        return up_fail(r, DIPP_E_UP_ARCH, "%s v%u: architecture %u, board is %u",
                       m->name, m->version, m->arch, s->cfg.arch);
    /* an entry keeps one active hash: an image's written over a module's
     * (or the reverse) hid the active one from the ground's resend */
    if (mod && (procs ? mod->active != 0 : up_holds_procs(mod)))
        return up_fail(r, DIPP_E_UP_PROCS, "%s v%u: %s name on board; %s takes a "
                       "name of its own", m->name, m->version,
                       procs ? "a module's" : "an image of procedures'",
                       procs ? "an image of procedures" : "a module");
    if (mod && m->version <= mod->highest)
        return up_fail(r, DIPP_E_UP_REPLAY, "%s v%u: not above v%u, the highest "
                       "accepted", m->name, m->version, mod->highest);
    /* a delta applies to the active version alone: say which that is, or
     * that there is none ("board runs v0" read as a version) */
    if ((m->flags & UP_FLAG_DELTA) && (!mod || !mod->active))
        return up_fail(r, DIPP_E_UP_DELTA, "%s v%u: a delta against v%u, but no "
                       "version of %s is active on board to apply it to (send it "
                       "whole)", m->name, m->version, m->base_version, m->name);
    if ((m->flags & UP_FLAG_DELTA) && mod->active != m->base_version)
        return up_fail(r, DIPP_E_UP_DELTA, "%s v%u: a delta against v%u, but v%u is "
                       "the version active on board, the only one a delta applies to",
                       m->name, m->version, m->base_version, mod->active);
    if (!up_module_room(s, m->name))
        return up_fail(r, DIPP_E_UP_QUOTA, "%s: already %d modules on board",
                       m->name, UP_MAX_MODULES);
    uint64_t need = bytes_kept(s) + m->payload_size + m->size;
    if (need > s->cfg.quota_bytes)
        return up_fail(r, DIPP_E_UP_QUOTA, "%s v%u: needs %llu bytes of a %llu quota",
                       m->name, m->version, (unsigned long long)need,
                       (unsigned long long)s->cfg.quota_bytes);
    return 0;
}

int up_on_manifest(up_store *s, const uint8_t *msg, size_t len, up_result *r) {
    up_manifest m;
    memset(r, 0, sizeof *r);
    uint8_t canon[UP_MANIFEST_BYTES];
    if (up_manifest_decode(msg, len, &m, r->detail, sizeof r->detail))
        return r->code = DIPP_E_UP_MESSAGE;
    /* compared and kept as encoded from its fields: bytes the decoder
     * passes over (a name's padding), which the signature does not cover,
     * must not make a copy a new upload, resetting the one in flight */
    up_manifest_encode(&m, canon);
    if (s->idx.uploading &&
        memcmp(canon, s->idx.manifest, UP_MANIFEST_BYTES) == 0) { /* resumed */
        r->missing = up_missing(s, NULL, 0);
        return r->missing ? 0 : up_install(s, r);
    }
    if (admit(s, &m, r))
        return r->code;
    s->idx.uploading = 1, s->idx.received = 0;
    memcpy(s->idx.manifest, canon, UP_MANIFEST_BYTES);
    memset(s->idx.map, 0, sizeof s->idx.map);
    r->missing = up_chunk_count(&m);
    return up_index_save(s, r);
}

int up_on_chunk(up_store *s, const uint8_t *msg, size_t len, up_result *r) {
    up_manifest m;
    memset(r, 0, sizeof *r);
    if (!s->idx.uploading || len < UP_CHUNK_HDR ||
        up_manifest_decode(s->idx.manifest, UP_MANIFEST_BYTES, &m, r->detail,
                           sizeof r->detail))
        return up_fail(r, DIPP_E_UP_MESSAGE, "chunk of %zu bytes: no upload in "
                       "progress", len);
    uint32_t k = get32(msg + 4), off = k * (uint32_t)m.chunk_size;
    uint32_t count = up_chunk_count(&m);
    size_t want = k + 1 < count ? m.chunk_size : m.payload_size - off;
    if (get32(msg) != up_tag(&m) || k >= count || len - UP_CHUNK_HDR != want)
        return up_fail(r, DIPP_E_UP_MESSAGE, "%s v%u: chunk %u of %zu bytes does not "
                       "belong to it", m.name, m.version, k, len - UP_CHUNK_HDR);
    if (!(s->idx.map[k / 8] & (1u << (k % 8)))) {
        int rc = plat_file_write_synced(s->dir, "upload.part", off,
                                        msg + UP_CHUNK_HDR, want);
        if (rc)
            return up_fail(r, DIPP_E_UP_STORE, "%s/upload.part: %s", s->dir,
                           strerror(-rc));
        s->idx.map[k / 8] |= (uint8_t)(1u << (k % 8));
        s->idx.received++;
        if (up_index_save(s, r))
            return r->code;
    }
    r->missing = count - s->idx.received;
    return r->missing ? 0 : up_install(s, r);
}

int up_on_rotate(up_store *s, const uint8_t *msg, size_t len, up_result *r) {
    memset(r, 0, sizeof *r);
    if (len != UP_ROTATE_BYTES || memcmp(msg, "DKR1", 4) != 0)
        return up_fail(r, DIPP_E_UP_MESSAGE, "key rotation: %zu bytes, not a DKR1 "
                       "message of %d", len, UP_ROTATE_BYTES);
    /* the rotation in effect, asked again (its answer was lost): signed
     * by the key it replaced, which is gone, and changing nothing */
    if (get32(msg + 4) == s->idx.key_serial &&
        sodium_memcmp(msg + 8, s->idx.pk, UP_PK_BYTES) == 0)
        return 0;
    if (sodium_init() < 0 ||
        crypto_sign_verify_detached(msg + 40, msg, 40, s->idx.pk) != 0)
        return up_fail(r, DIPP_E_UP_SIGNATURE, "key rotation: not signed by key %u",
                       s->idx.key_serial);
    /* a key nothing can sign for (zeros, a point of small order) would
     * lock the uplink out for good */
    if (!crypto_core_ed25519_is_valid_point(msg + 8))
        return up_fail(r, DIPP_E_UP_MESSAGE, "key rotation to key %u: not an "
                       "Ed25519 public key", get32(msg + 4));
    if (get32(msg + 4) != s->idx.key_serial + 1)
        return up_fail(r, DIPP_E_UP_REPLAY, "key rotation to key %u: board has "
                       "key %u", get32(msg + 4), s->idx.key_serial);
    s->idx.key_serial++;
    memcpy(s->idx.pk, msg + 8, UP_PK_BYTES);
    return up_index_save(s, r);
}

/* The failing version goes; the previous one is active again. */
static int roll_back(up_store *s, up_module *mod, up_result *r) {
    uint32_t bad = mod->active;
    up_version_file(mod->name, bad, s->idx.garbage, sizeof s->idx.garbage);
    mod->active = mod->previous, mod->active_size = mod->previous_size;
    memcpy(mod->active_sha, mod->previous_sha, UP_SHA_BYTES);
    mod->previous = 0, mod->previous_size = 0, mod->failures = 0;
    if (up_index_save(s, r))
        return r->code;
    if (plat_file_remove(s->dir, s->idx.garbage) == 0)
        s->idx.garbage[0] = 0; /* saved with the next change */
    return up_fail(r, DIPP_E_UP_ROLLBACK, "%s: v%u failed %u times in a row: "
                   "rolled back to v%u", mod->name, bad, s->cfg.fail_limit,
                   mod->active);
}

int up_on_run(up_store *s, const char *name, int code, up_result *r) {
    memset(r, 0, sizeof *r);
    up_module *mod = (up_module *)up_find(s, name);
    if (!mod || !mod->active || (code == 0 && mod->failures == 0))
        return 0;
    mod->failures = code ? mod->failures + 1 : 0;
    if (mod->failures >= s->cfg.fail_limit && mod->previous)
        return roll_back(s, mod, r);
    return up_index_save(s, r);
}
