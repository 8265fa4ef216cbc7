#!/usr/bin/env bash
# docs_examples.sh SOURCE BUILD -- runs the sh blocks of docs/orbit.md
# ("What a payload team does first": the pipeline on the ground, then
# flown over the simulated link) as written, with build/ meaning BUILD,
# and checks that every line they mark `# => TEXT` appears in the output.
set -u
SRC=$1 BUILD=$2
OUT=$(mktemp /tmp/dipp-docs-XXXXXX)
# The blocks' hubs 16000 and 16001 (each binds its port and the port +
# 1000) become a pair of this run's, so that another run of the suite on
# the machine (its link and satellite signed with another key) is not
# heard here.
G=$((20000 + 2 * (RANDOM % 2000))) S=$((G + 1))
# a block that fails half-way leaves its satellite and link behind: they
# are the only processes on the blocks' hub ports
trap 'pkill -f -- "dipp (sat|link) .*--(hub|ground) ($G|$S)"; rm -f "$OUT" "$OUT.sh"' EXIT
awk '/^```sh$/ {on=1; next} on && /^```$/ {on=0} on' "$SRC/docs/orbit.md" |
    sed -e "s#build/#$BUILD/#g" -e "s/\b16000\b/$G/g" -e "s/\b16001\b/$S/g" > "$OUT.sh"
echo 'rm -rf "$demo"' >> "$OUT.sh" # the blocks' scratch folder
cd "$SRC" || exit 1
timeout 240 bash -e "$OUT.sh" > "$OUT" 2>&1 || { cat "$OUT"; echo "FAIL: the block failed"; exit 1; }
while IFS= read -r want; do
    grep -qF -- "$want" "$OUT" || { cat "$OUT"; echo "FAIL: no '$want'"; exit 1; }
done < <(grep '^# => ' "$OUT.sh" | sed 's/^# => //')
