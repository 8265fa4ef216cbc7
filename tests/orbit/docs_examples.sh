#!/usr/bin/env bash
# docs_examples.sh SOURCE BUILD -- runs the first sh block of docs/orbit.md
# ("What a payload team does first") as written, with build/ meaning BUILD,
# and checks that every line it marks `# => TEXT` appears in its output.
set -u
SRC=$1 BUILD=$2
OUT=$(mktemp /tmp/dipp-docs-XXXXXX)
trap 'rm -f "$OUT" "$OUT.sh"' EXIT
awk '/^```sh$/ {on=1; next} on && /^```$/ {exit} on' "$SRC/docs/orbit.md" |
    sed "s#build/#$BUILD/#g" > "$OUT.sh"
echo 'rm -rf "$demo"' >> "$OUT.sh" # the block's scratch folder
cd "$SRC" || exit 1
timeout 240 bash -e "$OUT.sh" > "$OUT" 2>&1 || { cat "$OUT"; echo "FAIL: the block failed"; exit 1; }
while IFS= read -r want; do
    grep -qF -- "$want" "$OUT" || { cat "$OUT"; echo "FAIL: no '$want'"; exit 1; }
done < <(grep '^# => ' "$OUT.sh" | sed 's/^# => //')
