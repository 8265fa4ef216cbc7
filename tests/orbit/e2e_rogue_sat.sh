#!/usr/bin/env bash
# e2e_rogue_sat.sh DIPP ROGUE_SAT -- the ground against a node 162 that
# answers with terminal escapes and a run record numbered 2^32 - 1
# (rogue_sat.c): `dipp ground telemetry`, `proc log` and `proc list`
# print no escape byte, `proc log` ends instead of asking from record 0
# again for ever, `proc list` asks on only from a later slot, `proc run`
# says a 3-byte answer is malformed; `upload`
# and `images`, never answered but sent stale answers on another port
# every 20 ms, end when their wait does. Every process is bounded by
# `timeout`.
set -u
DIPP=$1 ROGUE=$2
DIR=$(mktemp -d /tmp/dipp-rogue-XXXXXX)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$DIR"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; cat -v "$DIR/out" >&2 2>/dev/null; exit 1; }
PORT=$((20000 + RANDOM % 11000))
timeout 60 "$ROGUE" "$PORT" 50 >"$DIR/rogue.log" 2>&1 &
PID=$!
# its hub is bound once it says so
until grep -q "rogue_sat: hub" "$DIR/rogue.log" 2>/dev/null; do
    kill -0 "$PID" 2>/dev/null || fail "rogue_sat did not start: $(cat "$DIR/rogue.log")"
    sleep 0.05
done
g() { timeout 20 "$DIPP" ground --hub "$PORT" --timeout-ms 3000 --retry-ms 500 "$@" \
      >"$DIR/out" 2>&1; rc=$?; }
g telemetry
[ $rc = 0 ] || fail "telemetry: exit $rc"
grep -q "frames=1" "$DIR/out" || fail "telemetry: no answer"
LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' "$DIR/out" && fail "telemetry printed a control byte"
g proc log
[ $rc = 124 ] && fail "proc log asked for ever"
LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' "$DIR/out" && fail "proc log printed a control byte"
# listings that say there is more from the next slot, up to slot 40, then
# from slot 40 again: asked from slots 0 to 40, once each
g proc list
[ $rc = 0 ] || fail "proc list: exit $rc"
[ "$(grep -c '^slot' "$DIR/out")" = 41 ] || fail "proc list: not slots 0 to 40 once each"
LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' "$DIR/out" && fail "proc list printed a control byte"
# an answer with the question's number, too short to hold a code, is
# malformed, not "no answer"
"$DIPP" ground keygen "$DIR/k" >/dev/null 2>&1 || fail "keygen"
g proc run --key "$DIR/k.key" 0
[ $rc = 1 ] || fail "proc run (short answer): exit $rc"
grep -q "run: a malformed answer from node 162 (3 bytes" "$DIR/out" || fail "proc run: not 'malformed'"
head -c 5000 /dev/urandom > "$DIR/m.so"
g upload --key "$DIR/k.key" --version 1 m "$DIR/m.so"
[ $rc = 124 ] && fail "upload waited for ever under stale answers"
grep -q "no answer" "$DIR/out" || fail "upload: not 'no answer'"
mkdir "$DIR/img"
g images --key "$DIR/k.key" --out "$DIR/img"
[ $rc = 124 ] && fail "images waited for ever under stale answers"
grep -q "no answer" "$DIR/out" || fail "images: not 'no answer'"
echo "ok"
