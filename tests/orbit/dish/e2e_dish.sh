#!/bin/bash
# e2e_dish.sh DISH PROCEDURES -- the `dish` command end to end: a good
# procedure checks (with its instruction bound), compiles, disassembles
# and runs on the simulator; a bad source, a procedure over the bound,
# corrupt bytecode and wrong usage give exit codes 1, 1, 1, 2.
set -u
dish=$1 procs=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

out=$("$dish" check "$procs/retry_capture.dish") || fail check
grep -q "1 procedures" <<<"$out" || fail "check: $out"
grep -Eq "^  slot 5: at most [0-9]+ instructions a run" <<<"$out" || fail "check bound: $out"
"$dish" compile "$procs/retry_capture.dish" -o "$tmp/r.dbc" || fail compile
"$dish" disasm "$tmp/r.dbc" | grep -q "WAIT cond" || fail disasm
out=$("$dish" run --sim --hours 1 "$tmp/r.dbc") || fail run
grep -q "end   0 1" <<<"$out" || fail "run: $out"
grep -q "awake 1 times" <<<"$out" || fail "power: $out"

# A fault record names its code and the offset past the instruction at
# fault; docs/orbit.md's table of faults has a row for each code
# dish_vm.h defines (the codes were documented nowhere).
printf 'proc p() {\n  let z = 0\n  tm(1, 5 / z)\n}\n' > "$tmp/div.dish"
"$dish" compile "$tmp/div.dish" -o "$tmp/div.dbc" || fail "compile div"
"$dish" disasm "$tmp/div.dbc" | grep -q "^ *10 DIV" || fail "DIV not at 10"
out=$("$dish" run --sim --hours 0.01 "$tmp/div.dbc")
grep -q "fault 1 11" <<<"$out" || fail "division by zero: $out"
root=$procs/../../..
faults=$(sed -n '/^typedef enum dish_fault/,/} dish_fault;/p' "$root/src/orbit/dish/dish_vm.h" |
         grep -c 'DISH_FAULT_')
[ "$faults" -ge 5 ] || fail "dish_fault read as $faults codes"
sed -n '/^| fault | the run was stopped/,/^$/p' "$root/docs/orbit.md" > "$tmp/table"
for code in $(seq 1 "$faults"); do
    grep -q "^| $code | " "$tmp/table" || fail "docs/orbit.md: no row for fault $code"
done
[ "$(grep -c '^| [0-9]' "$tmp/table")" -eq "$faults" ] || fail "docs/orbit.md: faults not in dish_vm.h"

printf 'proc p() {\n  let x = \n}\n' > "$tmp/bad.dish"
"$dish" check "$tmp/bad.dish" 2> "$tmp/err"
[ $? -eq 1 ] || fail "bad source exit"
grep -q "bad.dish:3:1: an expression expected" "$tmp/err" || fail "message: $(cat "$tmp/err")"

printf 'proc p() {\n  repeat 10000 {\n    repeat 10000 { tm(1, 2) }\n  }\n}\n' > "$tmp/long.dish"
"$dish" check "$tmp/long.dish" 2> "$tmp/err"
[ $? -eq 1 ] || fail "over-long procedure exit"
grep -q "instructions, the limit is 10000000" "$tmp/err" || fail "bound: $(cat "$tmp/err")"

# an output that cannot be written (a full disk): said, exit 1 (its
# close failing closed the file twice: a double free, SIGABRT)
"$dish" compile "$procs/retry_capture.dish" -o /dev/full 2> "$tmp/err"
[ $? -eq 1 ] && grep -q "^dish: /dev/full: No space left" "$tmp/err" ||
    fail "compile to a full disk: $(cat "$tmp/err")"
# a file that is not there: said after "dish:", as every message is
for c in check disasm; do
    "$dish" $c "$tmp/nonexist" 2> "$tmp/err"
    [ $? -eq 1 ] && grep -q "^dish: $tmp/nonexist: No such file or directory" "$tmp/err" ||
        fail "$c of no file: $(cat "$tmp/err")"
done
"$dish" run --sim "$tmp/nonexist.dbc" 2> "$tmp/err"
[ $? -eq 1 ] && grep -q "^dish: $tmp/nonexist.dbc: No such file" "$tmp/err" ||
    fail "run of no file: $(cat "$tmp/err")"

head -c 20 "$tmp/r.dbc" > "$tmp/cut.dbc"
"$dish" disasm "$tmp/cut.dbc" 2>/dev/null
[ $? -eq 1 ] || fail "truncated bytecode exit"
"$dish" run "$tmp/r.dbc" 2>/dev/null
[ $? -eq 2 ] || fail "run without --sim exit"
"$dish" check "$tmp" 2> "$tmp/err"
[ $? -eq 1 ] && grep -q "not a regular file" "$tmp/err" || fail "check of a folder"
for bad in "--hours nan" "--speed nan" "--hours -1"; do
    "$dish" run --sim $bad "$tmp/r.dbc" 2> "$tmp/err"
    [ $? -eq 2 ] && grep -q "wants a number" "$tmp/err" || fail "run $bad accepted"
done
# the limit in full (it said 1e+09)
"$dish" run --sim --speed -1 "$tmp/r.dbc" 2> "$tmp/err"
grep -q "speed wants a number from 0 to 1000000000$" "$tmp/err" || fail "--speed: $(cat "$tmp/err")"
"$dish" frobnicate 2>/dev/null
[ $? -eq 2 ] || fail "unknown command exit"
"$dish" --help | grep -q "Exit status" || fail help
echo ok
