#!/bin/bash
# shutdown_stuck.sh AEGIS FAKE_AEGISD.py -- `aegis shutdown` of an aegisd
# that answers and then does not exit (stopped, or stuck: here a stand-in
# that answers and goes on living) gives up after AEGIS_TIMEOUT_S with
# exit 1, saying so; it waited for that process for ever before.
set -u
aegis=$1 fake=$2
source "$(cd "$(dirname "$0")" && pwd)/fake_lib.sh"
echo '{"shutdown": {"ok": true, "running": 0, "drain": false}}' > answers.json
fake_start "$fake" answers.json
AEGIS_TIMEOUT_S=1 timeout 60 "$aegis" shutdown > out.txt 2> err.txt
rc=$?
[ $rc = 1 ] || { echo "FAIL: exit $rc ($(cat out.txt err.txt))"; exit 1; }
grep -q "said it stops, but has not exited in 1 s (AEGIS_TIMEOUT_S)" err.txt ||
    { echo "FAIL: it said: $(cat err.txt)"; exit 1; }
echo ok
