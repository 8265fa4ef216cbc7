#!/bin/bash
# stress.sh [BUILD_DIR] -- the tests that start aegisd (ctest label e2e:
# daemon, Slurm, acceptance stand-in, walkthrough, estimate submit) run
# once while stress-ng --cpu 4 keeps the CPUs busy, as a shared CI machine
# or a laptop in a build would. A test that races a clock instead of
# waiting for its event fails here first. Run before each stop (see
# docs/development.md); it takes about 7.5 minutes on 2 cores.
#
# BUILD_DIR (default build/) must be configured and built. stress-ng is
# started and stopped here, on any exit. Exit status: ctest's (0: all
# passed), 2 when stress-ng or the build is missing.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
command -v stress-ng > /dev/null ||
    { echo "stress.sh: stress-ng is not installed (it is in .ci/packages)" >&2; exit 2; }
[ -f "$BUILD/CTestTestfile.cmake" ] ||
    { echo "stress.sh: $BUILD is not a configured build folder" >&2; exit 2; }

# --timeout: a bound should this script be killed before its trap runs
stress-ng --cpu 4 --timeout 2h --quiet &
load=$!
trap 'kill -TERM $load 2>/dev/null; wait $load 2>/dev/null' EXIT
t0=$SECONDS
ctest --test-dir "$BUILD" -L '^e2e$' --output-on-failure -j"$(nproc)"
rc=$?
echo "stress.sh: the e2e tests under stress-ng --cpu 4: exit $rc in $((SECONDS - t0)) s"
exit $rc
