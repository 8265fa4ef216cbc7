#!/bin/bash
# m7_build.sh HOST_CC -- DISH's runtime for the payload's Cortex-M7, as CI
# builds it: the core (core_size.sh) and the stub board
# (src/orbit/dish/port) compiled with Debian's arm-none-eabi-gcc, linked
# against newlib-nano and nosys, so that a missing symbol fails the link;
# the linked program must hold the runtime and no heap (malloc, free,
# realloc, calloc, sbrk); the core's printf forms must be ones the
# board's formatter writes; and the core compiled with -Os must stay
# within 32 KiB of text on x86-64 (HOST_CC) and on the M7. Prints the
# sizes. Exits 77 (skipped) without arm-none-eabi-gcc.
set -u
[ $# -eq 1 ] || { echo "usage: m7_build.sh HOST_CC" >&2; exit 2; }
command -v arm-none-eabi-gcc >/dev/null || { echo "SKIP: no arm-none-eabi-gcc"; exit 77; }
host_cc=$1
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../../src/orbit/dish" && pwd)
limit=32768
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

m7=(-mcpu=cortex-m7 -mthumb -mfpu=fpv5-d16 -mfloat-abi=hard -Wall -Wextra -Werror
    -ffunction-sections -fdata-sections)

# The core for the M7, its objects kept for the link.
mkdir "$tmp/core"
DISH_CORE_OBJ=$tmp/core "$here/core_size.sh" arm-none-eabi-gcc "${m7[@]}" > "$tmp/m7.txt" ||
    fail "the core does not compile for the Cortex-M7"
arm-none-eabi-gcc -Os -std=c11 "${m7[@]}" -I"$src" -I"$src/port" "$tmp"/core/*.o \
    "$src"/port/m7_*.c --specs=nano.specs --specs=nosys.specs -Wl,--gc-sections \
    -Wl,-Map="$tmp/dish_m7.map" -o "$tmp/dish_m7.elf" ||
    fail "the stub board does not compile or link for the Cortex-M7"

syms=$(arm-none-eabi-nm "$tmp/dish_m7.elf" | awk '{ print $NF }')
for need in dish_verify dish_vm_load dish_vm_tick m7_dish_task; do
    grep -qx "$need" <<<"$syms" || fail "the M7 program lacks $need"
done
heap=$(grep -E '^_*(malloc|free|realloc|calloc|sbrk)(_r)?$|^__malloc' <<<"$syms" | tr '\n' ' ')
[ -z "$heap" ] || fail "the M7 program holds the heap: $heap"

# Every printf form in the core is one m7_format.c writes.
forms=$(cd "$src" && grep -ho '%[-0-9.*]*[hlzjtL]*[a-zA-Z%]' dish_bytecode.c dish_verify.c \
        dish_bound.c dish_vm.c | sort -u)
odd=$(grep -Ev '^%[-0]*[0-9]*(z|l|ll)?[diuxcs%]$' <<<"$forms" | tr '\n' ' ')
[ -z "$odd" ] || fail "the core uses printf forms the board's formatter lacks: $odd"

"$here/core_size.sh" "$host_cc" -Wall -Wextra -Werror > "$tmp/x86.txt" ||
    fail "the core does not compile with $host_cc"
x86=$(awk '/^total text/ { print $3 }' "$tmp/x86.txt")
arm=$(awk '/^total text/ { print $3 }' "$tmp/m7.txt")
echo "runtime core, -Os, x86-64 ($host_cc):"
cat "$tmp/x86.txt"
echo "runtime core, -Os, Cortex-M7 (arm-none-eabi-gcc):"
cat "$tmp/m7.txt"
echo "the linked M7 program (core, stub board, newlib-nano's pieces):"
arm-none-eabi-size "$tmp/dish_m7.elf" | sed 's/^/  /'
[ "$x86" -le "$limit" ] || fail "x86-64: $x86 bytes of text, over $limit"
[ "$arm" -le "$limit" ] || fail "Cortex-M7: $arm bytes of text, over $limit"
echo "ok: no heap; text $x86 (x86-64) and $arm (Cortex-M7) bytes, limit $limit"
