#!/bin/bash
# device_pack.sh -- packs a build's acceptance binaries with the shared
# libraries they need beyond the C library, for a GPU machine that cannot
# build aegisd (no -dev packages, no network): device_run.sh uses the pack
# when it finds one in .device-build (carry that folder along).
#
# usage: tests/gpu/device_pack.sh [BUILD_DIR [DEST]]
#        (defaults: build/, .device-build/ in the repository)
# The binaries keep their build paths under DEST (src/daemon/aegisd...), so
# acceptance.sh takes DEST as its build folder; the libraries go to DEST/lib.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
DEST=${2:-$ROOT/.device-build}
rm -rf "$DEST"
mkdir -p "$DEST/lib"
for bin in src/daemon/aegisd src/cli/aegis src/testgpu/aegis-gpuburn \
           tests/feed/test_feed_gpu; do
    [ -x "$BUILD/$bin" ] || { echo "device_pack: no $BUILD/$bin" >&2; continue; }
    mkdir -p "$DEST/$(dirname "$bin")"
    cp "$BUILD/$bin" "$DEST/$bin"
    # every resolved library but the C library's own, which the machine has
    ldd "$BUILD/$bin" | awk '$3 ~ /^\// {print $3}' |
        grep -vE '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*)\.so' |
        while read -r lib; do cp -L "$lib" "$DEST/lib/"; done
done
du -sh "$DEST" | sed 's/^/device_pack: /'
