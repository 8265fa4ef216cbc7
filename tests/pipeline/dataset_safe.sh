#!/bin/sh
# dataset_safe.sh -- what others can place in a shared folder does not
# reach a user's dataset: user A (nobody) and user B (daemon) share a
# world-writable folder (mode 1777, as /tmp).
#   gen:   `aegis dataset gen --out DIR` writes nothing through a symbolic
#          link B planted, nor into a folder B made or anyone may write,
#          nor into one holding files: each refused, naming the path,
#          A's own file untouched.
#   watch: A's data folder writable by others: `dataset add` warns; the
#          watcher registers A's file, not B's, nor a link B made to A's
#          private file; a folder of B's, or of a user with no name:
#          `dataset add` names its owner.
# Needs root (to act as both users) and setpriv; skipped (77) otherwise.
# usage: dataset_safe.sh AEGIS CASE
set -eu
AEGIS=$1 CASE=$2
[ "$(id -u)" = 0 ] && command -v setpriv >/dev/null || exit 77
tmp=$(mktemp -d /tmp/aegis-safe-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
as() { u=$1; shift; setpriv --reuid="$u" --regid="$(id -g "$u")" --clear-groups "$@"; }
fail() { echo "FAIL ($CASE): $*"; exit 1; }
shared=$tmp/shared home=$tmp/a
mkdir -m 1777 "$shared"
mkdir -m 700 "$home"
echo "A's private data" > "$home/precious"
chmod 600 "$home/precious"
chown -R nobody "$home"

# refused TEXT ARGS...: A's `aegis ARGS` fails saying TEXT, and leaves
# A's private file as it was.
refused() {
    text=$1; shift
    as nobody "$AEGIS" "$@" > "$tmp/out" 2> "$tmp/err" &&
        fail "aegis $* succeeded"
    grep -qF "$text" "$tmp/err" || fail "aegis $*: not '$text': $(cat "$tmp/err")"
    [ "$(cat "$home/precious")" = "A's private data" ] ||
        fail "aegis $* wrote A's private file"
}

case_gen() {
    gen="dataset gen tabular --samples 40 --files 2 --out"
    # B's folder, a link in it to A's file where the first part will be
    as daemon mkdir "$shared/stream"
    as daemon ln -s "$home/precious" "$shared/stream/part-00000.bin"
    chmod 777 "$shared/stream"
    refused "$shared/stream: the folder belongs to user daemon" $gen "$shared/stream"
    # A's own folder, a link in it (made there by anyone, earlier): not
    # empty, so nothing is written into it
    as nobody mkdir -m 755 "$home/out"
    as nobody ln -s "$home/precious" "$home/out/drift.json"
    refused "$home/out: the folder holds files already (drift.json)" $gen "$home/out"
    # the folder given is itself a link, and a folder others may write
    as nobody ln -s "$home/out" "$home/link"
    refused "$home/link: not a folder (a symbolic link is not followed)" $gen "$home/link"
    as nobody mkdir -m 777 "$home/open"
    refused "$home/open: the folder is writable by others (mode 0777)" $gen "$home/open"
    # a new folder, and A's own folder again: written
    as nobody "$AEGIS" $gen "$shared/mine" || fail "gen into a new folder"
    [ "$(stat -c %U:%a "$shared/mine")" = nobody:755 ] ||
        fail "the new folder: $(stat -c %U:%a "$shared/mine")"
    [ -s "$shared/mine/part-00001.bin" ] || fail "no second part"
    # again into A's folder: refused, an earlier stream's files are there
    refused "$shared/mine: the folder holds files already" $gen "$shared/mine"
}

case_watch() {
    export AEGIS_STATE_HOME=$home/state
    echo "1700000100,1" > "$home/secret.csv"
    chown nobody "$home/secret.csv"
    chmod 600 "$home/secret.csv"
    data=$shared/adata
    as nobody sh -c "umask 000; mkdir '$data'"
    as nobody env AEGIS_STATE_HOME="$AEGIS_STATE_HOME" "$AEGIS" dataset add \
        tiny --dir "$data" --format csv --ts-column 0 --label-column 1 \
        > /dev/null 2> "$tmp/err" || fail "dataset add: $(cat "$tmp/err")"
    grep -qF "$data: writable by others" "$tmp/err" ||
        fail "dataset add said nothing of the open folder: $(cat "$tmp/err")"
    as nobody sh -c "printf '1700000000,0\n1700000001,1\n' > '$data/a0.csv'"
    as daemon sh -c "printf '1700000002,1\n' > '$data/b-injected.csv'"
    as daemon ln -s "$home/secret.csv" "$data/c-link.csv"
    as nobody env AEGIS_STATE_HOME="$AEGIS_STATE_HOME" "$AEGIS" dataset \
        watch tiny --once --quiet 2> "$tmp/err" || fail "watch: $(cat "$tmp/err")"
    as nobody env AEGIS_STATE_HOME="$AEGIS_STATE_HOME" "$AEGIS" dataset \
        show tiny > "$tmp/show"
    grep -q "^samples *2 in 1 " "$tmp/show" ||
        fail "registered others' files: $(cat "$tmp/show")"
    grep -qF "$data/b-injected.csv: owned by user daemon" "$tmp/err" ||
        fail "no word of B's file: $(cat "$tmp/err")"
    grep -qF "$data/c-link.csv: a symbolic link" "$tmp/err" ||
        fail "no word of the link: $(cat "$tmp/err")"
    # another user's data folder: `dataset add` names its owner, or gives
    # the number of an owner with no name
    as daemon mkdir -m 755 "$shared/bdata"
    mkdir -m 755 "$shared/ndata"
    chown 4242420 "$shared/ndata"
    for d in bdata:daemon ndata:4242420; do
        dir=$shared/${d%%:*} owner=${d#*:}
        as nobody env AEGIS_STATE_HOME="$AEGIS_STATE_HOME" "$AEGIS" dataset \
            add "${d%%:*}" --dir "$dir" --format csv --ts-column 0 \
            --label-column 1 > /dev/null 2> "$tmp/err" ||
            fail "dataset add over $dir: $(cat "$tmp/err")"
        grep -qF "$dir: owned by user $owner, not by you" "$tmp/err" ||
            fail "dataset add did not name $owner: $(cat "$tmp/err")"
    done
}

"case_$CASE"
echo ok
