#!/bin/bash
# module_macro.sh CC INCLUDE_DIR SOURCE_DIR -- DIPP_MODULE with 0 for its
# parameters fails to compile with a message naming DIPP_MODULE_NO_PARAMS;
# the example modules, which pass arrays or use DIPP_MODULE_NO_PARAMS,
# compile as C11.
set -u
cc=$1 inc=$2 src=$3
fail() { echo "FAIL: $*"; exit 1; }
out=$("$cc" -std=c11 -fsyntax-only -I"$inc" "$src/no_params_zero.c" 2>&1) &&
    fail "DIPP_MODULE(..., 0, ...) compiled"
grep -q "a module without parameters uses DIPP_MODULE_NO_PARAMS(name, version, run)" \
    <<<"$out" || fail "message: $out"
for m in "$src"/../../../src/orbit/modules/downsample.c "$src"/../../../src/orbit/modules/debayer.c; do
    "$cc" -std=c11 -Wall -Wextra -Werror -fsyntax-only -I"$inc" "$m" || fail "$m"
done
echo ok
