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
[ $? -eq 1 ] && grep -q "/dev/full: No space left" "$tmp/err" ||
    fail "compile to a full disk: $(cat "$tmp/err")"

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
"$dish" frobnicate 2>/dev/null
[ $? -eq 2 ] || fail "unknown command exit"
"$dish" --help | grep -q "Exit status" || fail help
echo ok
