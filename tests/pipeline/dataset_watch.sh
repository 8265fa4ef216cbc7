#!/bin/sh
# Files appearing over time in a watched folder are registered as they
# arrive (inotify: the scan interval is an hour), a bad file is reported
# with its offset and does not stop the watcher, and SIGTERM ends it
# cleanly. Waits for each registration, never for the clock.
# usage: dataset_watch.sh AEGIS PYTHONDIR
set -eu
AEGIS=$1
export PYTHONPATH=$2
tmp=$(mktemp -d /tmp/aegis-watch-XXXXXX)
export AEGIS_STATE_HOME=$tmp/state
watcher=
cleanup() {
    [ -n "$watcher" ] && kill "$watcher" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT

samples() {
    "$AEGIS" dataset show d --json | /usr/bin/python3 -c \
        'import json,sys; print(json.load(sys.stdin)["samples"])'
}
# Polls (up to 60 s on a loaded machine) until dataset d has $1 samples.
wait_samples() {
    n=0
    while [ "$(samples)" != "$1" ]; do
        n=$((n + 1))
        [ $n -lt 600 ] || { echo "FAIL: $(samples) samples, want $1"; exit 1; }
        sleep 0.1
    done
}

"$AEGIS" dataset gen tabular --out "$tmp/gen" --samples 4000 --files 8
mkdir "$tmp/in"
"$AEGIS" dataset add d --dir "$tmp/in" --format binary --record-size 36 \
    --classes 4
"$AEGIS" dataset watch d --interval-s 3600 > "$tmp/watch.out" 2>&1 &
watcher=$!
want=0
for f in "$tmp"/gen/part-*.bin; do
    name=$(basename "$f")
    if [ $((want % 1000)) -eq 0 ]; then
        cp "$f" "$tmp/in/.$name.tmp" && mv "$tmp/in/.$name.tmp" "$tmp/in/$name"
    else
        cp "$f" "$tmp/in/$name"  # closed after writing
    fi
    want=$((want + 500))
    wait_samples $want
done

# A truncated record: reported with file and offset once the file is
# complete (moved in, unchanged for a minute), and the watcher goes on.
head -c 3610 "$tmp/gen/part-00000.bin" > "$tmp/short.bin"
touch -d '2 minutes ago' "$tmp/short.bin"
mv "$tmp/short.bin" "$tmp/in/short.bin"
cp "$tmp/gen/part-00001.bin" "$tmp/in/after.bin"
want=$((want + 100 + 500))
wait_samples $want
"$AEGIS" dataset show d | grep -q "short.bin at byte 3600: truncated record" \
    || { echo "FAIL: the truncated record is not shown"; exit 1; }

kill -TERM "$watcher"
rc=0
wait "$watcher" || rc=$?
watcher=
[ $rc -eq 0 ] || { echo "FAIL: the watcher exited $rc on SIGTERM"; exit 1; }
grep -q "(stopped)" "$tmp/watch.out" || { echo "FAIL: no final line"; exit 1; }
/usr/bin/python3 "$(dirname "$0")/check_dataset.py" \
    "$tmp/state/datasets/d" $want
echo "ok"
