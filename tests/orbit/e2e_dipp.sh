#!/usr/bin/env bash
# e2e_dipp.sh DIPP EXAMPLE_MODULES TEST_MODULES -- the `dipp` command end to
# end: help and usage errors, a bad YAML named by file/line/field, encode and
# decode, slots written and listed (a torn one reported), a full 4512x4512
# camera frame through the example modules into 400 JPEG tiles, and bad
# modules losing only their pipeline's batch, frame after frame, with the
# published codes. Every dipp call is bounded by `timeout`.
set -u
DIPP=$1 MODS=$2 TMODS=$3
DIR=$(mktemp -d /tmp/dipp-e2e-XXXXXX)
trap 'rm -rf "$DIR"' EXIT
fail() { echo "FAIL: $*" >&2; cat "$DIR/out" "$DIR/err" >&2 2>/dev/null; exit 1; }
# d ARGS...: runs dipp (at most 120 s), stdout in $DIR/out, stderr in
# $DIR/err; its exit status in $rc.
d() { timeout 120 "$DIPP" "$@" >"$DIR/out" 2>"$DIR/err"; rc=$?; }
has() { grep -qF -- "$1" "$DIR/$2" || fail "no '$1' in $2"; }

d --help; [ $rc = 0 ] || fail "--help: $rc"; has "run --modules DIR" out
d; [ $rc = 2 ] || fail "no command: $rc"
d frobnicate; [ $rc = 2 ] || fail "unknown command: $rc"
d run --help; [ $rc = 0 ] || fail "run --help: $rc"; has "--timeout-ms" out
# each command's help once, on stdout (the manual pages are made from it)
for c in run encode decode store slots sat link ground; do
    d $c --help
    [ $rc = 0 ] && [ ! -s "$DIR/err" ] || fail "$c --help: exit $rc or stderr"
    [ "$(grep -c '^Usage: dipp' "$DIR/out")" = 1 ] || fail "$c --help: not one usage"
    # the tools' convention: 1 bad input, 2 usage (encode, decode and run
    # said none)
    tr '\n' ' ' < "$DIR/out" | grep -q "Exit status: 0 [^.]*, 1 [^.]*, 2 usage" ||
        fail "$c --help: no exit status"
done
# each ground command's own help, exit 0 (every one printed the general
# text, and `ground proc`, which that pointed to, exited 2)
for c in keygen upload rotate slot telemetry images ping proc; do
    d ground $c --help
    [ $rc = 0 ] && [ ! -s "$DIR/err" ] || fail "ground $c --help: exit $rc or stderr"
    head -1 "$DIR/out" | grep -q "^Usage: dipp ground .*$c" ||
        fail "ground $c --help: not its usage"
    grep -q "COMMAND --help. tells" "$DIR/out" && fail "ground $c --help: the general help"
    has "Exit status: 0" out
done
d ground --hub 6000 proc run --help; [ $rc = 0 ] || fail "ground proc run --help: $rc"
has "log [--from N]" out
d ground upload --help; has "--base-version B" out
# a limit is printed as written, whole numbers in full (it said 1 to 4e+09)
d ground upload --key "$DIR/k.key" --version 5000000000 copy "$TMODS/copy.so"
[ $rc = 2 ] || fail "--version 5000000000: $rc"
has "--version 5000000000: not a number from 1 to 4000000000" err
d ground --timeout-ms 0 ping; [ $rc = 2 ] || fail "--timeout-ms 0: $rc"
has "--timeout-ms 0: not a number from 1 to 3600000" err
# dipp run says the range too (it said "not a number in range")
d run --modules "$DIR" --timeout-ms 0 x.yaml; [ $rc = 2 ] || fail "run --timeout-ms 0: $rc"
has "dipp run: --timeout-ms 0: not a number from 1 to 3600000" err
d link --ground 1 --sat 2 --speed 0; [ $rc = 2 ] || fail "--speed 0: $rc"
has "--speed 0: not a number from 0.001 to 1000000" err
d ground --help; has "dipp ground COMMAND --help" out
d ground proc; [ $rc = 2 ] || fail "ground proc without a command: $rc"

# keygen: the private key is 0600 whatever the umask, and an existing pair
# is never overwritten unless --force (it was 0644, and silently replaced)
(umask 022; d ground keygen "$DIR/k"; exit $rc); [ $? = 0 ] || fail "keygen: $?"
[ "$(stat -c %a "$DIR/k.key")" = 600 ] || fail "k.key mode $(stat -c %a "$DIR/k.key")"
cp "$DIR/k.key" "$DIR/k.key.first"
d ground keygen "$DIR/k"; [ $rc = 1 ] || fail "keygen over a pair: $rc"
has "k.pub: exists; not overwritten" err
cmp -s "$DIR/k.key" "$DIR/k.key.first" || fail "keygen changed the key"
rm "$DIR/k.pub"
d ground keygen "$DIR/k"; [ $rc = 1 ] || fail "keygen over a key: $rc"
has "k.key: exists; not overwritten" err; [ ! -e "$DIR/k.pub" ] || fail "half a pair"
(umask 022; d ground keygen --force "$DIR/k"; exit $rc); [ $? = 0 ] || fail "keygen --force"
cmp -s "$DIR/k.key" "$DIR/k.key.first" && fail "--force kept the key"
[ "$(stat -c %a "$DIR/k.key")" = 600 ] || fail "forced k.key mode"
[ "$(stat -c %s "$DIR/k.pub")" = 32 ] || fail "forced k.pub size"

# a slot write for pipeline 1 of a definition naming pipeline 2 is refused
# on the ground, naming file, line and both numbers (it was written to slot
# 1); one naming no pipeline takes --pipeline's (and, with no satellite
# on the hub, gets no answer)
printf 'pipeline: 2\nmodules:\n  - name: debayer\n' > "$DIR/p2only.yaml"
d ground --timeout-ms 10 slot --key "$DIR/k.key" --pipeline 1 "$DIR/p2only.yaml"
[ $rc = 1 ] || fail "slot of another pipeline: $rc"
has "p2only.yaml:1:11: pipeline: names pipeline 2, but the write is for pipeline 1" err
printf 'modules:\n  - name: debayer\n' > "$DIR/noid.yaml"
d ground --timeout-ms 10 slot --key "$DIR/k.key" --pipeline 3 "$DIR/noid.yaml"
[ $rc = 1 ] || fail "slot of no pipeline: $rc"; has "no answer from node 162" out

# --timeout-ms is the whole wait for an answer, the question asked again
# within it (it was each ask's wait, 40 asks: 2000 took 80 s, the default
# 3000 two minutes). With no satellite on the hub each command says so
# within ten times its wait; the asks are counted, not timed.
w() { timeout 20 "$DIPP" ground --timeout-ms 2000 "$@" >"$DIR/out" 2>"$DIR/err"; rc=$?; }
w ping; [ $rc = 1 ] || fail "ping with no satellite: exit $rc (124: past 20 s)"
has "ping: no answer from node 162 in 2000 ms (asked 4 times" out
w --retry-ms 1000 telemetry; [ $rc = 1 ] || fail "telemetry with no satellite: $rc"
has "telemetry: no answer from node 162 in 2000 ms (asked 2 times" out
w upload --key "$DIR/k.key" --version 1 --in rgb --out rgb copy "$TMODS/copy.so"
[ $rc = 1 ] || fail "upload with no satellite: $rc"
has "copy v1: no answer from node 162 in 2000 ms (asked 4 times" out
mkdir "$DIR/down"
w images --key "$DIR/k.key" --out "$DIR/down"; [ $rc = 1 ] || fail "images with no satellite: $rc"
has "images: no answer from node 162 in 2000 ms" out
w --retry-ms 3000 ping; [ $rc = 2 ] || fail "--retry-ms over --timeout-ms: $rc"
has "--retry-ms 3000 is over --timeout-ms 2000" err

cat > "$DIR/mission.yaml" <<'YAML'
pipeline: 1
modules:
  - name: debayer
  - name: crop_tile
    params: {tile: 224}
  - name: downsample
    params: {factor: 2}
  - name: encode_jpeg
    params: {quality: 80}
YAML
printf 'pipeline: 2\nmodules:\n  - name: debayer\n    params: {gain: [1]}\n' > "$DIR/bad.yaml"
d encode "$DIR/bad.yaml"; [ $rc = 1 ] || fail "bad yaml: $rc"
has "bad.yaml:4:20: modules[0].params.gain" err
# a non-finite parameter is refused on the ground, as the board refuses
# it, and nothing is stored (it was encoded and stored, then BAD on board)
printf 'pipeline: 2\nmodules:\n  - name: downsample\n    params: {factor: inf}\n' > "$DIR/inf.yaml"
d encode "$DIR/inf.yaml"; [ $rc = 1 ] || fail "inf encoded: $rc"
has "inf.yaml:4:22: modules[0].params.factor: a non-finite number (inf)" err
mkdir "$DIR/infstore"
d store --store "$DIR/infstore" "$DIR/inf.yaml"; [ $rc = 1 ] || fail "inf stored: $rc"
[ ! -e "$DIR/infstore/pipeline-2" ] || fail "inf: slot written"
# a device is not read at all (/dev/zero never ends)
d encode /dev/zero; [ $rc = 1 ] || fail "/dev/zero: $rc"; has "not a regular file" err

d encode "$DIR/mission.yaml" -o "$DIR/m.bin"; [ $rc = 0 ] || fail "encode: $rc"
has "bytes of 188" out
d decode "$DIR/m.bin"; [ $rc = 0 ] || fail "decode: $rc"
cp "$DIR/out" "$DIR/back.yaml"
d encode "$DIR/back.yaml" -o "$DIR/m2.bin"
cmp -s "$DIR/m.bin" "$DIR/m2.bin" || fail "decode then encode differs"
head -c 20 /dev/urandom > "$DIR/junk.bin"
d decode "$DIR/junk.bin"; [ $rc = 1 ] || fail "junk decoded: $rc"

mkdir "$DIR/store"
d store --store "$DIR/store" "$DIR/mission.yaml"; [ $rc = 0 ] || fail "store: $rc"
d store --store "$DIR/store" --config 4 "$DIR/mission.yaml"; [ $rc = 0 ] || fail "store config: $rc"
d slots --store "$DIR/store"; [ $rc = 0 ] || fail "slots: $rc"
has "pipeline-1: " out; has "debayer crop_tile downsample encode_jpeg" out
has "config-4: " out; has "pipeline-6: empty" out
d slots --store "$DIR/nowhere"; [ $rc = 1 ] || fail "slots of no folder: $rc"
has "nowhere: No such file" err
head -c 9 "$DIR/store/config-4" > "$DIR/t" && mv "$DIR/t" "$DIR/store/config-4"
d slots --store "$DIR/store"; [ $rc = 1 ] || fail "torn slot listed fine: $rc"
has "config-4: BAD" out

# The flight camera's frame, whole, through the example modules: 400 JPEG
# tiles, and a PNG overview from the same frame.
mkdir "$DIR/img"
printf 'pipeline: 2\nmodules:\n  - name: debayer\n  - name: downsample\n    params: {factor: 16}\n  - name: encode_png\n' > "$DIR/overview.yaml"
d run --modules "$MODS" --out "$DIR/img" "$DIR/mission.yaml" "$DIR/overview.yaml"
[ $rc = 0 ] || fail "mission run: $rc"
has "frame 1 pipeline 1: ok: 400 images" out
has "frame 1 pipeline 2: ok: 1 images" out
magic() { head -c 4 "$1" | od -An -tx1 | tr -d ' \n'; }
[ "$(magic "$DIR/img/f1-p1-0.jpg" | head -c 4)" = ffd8 ] || fail "tile 0 is not a JPEG"
[ "$(magic "$DIR/img/f1-p2-0.png")" = 89504e47 ] || fail "the overview is not a PNG"

# Bad modules beside a good pipeline, over two frames: each bad one loses
# its own batch, with its code, and the good one is processed every frame.
i=1
for m in copy crash spin absent; do
    printf 'pipeline: %d\nmodules:\n  - name: copy\n  - name: %s\n' $i $m > "$DIR/p$i.yaml"
    i=$((i + 1))
done
d run --modules "$TMODS" --frames 2 --size 256 --timeout-ms 3000 \
    "$DIR"/p1.yaml "$DIR"/p2.yaml "$DIR"/p3.yaml "$DIR"/p4.yaml
[ $rc = 3 ] || fail "bad modules: exit $rc, not 3"
for f in 1 2; do
    has "frame $f pipeline 1: ok: 1 images" out
    has "frame $f pipeline 2: lost: error 600202 (crash) in module 2 'crash'" out
    has "frame $f pipeline 3: lost: error 602302 (timeout)" out
    has "frame $f pipeline 4: lost: error 501402 (missing module)" out
done
# What the store holds runs as on board; a torn slot is skipped, said so.
d store --store "$DIR/store" "$DIR/p2.yaml"; [ $rc = 0 ] || fail "store p2: $rc"
d store --store "$DIR/store" "$DIR/p1.yaml"; [ $rc = 0 ] || fail "store p1: $rc"
head -c 9 "$DIR/p2.yaml" > "$DIR/store/pipeline-2"
d run --modules "$TMODS" --size 64 --store "$DIR/store"
[ $rc = 0 ] || fail "run --store: $rc"
has "frame 1 pipeline 1: ok: 1 images" out
has "pipeline-2: not a slot file (torn or foreign): slot skipped" err
# A step taking its parameters from a module-configuration slot: the
# slot's factor 4 applies (64 -> 16 wide), the step's own would override.
printf 'modules:\n  - name: downsample\n    params: {factor: 4}\n' > "$DIR/ds4.yaml"
d store --store "$DIR/store" --config 7 "$DIR/ds4.yaml"; [ $rc = 0 ] || fail "store config 7: $rc"
printf 'pipeline: 5\nmodules:\n  - name: debayer\n  - name: downsample\n    config: 7\n' > "$DIR/cfg.yaml"
mkdir "$DIR/cfgimg"
d run --modules "$TMODS" --size 64 --out "$DIR/cfgimg" --store "$DIR/store" "$DIR/cfg.yaml"
has "frame 1 pipeline 5: ok: 1 images" out
[ "$(sed -n 2p "$DIR/cfgimg/f1-p5-0.ppm")" = "16 16" ] || fail "config 7's factor not applied"
printf 'modules:\n  - name: copy\n    config: 9\n' > "$DIR/nocfg.yaml"
d run --modules "$TMODS" --size 64 --store "$DIR/store" "$DIR/nocfg.yaml"
[ $rc = 1 ] || fail "empty config slot: $rc"
has "nocfg.yaml: modules[0]: $DIR/store/config-9: empty" err
d run --modules "$TMODS" --frames x "$DIR/p1.yaml"; [ $rc = 2 ] || fail "--frames x: $rc"
has "--frames x: not a number" err
echo "e2e_dipp: all passed"
