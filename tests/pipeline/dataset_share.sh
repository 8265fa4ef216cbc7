#!/bin/sh
# aegis dataset share/unshare: another user (nobody) cannot read a dataset
# until it is shared, then reads its key log, file table and files, and
# files written later too; after unshare it cannot. share says each
# folder above the state folder it let nobody pass through (there nobody
# can read, by name, a file others may read: said, as the docs say), and
# opens none when those folders can be passed through already (a state
# folder outside the home). Needs root (to act as nobody) and setpriv;
# skipped (77) otherwise.
# usage: dataset_share.sh AEGIS
set -eu
AEGIS=$1
[ "$(id -u)" = 0 ] && command -v setpriv >/dev/null || exit 77
tmp=$(mktemp -d /tmp/aegis-share-XXXXXX)
pub=$(mktemp -d /tmp/aegis-share-XXXXXX)
trap 'rm -rf "$tmp" "$pub"' EXIT
export AEGIS_STATE_HOME=$tmp/state
as_nobody() {
    setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
}
readable() { as_nobody head -c 1 "$1" >/dev/null 2>&1; }
fail() { echo "FAIL: $*"; exit 1; }

"$AEGIS" dataset gen tabular --out "$tmp/data" --samples 400 --files 2
"$AEGIS" dataset add d --dir "$tmp/data" --format binary --record-size 36
"$AEGIS" dataset watch d --once --quiet
keys=$tmp/state/datasets/d/keys.log
readable "$keys" && fail "nobody reads the key log before share"

readable "$tmp/data/part-00000.bin" && fail "nobody reads a file before share"

echo "the owner's notes" > "$tmp/notes.txt"
chmod 644 "$tmp/notes.txt"
"$AEGIS" dataset share d nobody > "$tmp/said"
grep -qxF "aegis dataset share: $tmp: nobody may pass through it (search, no listing), so it can read a file there whose mode lets others read it, knowing its name" "$tmp/said" ||
    fail "share did not say it opened $tmp: $(cat "$tmp/said")"
readable "$tmp/notes.txt" || fail "the docs say nobody reads $tmp/notes.txt now"
for f in "$keys" "$tmp/state/datasets/d/files.log" \
         "$tmp/state/datasets/d/dataset.json" "$tmp/data/part-00001.bin"; do
    readable "$f" || fail "nobody cannot read $f after share"
done
as_nobody "$AEGIS" dataset show "$tmp/state/datasets/d" | grep -q "400 in 2" ||
    fail "nobody cannot show the shared dataset by its path"
cp "$tmp/data/part-00000.bin" "$tmp/data/later.bin"
readable "$tmp/data/later.bin" || fail "a file written after share is not readable"
as_nobody ls "$tmp/state/datasets" >/dev/null 2>&1 &&
    fail "nobody lists the datasets folder (search only was granted)"

# a state folder under folders others may pass through already: nothing
# above it opened, nothing said
chmod 755 "$pub"
mkdir "$pub/data"
cp "$tmp/data/part-00000.bin" "$pub/data/"
AEGIS_STATE_HOME=$pub/state "$AEGIS" dataset add e --dir "$pub/data" \
    --format binary --record-size 36
AEGIS_STATE_HOME=$pub/state "$AEGIS" dataset watch e --once --quiet
AEGIS_STATE_HOME=$pub/state "$AEGIS" dataset share e nobody > "$tmp/said"
[ ! -s "$tmp/said" ] || fail "share opened folders above: $(cat "$tmp/said")"
getfacl -cp "$pub" 2>/dev/null | grep -q "^user:nobody" && fail "an entry on $pub"
as_nobody "$AEGIS" dataset show "$pub/state/datasets/e" | grep -q "200 in 1" ||
    fail "nobody cannot show the dataset kept outside the home"

"$AEGIS" dataset unshare d nobody
readable "$keys" && fail "nobody reads the key log after unshare"
rc=0; "$AEGIS" dataset share d no-such-user-here 2>/dev/null || rc=$?
[ $rc = 2 ] || fail "an unknown user: exit $rc, not 2"
echo ok
