#!/usr/bin/env bash
# e2e_dish_day.sh DIPP DISH MODULES DAY.dish -- a simulated day of DISH on
# board, compressed in time: ground, link simulator (10 % loss, 1 %
# corrupted frames) and satellite (clock 12000 times the wall's, main
# processor asleep) as real processes. The ground uploads the day's
# procedures over the lossy link, lists them, runs one with an argument,
# is refused deleting a called one (reason shown, exit 1) and an image of
# an unknown bytecode version; then runs the day: 15 orbits, a capture
# over each of two latitude bands per orbit through the real DIPP
# pipeline, the cores awake only for each. From the ground's telemetry:
# the run started and ended, 30 captures ok, 30 images in the ring (3
# downlinked), 600 s awake for 30 captures of 20 s. Then the satellite
# restarts: the procedures come back from its store, a delete stays
# deleted, a corrupted store is refused with a log line, and while the
# cores sleep the camera's frames are not processed. Waits are on
# answers and telemetry records, each bounded; the processes are stopped
# on exit.
set -u
DIPP=$1 DISH=$2 MODS=$3 DAY=$4
DIR=$(mktemp -d /tmp/dish-day-XXXXXX)
SAT_PID=
LINK_PID=
cleanup() {
    for p in $SAT_PID $LINK_PID; do kill "$p" 2>/dev/null; done
    for p in $SAT_PID $LINK_PID; do wait "$p" 2>/dev/null; done
    rm -rf "$DIR"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    cat "$DIR/out" >&2 2>/dev/null
    tail -20 "$DIR/sat.log" >&2 2>/dev/null
    exit 1
}
# below the ephemeral ports (32768 on): the hubs also bind PORT + 1000
GPORT=$((20000 + RANDOM % 11000)); SPORT=$((GPORT + 1))
# asked every 150 ms, for 6 s without an answer
g() { timeout 60 "$DIPP" ground --hub "$GPORT" --timeout-ms 6000 --retry-ms 150 "$@" \
      >"$DIR/out" 2>&1; rc=$?; }
has() { grep -qF -- "$1" "$DIR/out" || fail "no '$1' in: $(cat "$DIR/out")"; }
tm() { sed -n "s/^$1=//p" "$DIR/out"; }
sat() {
    timeout 120 "$DIPP" sat --store "$DIR/store" --modules "$MODS" --key "$DIR/k.pub" \
        --hub "$SPORT" --frame-ms 0 --frame-size 448 --speed 12000 --pipe-s 20 --asleep \
        "$@" >>"$DIR/sat.log" 2>&1 &
    SAT_PID=$!
    g ping; [ $rc = 0 ] || fail "the satellite does not answer"
}
restart() {
    kill "$SAT_PID"; wait "$SAT_PID" 2>/dev/null
    sat "$@"
}

g keygen "$DIR/k"; [ $rc = 0 ] || fail "keygen: $rc"
timeout 120 "$DIPP" link --ground "$GPORT" --sat "$SPORT" --loss 0.1 --corrupt 0.01 \
    --latency-ms 10 --bit-rate 2000000 --seed 5 >"$DIR/link.log" 2>&1 &
LINK_PID=$!
sat
cat >"$DIR/p1.yaml" <<'YAML'
pipeline: 1
modules:
  - name: debayer
  - name: downsample
    params: {factor: 2}
  - name: encode_png
YAML
g slot --key "$DIR/k.key" --pipeline 1 "$DIR/p1.yaml"; [ $rc = 0 ] || fail "slot: $rc"

# upload over the lossy link, list, run with an argument
g proc upload --key "$DIR/k.key" --version 1 "$DAY"; [ $rc = 0 ] || fail "upload: $rc"
has "dish_day v1 installed"; has "slots 30 31 32 loaded"
g proc list; [ $rc = 0 ] || fail "list: $rc"
has "slot 30: dish_day v1, 1 args"; has "slot 31: dish_day v1, 3 args"; has "slot 32:"
K="--key $DIR/k.key"
g proc run $K 32 21; [ $rc = 0 ] || fail "run 32: $rc"; has "slot 32: run"
g proc run $K 32; [ $rc = 1 ] || fail "run without its argument: $rc"
has "slot 32 takes 1 arguments: not started"
g proc delete $K 31; [ $rc = 1 ] || fail "deleting a called procedure: $rc"
has "slot 31 is called by another procedure: not deleted"
g proc upload --key "$DIR/k.key" --version 2 "$DAY"; [ $rc = 1 ] || fail "slots taken: $rc"
has "error 1011000"; has "slot 30 is taken"
"$DISH" compile "$DAY" -o "$DIR/v9.dbc" || fail "dish compile"
printf '\x09' | dd of="$DIR/v9.dbc" bs=1 seek=4 conv=notrunc 2>/dev/null # version 9
g proc upload --key "$DIR/k.key" --version 3 --name future "$DIR/v9.dbc"
[ $rc = 1 ] || fail "unknown version: $rc"; has "bytecode version 9 is unknown"

# the day: run, then read the run records until the run's end (at most 120 asks)
g proc log; next=$(sed -n 's/^next //p' "$DIR/out")
cp "$DIR/out" "$DIR/records"
grep -q 'slot 32 end   0 42' "$DIR/records" || fail "twice(21) did not end with 42"
g proc run $K 30 1; [ $rc = 0 ] || fail "run day: $rc"
for _ in $(seq 120); do
    g proc log --from "$next"; [ $rc = 0 ] || continue
    grep -v '^next ' "$DIR/out" >>"$DIR/records"; next=$(sed -n 's/^next //p' "$DIR/out")
    grep -q 'slot 30 end ' "$DIR/records" && break
done
cp "$DIR/records" "$DIR/out"
has "slot 30 start 30 0"; has "slot 30 end   0 30"; has "slot 30 tm    100 30"
[ "$(grep -cE 'slot 30 tm +1 1$' "$DIR/records")" = 30 ] || fail "not 30 captures ok"
grep -q ' fault ' "$DIR/records" && fail "a run faulted"
g telemetry; [ $rc = 0 ] || fail "telemetry: $rc"
[ "$(tm images_processed)" = 30 ] || fail "images processed: $(tm images_processed)"
[ "$(tm ring_images)" = 30 ] || fail "images in the ring: $(tm ring_images)"
[ "$(tm dish.wakes)" = 30 ] || fail "wakes: $(tm dish.wakes)"
awake=$(tm dish.awake_s); sim=$(tm dish.sim_s)
awk -v a="$awake" 'BEGIN { exit !(a >= 600 && a <= 630) }' || fail "awake $awake s for 600 s needed"
has "dish.started=2"; has "dish.ended=2"; has "dish.faults=0" # twice(21), the day
mkdir "$DIR/down"
g images $K --out "$DIR/down" --max 3; [ $rc = 0 ] || fail "images: $rc"; has "3 images downlinked"
g telemetry; [ "$(tm ring_images)" = 27 ] || fail "3 images downlinked, $(tm ring_images) kept"

# commands only the ground's key signs, each once (docs/orbit.md, "Signed commands")
refused=$(tm commands_refused)
g keygen "$DIR/other"; [ $rc = 0 ] || fail "keygen other: $rc"
g proc delete --key "$DIR/other.key" 30; [ $rc = 1 ] || fail "delete, another key: $rc"
has "delete refused: error 1002000"; has "does not verify with the key on board"
g proc run --key "$DIR/k.key" --counter 5 32 21; [ $rc = 1 ] || fail "an old counter: $rc"
has "run refused: error 1003000"; has "the command counter is not above"
g proc stop 30; [ $rc = 2 ] || fail "stop without a key: $rc"
# an image acknowledged with another key stays in the ring, and the
# ground stops there rather than take it down again and again
g images --key "$DIR/other.key" --out "$DIR/down"; [ $rc = 1 ] || fail "images: $rc"
has "acknowledgement refused: error 1002000"; has "1 images downlinked"
g telemetry; [ "$(tm ring_images)" = 27 ] || fail "removed on another key's word"
[ "$(tm commands_refused)" -ge $((refused + 3)) ] || fail "refused: $refused, then $(tm commands_refused)"

# the store across restarts
restart
g proc list; has "slot 30: dish_day v1"; has "slot 32: dish_day v1"
g proc delete $K 32; [ $rc = 0 ] || fail "delete 32: $rc"; has "slot 32 deleted"
restart
g proc list; has "slot 31: dish_day v1"; grep -q "slot 32" "$DIR/out" && fail "32 came back"
printf 'X' | dd of="$DIR/store/procedures" bs=1 seek=40 conv=notrunc 2>/dev/null
restart --frame-ms 50 # frames now, the cores asleep
grep -q "procedures: record 1 at byte 4 ('dish_day' v1): CRC-32 mismatch" "$DIR/sat.log" ||
    fail "no log line for the corrupted store"
g proc list; has "no procedures on board"
# while the main processor sleeps the camera's frames are not processed
for _ in $(seq 60); do g telemetry; [ "$(tm frames_asleep)" -ge 3 ] && break; done
[ "$(tm frames_asleep)" -ge 3 ] || fail "no frames shot asleep"; has "frames=0"
echo "e2e_dish_day: ok (30 captures, awake $awake s of a ${sim} s day)"
