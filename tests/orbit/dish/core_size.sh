#!/bin/bash
# core_size.sh CC [FLAGS...] -- the size of DISH's runtime core, what
# flies (bytecode, verifier with its bound, VM; not the compiler, lexer,
# disassembler or simulator), compiled with -Os by CC and FLAGS: a line
# per object (text, data, bss in bytes, as the `size` of CC's target
# counts them: text holds code and constants), then "total text N".
# With DISH_CORE_OBJ set to a directory the objects are left there (the
# M7 build links them). Example:
#   tests/orbit/dish/core_size.sh arm-none-eabi-gcc -mcpu=cortex-m7 -mthumb
set -eu
[ $# -ge 1 ] || { echo "usage: core_size.sh CC [FLAGS...]" >&2; exit 2; }
cc=$1
shift
src=$(cd "$(dirname "$0")/../../../src/orbit/dish" && pwd)
# The same files as the dish_runtime library (src/orbit/dish/CMakeLists.txt).
core="dish_bytecode.c dish_verify.c dish_bound.c dish_vm.c"

objdir=${DISH_CORE_OBJ:-}
if [ -z "$objdir" ]; then
    objdir=$(mktemp -d)
    trap 'rm -rf "$objdir"' EXIT
fi
# CC's target names its size tool: arm-none-eabi-size for arm-none-eabi-gcc.
size=$(command -v "$("$cc" -dumpmachine)-size" || command -v size)

objs=()
for f in $core; do
    "$cc" -Os -std=c11 "$@" -I"$src" -c "$src/$f" -o "$objdir/${f%.c}.o"
    objs+=("$objdir/${f%.c}.o")
done
"$size" "${objs[@]}" | awk 'NR > 1 {
    name = $6; sub(".*/", "", name)
    printf "%-16s text %6d  data %5d  bss %6d\n", name, $1, $2, $3
    total += $1
} END { printf "total text %d\n", total }'
