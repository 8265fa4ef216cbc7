#!/usr/bin/env bash
# deb_test.sh [BUILD_DIR] -- the Debian package end to end, as CI runs it
# after the tests (.ci/run): build aegis for /usr, `cpack -G DEB`, install
# the .deb with apt-get, use the installed aegis (version, config check,
# manual pages, Python modules, a simulation, one job on the test GPU
# under the installed aegisd), then remove and purge it and check that
# nothing of it is left. It installs into the real system, so it runs as
# root on a disposable machine, refuses to touch an aegis package it did
# not install, and removes its own whatever happens.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(realpath -m "${1:-$SRC/build-deb}")
TMP=$(mktemp -d /tmp/aegis-deb-XXXXXX)
chmod 755 "$TMP"
installed_by_us=0

say() { echo "deb_test: $*"; }
fail() { echo "deb_test: FAIL: $*" >&2; exit 1; }

# The installed aegisd's pid, from the lock file of its state folder.
daemon_pid() {
    local p; p=$(cat "$TMP/state/aegisd.lock" 2>/dev/null || true)
    if [ -n "$p" ] && [ "$(cat /proc/"$p"/comm 2>/dev/null)" = aegisd ]; then
        echo "$p"
    fi
}
# wait_until SECONDS COMMAND...: poll COMMAND until it succeeds.
wait_until() {
    local deadline=$((SECONDS + $1)); shift
    until "$@"; do
        [ $SECONDS -lt $deadline ] || return 1
        sleep 0.1
    done
}
daemon_gone() { [ -z "$(daemon_pid)" ]; }
cleanup() {
    local p; p=$(daemon_pid)
    if [ -n "$p" ]; then kill "$p"; wait_until 20 daemon_gone || kill -9 "$p"; fi
    if [ $installed_by_us = 1 ] && dpkg -s aegis >/dev/null 2>&1; then
        apt-get purge -y -qq aegis >/dev/null || true
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT

[ "$(id -u)" = 0 ] || fail "run as root: it installs a package"
if dpkg -s aegis >/dev/null 2>&1; then
    fail "a package named aegis is installed already; not touching it"
fi
export DEBIAN_FRONTEND=noninteractive

say "building for /usr in $BUILD"
cmake -S "$SRC" -B "$BUILD" -DCMAKE_INSTALL_PREFIX=/usr -DAEGIS_TESTS=OFF \
    -DAEGIS_WERROR=ON >/dev/null
cmake --build "$BUILD" -j"$(nproc)" >/dev/null
rm -f "$BUILD"/aegis_*.deb
(cd "$BUILD" && cpack -G DEB >/dev/null)
version=$(sed -n 's/^project(aegis VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
deb=$BUILD/aegis_${version}_amd64.deb
[ -f "$deb" ] || fail "no $deb"
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libjansson4 libsqlite3-0 libyaml-0-2 libuv1 python3; do
    grep -q "$lib" <<<"$depends" || fail "Depends lacks $lib: $depends"
done
recommends=$(dpkg-deb -f "$deb" Recommends)
grep -q bash-completion <<<"$recommends" || fail "Recommends lacks bash-completion"
# Debian's own checks: no error and no warning. The package carries no
# lintian overrides today; should one be needed, at most 5, each with its
# reason on the line above it.
overrides=$(dpkg-deb --fsys-tarfile "$deb" |
            tar -xOf - ./usr/share/lintian/overrides/aegis 2>/dev/null |
            grep -c '^[a-z]' || true)
[ "$overrides" -le 5 ] || fail "$overrides lintian overrides (at most 5)"
say "lintian $(basename "$deb")"
lintian --fail-on error,warning --tag-display-limit 0 "$deb" ||
    fail "lintian found errors or warnings (above)"
# Every file of the package, for the check after removal.
dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print substr($6, 2)}' >"$TMP/files"

say "installing $(basename "$deb")"
installed_by_us=1
apt-get install -y -qq "$deb" >/dev/null
[ "$(dpkg-query -W -f '${Status}' aegis)" = "install ok installed" ] ||
    fail "not installed"

say "using the installed aegis"
cd "$TMP"  # away from the source tree: nothing may come from it
aegis --version | grep -qF "$version" || fail "aegis --version: $(aegis --version)"
aegisd --check-config /etc/aegis/aegis.yaml | grep -q ": ok" ||
    fail "the installed configuration does not check"
grep -q -- "--config /etc/aegis/aegis.yaml" /usr/lib/systemd/system/aegisd.service ||
    fail "the unit does not read /etc/aegis/aegis.yaml"
for page in aegis aegisd aegis.yaml aegis-submit dipp dipp-run dipp-ground; do
    man -w "$page" >/dev/null 2>&1 || fail "no manual page $page"
done
[ -f /usr/share/bash-completion/completions/aegis ] || fail "no completion"
/usr/bin/python3 -c "import aegis_feed, aegis_describe" ||
    fail "the Python modules do not import"
# TensorSocket's names, where TensorSocket itself is not installed
/usr/bin/python3 -c "import tensorsocket; assert tensorsocket.AEGIS_COMPAT" ||
    /usr/bin/python3 -c "import tensorsocket" ||
    fail "no tensorsocket module (aegis's compatibility package)"
# The Slurm plugin in the folder of Debian's own Slurm plugins (slurmd's
# PluginDir), and the submit commands' filter (docs/slurm.md)
if [ -f /usr/include/slurm/spank.h ]; then
    plugins=$(dirname "$(dpkg -L slurm-wlm-basic-plugins | grep '/cli_filter_lua.so$')")
    [ -f "$plugins/spank_aegis.so" ] || fail "no spank_aegis.so in $plugins"
    [ -f /usr/share/aegis/slurm/cli_filter.lua ] || fail "no cli_filter.lua"
fi
aegis sim --trace /usr/share/aegis/traces/demo.csv --policy exclusive \
    >"$TMP/sim" || fail "aegis sim with the installed catalog"
aegis estimate /usr/share/aegis/models/resnet50_imagenet_bs32_1gpu.json \
    >/dev/null || fail "aegis estimate of an installed model"
# DIPP: a small frame through the installed example modules, sandboxed
printf 'pipeline: 1\nmodules:\n  - name: debayer\n  - name: encode_jpeg\n' \
    >"$TMP/mission.yaml"
timeout 60 dipp run --modules /usr/lib/aegis/dipp-modules --size 448 \
    "$TMP/mission.yaml" >"$TMP/dipp" || fail "dipp run: $(cat "$TMP/dipp")"
grep -q "ok" "$TMP/dipp" || fail "dipp run: $(cat "$TMP/dipp")"

say "one job on the test GPU"
export AEGIS_TEST_GPUS=1x40960 AEGIS_TEST_GPU_DIR=$TMP/gpu
export AEGIS_SOCKET=$TMP/aegis.sock
mkdir -m 777 "$TMP/gpu"
aegisd --socket "$AEGIS_SOCKET" --state-dir "$TMP/state" \
    --nvml-library /usr/lib/aegis/test/libaegis-testnvml.so ||
    fail "aegisd did not start: $(cat "$TMP/state/aegisd.log" 2>/dev/null)"
id=$(aegis submit --name deb --mem 1000 -- \
     /usr/lib/aegis/test/aegis-fakegpu --mib 1000 --seconds 1)
timeout 60 aegis wait "$id" || fail "job $id: $(aegis show "$id")"
aegis show "$id" | grep -q "done" || fail "job $id: $(aegis show "$id")"
kill "$(daemon_pid)"
wait_until 20 daemon_gone || fail "aegisd did not stop"

say "install.md's trial, as a user who is not root"
# The first ```sh block under "## Trying aegis without a GPU" (the second,
# for several users, is what daemon_e2e_admin_testgpu does), run by
# a user made for it (aegisd is in /usr/sbin, off such a user's PATH).
trial_user=aegis-deb-trial
userdel -r "$trial_user" >/dev/null 2>&1 || true
useradd -m -s /bin/bash "$trial_user"
awk '/^## / { inside = ($0 ~ /Trying aegis without a GPU/); next }
     inside && !done && /^```sh/ { code = 1; next }
     inside && code && /^```/ { code = 0; done = 1; next }
     inside && code { print }' "$SRC/docs/install.md" >"$TMP/trial.sh"
grep -q aegisd "$TMP/trial.sh" || fail "install.md has no trial block"
chmod 644 "$TMP/trial.sh"
trial_rc=0
# (its mktemp folders in its home, which userdel -r removes)
(cd / && timeout 120 runuser -l "$trial_user" -c "TMPDIR=\$HOME bash -euo pipefail $TMP/trial.sh") ||
    trial_rc=$?
# what a failed trial left running: its user's processes, by their ids
ps -o pid= -u "$trial_user" | xargs -r kill -9 2>/dev/null || true
userdel -r "$trial_user" >/dev/null 2>&1 || true
[ $trial_rc = 0 ] || fail "install.md's trial failed as $trial_user (exit $trial_rc)"

say "removing"
apt-get remove -y -qq aegis >/dev/null
left=$(while read -r f; do
           case $f in /etc/aegis/aegis.yaml | /etc/pam.d/aegis) continue ;; esac
           [ ! -e "$f" ] || echo "$f"
       done <"$TMP/files")
[ -z "$left" ] || fail "left after remove: $left"
# Debian keeps a removed package's conffiles until it is purged.
[ -f /etc/aegis/aegis.yaml ] || fail "remove deleted the admin's configuration"
[ -f /etc/pam.d/aegis ] || fail "remove deleted the PAM service (a conffile)"
apt-get purge -y -qq aegis >/dev/null
installed_by_us=0
! dpkg -s aegis >/dev/null 2>&1 || fail "still known to dpkg after purge"
for d in /etc/aegis /etc/pam.d/aegis /usr/share/aegis /usr/lib/aegis; do
    [ ! -e "$d" ] || fail "$d left after purge"
done
say "ok: installed, ran job $id, removed and purged"
