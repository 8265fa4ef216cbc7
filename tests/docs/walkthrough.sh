# walkthrough.sh -- runs the README's five-minute walkthrough as written.
#
# Usage: walkthrough.sh SOURCE_DIR BUILD_DIR
#
# Takes every ```sh block of the README section whose title names the
# walkthrough, and runs them, in order, as one bash script (stopping at the
# first command that fails) in a scratch folder where `build` is BUILD_DIR
# and `data` is the source tree's data/: the paths the README uses from a
# checkout. TMPDIR points into that folder, so the walkthrough's
# `mktemp -d` (its socket, state and test GPUs) lands there too. The
# walkthrough must stop the daemon it starts; whatever it leaves running
# (found by the test GPU folder in its environment) is stopped and counted
# as a failure. Run as root (CI), it runs the walkthrough as a user made
# for it, as a new user of the README would.
set -u
SRC=$1 BIN=$2
README=$SRC/README.md
fail() { echo "FAIL (walkthrough): $*" >&2; exit 1; }

SCRATCH=$(mktemp -d /tmp/aegis-docs-XXXXXX)
# Every process the walkthrough started: they carry its test GPU folder,
# which is under SCRATCH, in their environment.
leftovers() {
    local comm=$1 env p
    for env in /proc/[0-9]*/environ; do
        p=${env#/proc/}; p=${p%/environ}
        [ "$p" = $$ ] && continue
        tr '\0' '\n' 2>/dev/null < "$env" |
            grep -q "^AEGIS_TEST_GPU_DIR=$SCRATCH/" || continue
        [ -z "$comm" ] || [ "$(cat /proc/$p/comm 2>/dev/null)" = "$comm" ] ||
            continue
        echo "$p"
    done
}
WALK_USER=aegis-docs-walk
cleanup() {
    local p
    for p in $(leftovers ""); do kill -9 "$p" 2>/dev/null; done
    rm -rf "$SCRATCH"
    [ "$(id -u)" != 0 ] || userdel "$WALK_USER" 2>/dev/null
}
trap cleanup EXIT

# The walkthrough: the ```sh blocks between its heading and the next
# heading of the same level.
awk '
    /^## / { inside = tolower($0) ~ /walkthrough/; next }
    inside && /^```sh[[:space:]]*$/ { code = 1; found = 1; next }
    inside && code && /^```/ { code = 0; next }
    inside && code { print }
    END { if (!found) exit 1 }
' "$README" > "$SCRATCH/walkthrough.sh" ||
    fail "$README has no '## ...walkthrough...' section with a \`\`\`sh block"
grep -q 'aegisd ' "$SCRATCH/walkthrough.sh" ||
    fail "the walkthrough starts no aegisd"

ln -s "$BIN" "$SCRATCH/build"
ln -s "$SRC/data" "$SCRATCH/data"
mkdir "$SCRATCH/tmp"
as_user=()
if [ "$(id -u)" = 0 ]; then
    # a run whose cleanup could not remove the user leaves it: reused
    userdel "$WALK_USER" 2>/dev/null
    id "$WALK_USER" >/dev/null 2>&1 ||
        useradd -M -N -s /bin/bash "$WALK_USER" || fail "useradd $WALK_USER"
    chown -R "$WALK_USER" "$SCRATCH"
    as_user=(runuser -u "$WALK_USER" -- env HOME="$SCRATCH")
fi
( cd "$SCRATCH" && TMPDIR=$SCRATCH/tmp timeout 50 "${as_user[@]}" \
    bash -euo pipefail walkthrough.sh ) > "$SCRATCH/out" 2>&1
rc=$?
cat "$SCRATCH/out"
[ $rc = 0 ] || fail "a command of the walkthrough failed (exit $rc; 124: it ran past 50 s)"

# The walkthrough ends by stopping aegisd: it, and every job and shim it
# ran, must be gone shortly after.
deadline=$((SECONDS + 10))
while [ -n "$(leftovers "")" ]; do
    [ $SECONDS -lt $deadline ] || {
        [ -z "$(leftovers aegisd)" ] ||
            fail "the walkthrough left aegisd running (pid $(leftovers aegisd))"
        fail "the walkthrough left processes running: $(leftovers "")"
    }
    sleep 0.1
done
echo "ok: walkthrough ($(grep -c . "$SCRATCH/walkthrough.sh") lines)"
