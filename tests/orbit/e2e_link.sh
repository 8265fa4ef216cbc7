#!/usr/bin/env bash
# e2e_link.sh DIPP EXAMPLE_MODULES TEST_MODULES -- ground and satellite over
# loopback ZMQ through the link simulator (10 % loss, 2 % corrupted frames,
# latency, 4 s passes every 5 s): the ground uploads a signed module, the
# satellite test-runs and activates it; the camera's frames go through a
# pipeline using it (written signed into its slot; an older or foreign
# write is refused); telemetry shows the counts; a crashing upload is
# refused at its test-run, and one that fails in flight is rolled back;
# images come down; a delta against a version not active on board is
# refused, saying where its base version came from, and installs when the
# base is named; help and usage errors of the three commands. Every
# process is bounded by `timeout` and stopped.
set -u
DIPP=$1 MODS=$2 TMODS=$3
DIR=$(mktemp -d /tmp/dipp-link-XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
    rm -rf "$DIR"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; cat "$DIR/out" "$DIR/link.log" "$DIR/sat.log" >&2 2>/dev/null; exit 1; }
# below the ephemeral ports (32768 on): the hubs also bind PORT + 1000
GPORT=$((20000 + RANDOM % 11000)); SPORT=$((GPORT + 1))
# asked every 400 ms, for 16 s without an answer (a pass is 4 s every 5)
g() { timeout 120 "$DIPP" ground --hub "$GPORT" --timeout-ms 16000 --retry-ms 400 "$@" \
      >"$DIR/out" 2>&1; rc=$?; }
has() { grep -qF -- "$1" "$DIR/out" || fail "no '$1' in: $(cat "$DIR/out")"; }
# until_tm TEXT: telemetry until it shows TEXT (at most 60 asks)
until_tm() {
    for _ in $(seq 60); do g telemetry; grep -qF -- "$1" "$DIR/out" && return 0; done
    fail "telemetry never showed '$1'"
}

for c in sat link ground; do
    timeout 20 "$DIPP" $c --help >"$DIR/out" 2>&1 || fail "$c --help"
    timeout 20 "$DIPP" $c >/dev/null 2>&1; [ $? = 2 ] || fail "$c without arguments: not 2"
done
g upload --version 1 copy; [ $rc = 2 ] || fail "upload without a key: $rc"
g keygen "$DIR/k1"; [ $rc = 0 ] || fail "keygen: $rc"
timeout 300 "$DIPP" link --ground "$GPORT" --sat "$SPORT" --loss 0.1 --corrupt 0.02 \
    --latency-ms 20 --bit-rate 2000000 --pass-s 4 --period-s 5 --seed 7 >"$DIR/link.log" 2>&1 &
PIDS+=($!)
timeout 300 "$DIPP" sat --store "$DIR/store" --modules "$MODS" --key "$DIR/k1.pub" \
    --hub "$SPORT" --frame-ms 300 --frame-size 448 --timeout-ms 3000 >"$DIR/sat.log" 2>&1 &
PIDS+=($!)

g ping; [ $rc = 0 ] || fail "ping: $rc"; has "node 162 answers"
# the pipeline first: its module is missing until the upload, each batch lost
cat > "$DIR/p1.yaml" <<'YAML'
pipeline: 1
modules:
  - name: debayer
  - name: copy
  - name: downsample
    params: {factor: 2}
  - name: encode_png
YAML
g slot --pipeline 1 "$DIR/p1.yaml"; [ $rc = 2 ] || fail "slot without a key: $rc"
g slot --key "$DIR/k1.key" --version 5 --pipeline 1 "$DIR/p1.yaml"
[ $rc = 0 ] || fail "slot: $rc"; has "in pipeline slot 1, version 5"
until_tm "last_error=501102"
# slot writes are signed and their versions only rise
g slot --key "$DIR/k1.key" --version 4 --pipeline 1 "$DIR/p1.yaml"
[ $rc = 1 ] || fail "older slot write: $rc"; has "error 1003000"; has "not above v5"
g slot --key "$DIR/k1.key" --version 5 --pipeline 1 "$DIR/p1.yaml"
[ $rc = 0 ] || fail "the same write again: $rc"; has "already on board"
# a slot found corrupt keeps its floor: the old write stays refused
printf 'X' | dd of="$DIR/store/pipeline-1" bs=1 seek=20 conv=notrunc 2>/dev/null
g slot --key "$DIR/k1.key" --version 4 --pipeline 1 "$DIR/p1.yaml"
[ $rc = 1 ] || fail "older write over a corrupt slot: $rc"; has "not above v5"
g slot --key "$DIR/k1.key" --version 6 --pipeline 1 "$DIR/p1.yaml"
[ $rc = 0 ] || fail "repairing write: $rc"; has "version 6"
g slot --key "$DIR/k1.key" --version 7.5 --pipeline 1 "$DIR/p1.yaml"
[ $rc = 2 ] || fail "a fractional version: $rc"
g keygen "$DIR/k2"; [ $rc = 0 ] || fail "keygen k2: $rc"
g slot --key "$DIR/k2.key" --version 9 --pipeline 1 "$DIR/p1.yaml"
[ $rc = 1 ] || fail "slot write with a foreign key: $rc"; has "error 1002000"

g upload --key "$DIR/k1.key" --version 1 --in rgb --out rgb copy "$TMODS/copy.so"
[ $rc = 0 ] || fail "upload v1: $rc"; has "copy v1 installed"
until_tm "module.copy=v1"
g telemetry; n1=$(sed -n 's/^images_processed=//p' "$DIR/out")
until_tm "ms.copy="
for _ in $(seq 60); do
    g telemetry; n2=$(sed -n 's/^images_processed=//p' "$DIR/out")
    [ "${n2:-0}" -gt "${n1:-0}" ] && break
done
[ "${n2:-0}" -gt "${n1:-0}" ] || fail "no images processed after the upload"

# exactly the active upload again (its answer was lost): answered as done,
# said so, not installed again nor refused (it said "installed: ... 0
# chunks" and nothing more)
g upload --key "$DIR/k1.key" --version 1 --in rgb --out rgb copy "$TMODS/copy.so"
[ $rc = 0 ] || fail "active upload again: $rc"
has "copy v1: already active on board, not installed again"
g telemetry; has "uploads_installed=1"

# a crashing module is refused at its test-run, v1 stays
g upload --key "$DIR/k1.key" --version 2 --in rgb --out rgb copy "$TMODS/crash.so"
[ $rc = 1 ] || fail "crashing upload: $rc"; has "refused: error 600000 (crash)"
# the same upload again (an answer lost): its refusal's reason, not "replay"
g upload --key "$DIR/k1.key" --version 2 --in rgb --out rgb copy "$TMODS/crash.so"
[ $rc = 1 ] || fail "crashing upload again: $rc"; has "refused: error 600000 (crash)"
g upload --key "$DIR/k1.key" --version 2 --in rgb --out rgb copy "$TMODS/copy.so"
[ $rc = 1 ] || fail "replayed version: $rc"; has "error 1003000"
# one that passes its grey test-run but fails in flight is rolled back
g upload --key "$DIR/k1.key" --version 3 --in gray --out gray copy "$TMODS/gray_only.so"
[ $rc = 0 ] || fail "upload v3: $rc"; has "copy v3 installed"
until_tm "rollbacks=1"
has "module.copy=v1"; has "uploads_refused=2" # the crash and the replay

# a folder that is not there: refused before anything is asked (images
# were acknowledged, so dropped on board, without being saved)
g telemetry; before=$(sed -n 's/^ring_images=//p' "$DIR/out")
g images --key "$DIR/k1.key" --out "$DIR/nofolder" --max 5; [ $rc = 1 ] || fail "images to no folder: $rc"
has "--out $DIR/nofolder: No such file or directory"
g telemetry; after=$(sed -n 's/^ring_images=//p' "$DIR/out")
[ "${after:-0}" -ge "${before:-1}" ] || fail "images went from the ring: $before, then $after"
mkdir "$DIR/img"
g images --key "$DIR/k1.key" --out "$DIR/img" --max 5; [ $rc = 0 ] || fail "images: $rc"; has "5 images downlinked"
ls "$DIR"/img/*.png >/dev/null 2>&1 || fail "no PNG downlinked"
head -c 4 "$(ls "$DIR"/img/*.png | head -1)" | grep -q PNG || fail "not a PNG"

# a delta whose base is not the active version (v1, after the rollback):
# refused, saying which version is active and where the base version the
# board compared came from (it said "a delta against v8", which the user
# never gave); named right, it installs
g upload --key "$DIR/k1.key" --version 9 --base "$TMODS/copy.so" --in rgb --out rgb \
    copy "$TMODS/copy.so"
[ $rc = 1 ] || fail "delta against a version not on board: $rc"
has "refused: error 1006000"
has "copy v9: a delta against v8, but v1 is the version active on board"
has "--base $TMODS/copy.so was taken for copy v8, the version before --version 9"
g upload --key "$DIR/k1.key" --version 9 --base "$TMODS/copy.so" --base-version 1 \
    --in rgb --out rgb copy "$TMODS/copy.so"
[ $rc = 0 ] || fail "delta against v1: $rc"; has "copy v9 installed"
echo "e2e_link: ok"
