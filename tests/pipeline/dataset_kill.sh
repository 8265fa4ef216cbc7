#!/bin/sh
# kill -9 of the watcher at random moments, while files are moved in and
# one file keeps growing, loses no sample and registers none twice: after
# the last restart every whole record of every file is in the key log
# exactly once (check_dataset.py). Waits for events, never for the clock.
# usage: dataset_kill.sh AEGIS PYTHONDIR
set -eu
AEGIS=$1
export PYTHONPATH=$2
tmp=$(mktemp -d /tmp/aegis-kill-XXXXXX)
export AEGIS_STATE_HOME=$tmp/state
watcher=
cleanup() {
    [ -n "$watcher" ] && kill -9 "$watcher" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT

random_byte() { od -An -N1 -tu1 /dev/urandom | tr -d ' '; }
start_watcher() {
    "$AEGIS" dataset watch d --interval-s 0.05 --quiet 2>>"$tmp/err" &
    watcher=$!
}

"$AEGIS" dataset gen tabular --out "$tmp/gen" --samples 60000 --files 30
mkdir "$tmp/in"
"$AEGIS" dataset add d --dir "$tmp/in" --format binary --record-size 36 \
    --classes 4
start_watcher
grow=0
kills=0
for f in "$tmp"/gen/part-*.bin; do
    name=$(basename "$f")
    cp "$f" "$tmp/in/.$name.tmp" && mv "$tmp/in/.$name.tmp" "$tmp/in/$name"
    # the growing file: 50 records in two writes that split one of them
    for part in 0:1000 1000:800; do
        tail -c +$((grow * 36 + ${part%%:*} + 1)) "$tmp/gen/part-00000.bin" |
            head -c "${part##*:}" >> "$tmp/in/grow.bin"
    done
    grow=$((grow + 50))
    if [ $(($(random_byte) % 2)) -eq 0 ]; then
        kill -9 "$watcher"
        wait "$watcher" 2>/dev/null || true
        kills=$((kills + 1))
        start_watcher
    fi
done
want=$((60000 + grow))
# bounded well inside ctest's 180 s, so that a sample never registered is
# reported (the check's last words) rather than killed as a timeout
deadline=$(($(date +%s) + 120))
while ! /usr/bin/python3 "$(dirname "$0")/check_dataset.py" \
        "$tmp/state/datasets/d" $want > "$tmp/check" 2>&1; do
    [ "$(date +%s)" -lt $deadline ] || {
        cat "$tmp/check" "$tmp/err"; exit 1; }
    sleep 0.1
done
kill -TERM "$watcher"
wait "$watcher"
watcher=
if grep -v "another watcher" "$tmp/err" | grep -q .; then
    cat "$tmp/err"; exit 1
fi
echo "ok: $(cat "$tmp/check") after $kills kills"
