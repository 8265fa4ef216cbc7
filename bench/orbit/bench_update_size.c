/* bench_update_size.c -- what an update costs on the link. The reference
 * is the five mission modules linked statically into one executable
 * (monolith.c), compressed with zstd at level 19, as replacing a
 * monolithic payload binary would send. Against it: one module's code
 * changed (downsample rounding down instead of to nearest, built from its
 * source by CMake), sent as a signed delta against the version on board
 * (zstd with the old module as prefix, long-distance matching: `zstd
 * --patch-from`), counted as the bytes of every CSP frame it takes
 * (manifest and chunks, headers and CRCs). Goal: >= 10x fewer. Also a
 * configuration change: the mission pipeline with another parameter value,
 * encoded, against the 188-byte parameter.
 *
 * Usage: bench_update_size MONOLITH OLD.so NEW.so */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "csp.h"
#include "dipp_module.h"
#include "pdef.h"
#include "platform.h"
#include "upload_msg.h"

static uint8_t *slurp(const char *path, size_t *len) {
    uint8_t *data;
    if (plat_file_read(path, &data, len)) {
        fprintf(stderr, "bench_update_size: %s: unreadable\n", path);
        exit(1);
    }
    return data;
}

/* Bytes of CSP frames an upload takes: the manifest message and each
 * chunk message, each with its header and CRC. */
static size_t link_bytes(const up_manifest *m) {
    size_t frame = CSP_HEADER_BYTES + 4;
    return frame + 3 + UP_MANIFEST_BYTES +
           (size_t)up_chunk_count(m) * (frame + 1 + UP_CHUNK_HDR) + m->payload_size;
}

static int config_change(void) {
    pdef d;
    uint8_t out[PDEF_MAX_BYTES];
    char err[256];
    const char *yaml = "pipeline: 1\nmodules:\n  - name: debayer\n  - name: crop_tile\n"
                       "    params: {tile: 224}\n  - name: cloud\n    params: {max_cover: 200}\n"
                       "  - name: downsample\n    params: {factor: 4}\n"
                       "  - name: encode_jpeg\n    params: {quality: 90}\n";
    if (pdef_from_yaml("mission", yaml, strlen(yaml), &d, err, sizeof err))
        return -1;
    int n = pdef_encode(&d, out, err, sizeof err);
    printf("config change (the 5-module mission, new values): %d bytes of %d: %s\n", n,
           PDEF_MAX_BYTES, n > 0 && n <= PDEF_MAX_BYTES ? "fits" : "does NOT fit");
    return n > 0 && n <= PDEF_MAX_BYTES ? 0 : -1;
}

int main(int argc, char **argv) {
    uint8_t pk[UP_PK_BYTES], sk[UP_SK_BYTES], *payload;
    size_t mono_len, old_len, new_len;
    char err[256];
    if (argc != 4 || sodium_init() < 0) {
        fprintf(stderr, "Usage: bench_update_size MONOLITH OLD.so NEW.so\n");
        return 2;
    }
    uint8_t *mono = slurp(argv[1], &mono_len), *old_so = slurp(argv[2], &old_len);
    uint8_t *new_so = slurp(argv[3], &new_len);
    size_t cap = ZSTD_compressBound(mono_len);
    uint8_t *z = malloc(cap);
    size_t ref = ZSTD_compress(z, cap, mono, mono_len, 19);
    crypto_sign_keypair(pk, sk);
    up_manifest m = {1, 0, 1900, "downsample", 2, DIPP_ABI_VERSION, up_board_arch(),
                     DIPP_FMT_RGB8, DIPP_FMT_RGB8, 0, 0, 1, 0, 0, 1, {0}, {0}, {0}};
    if (ZSTD_isError(ref) ||
        up_prepare(&m, new_so, new_len, old_so, old_len, 19, sk, &payload, err, sizeof err))
        return 1;
    size_t delta = link_bytes(&m);
    up_manifest whole = m;
    uint8_t *whole_payload;
    whole.flags = 0, whole.base_version = 0;
    if (up_prepare(&whole, new_so, new_len, NULL, 0, 19, sk, &whole_payload, err, sizeof err))
        return 1;
    free(whole_payload);
    double ratio = (double)ref / (double)delta;
    printf("monolith (5 modules, static): %zu bytes, zstd -19: %zu bytes\n", mono_len, ref);
    printf("one module changed (%zu-byte .so): signed delta %u bytes, %zu bytes of CSP "
           "frames on the link\n", new_len, m.payload_size, delta);
    printf("(the whole changed module, zstd -19, would be %zu bytes of frames)\n",
           link_bytes(&whole));
    printf("ratio %.1fx fewer bytes (goal >= 10x): %s\n", ratio, ratio >= 10 ? "met" : "NOT met");
    int cfg = config_change();
    free(mono), free(old_so), free(new_so), free(z), free(payload);
    return ratio >= 10 && cfg == 0 ? 0 : 1;
}
