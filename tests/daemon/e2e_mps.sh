#!/bin/bash
# e2e_mps.sh -- MPS serves one user at a time (nvidia-cuda-mps-control(1):
# one server per user; another user's client waits in CUDA initialisation
# until the current server's clients have all ended). The stand-in control
# daemon keeps that rule, and aegisd places by it.
#
# usage: e2e_mps.sh AEGISD AEGIS TESTNVML FAKEGPU CATALOG CASE
# Exit 0 pass, 1 fail, 77 skipped (not root: no second user).
set -u
AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6
source "$(dirname "$0")/e2e_lib.sh"
MPS=$(dirname "$FAKE")/aegis-fake-mps-control
CLIENTS=$AEGIS_TEST_GPU_DIR/mps-clients.log

# Waits until mps-clients.log has a line matching the regex $1.
until_client() {
    wait_until "mps-clients.log: $1" grep -qE "$1" "$CLIENTS"
}

# The stand-in alone: root's client is served; nobody's waits, not on the
# GPU, until root's has ended, and is then served by a server of its own.
case_mps_standin() {
    needs_root
    local pipe=$DIR/direct/pipe
    mkdir -p "$pipe" "$DIR/direct/log"
    chmod -R 755 "$DIR/direct"
    export CUDA_MPS_PIPE_DIRECTORY=$pipe CUDA_MPS_LOG_DIRECTORY=$DIR/direct/log
    CUDA_VISIBLE_DEVICES=0 "$MPS" -d || fail "control daemon did not start"
    [ "$(stat -c %F "$pipe/control")" = socket ] || fail "no control socket"
    CUDA_VISIBLE_DEVICES=0 "$FAKE" --mib 100 --seconds 60 > root.out &
    local root=$!
    until_client "^client uid=0 pid=$root "
    CUDA_VISIBLE_DEVICES=0 as nobody env CUDA_MPS_PIPE_DIRECTORY="$pipe" \
        "$FAKE" --mib 100 --seconds 0 > nobody.out &
    local other=$!
    until_client "^wait uid=$(id -u nobody) "
    ls "$AEGIS_TEST_GPU_DIR" | grep -q "^gpu0\.$root$" || fail "root's job not on GPU 0"
    [ "$(ls "$AEGIS_TEST_GPU_DIR" | grep -c '^gpu0\.')" = 1 ] ||
        fail "nobody's job reached the GPU beside root's"
    kill -TERM "$root"
    wait "$other" || fail "nobody's job failed once root's ended"
    until_client "^server uid=$(id -u nobody) "
    grep -qE "^exit uid=0 pid=$root " "$CLIENTS" || fail "no exit of root's server"
    echo quit | "$MPS" > /dev/null || fail "quit"
}

# aegisd as root, GPU 0 in mps (the others drained): root's job holds it;
# nobody's job waits with the reason mps_user instead of being placed
# beside it (where it would hang in CUDA initialisation), and runs once
# root's job is gone.
case_mps_users() {
    needs_root
    printf 'sharing: mps\nmps_control: %s\nmps_dir: %s\n' "$MPS" "$DIR/mps" \
        >> "$DIR/aegis.yaml"
    start
    cd "$DIR/work"
    "$AEGIS" drain 1 >/dev/null && "$AEGIS" drain 2 >/dev/null || fail drain
    local mine theirs
    mine=$("$AEGIS" submit --mem 1000 -- "$FAKE" --mib 1000 --seconds 60) ||
        fail submit
    wait_until "root's job seen" sh -c "'$AEGIS' show $mine | grep -q 'seen on GPU'"
    theirs=$(as nobody "$AEGIS" submit --mem 1000 -- "$FAKE" --mib 1000 \
             --seconds 0) || fail "submit as nobody"
    local deadline=$((SECONDS + 30)) code
    until [ "$(job_field "$theirs" wait_code)" = mps_user ]; do
        is_state "$theirs" queued ||
            fail "nobody's job placed beside root's MPS client: $("$AEGIS" show "$theirs")"
        [ $SECONDS -lt $deadline ] || fail "nobody's job: never mps_user"
        sleep 0.1
    done
    "$AEGIS" show "$theirs" | grep -q "GPU 0 runs MPS clients of user 0" ||
        fail "reason: $("$AEGIS" show "$theirs")"
    grep -qE "^wait " "$CLIENTS" && fail "a client waited: $(cat "$CLIENTS")"
    # Once root's job is cancelled, nobody's client may still find root's
    # server exiting and wait a moment in CUDA initialisation, as it would
    # on real MPS; so a wait after the cancel is not a fault.
    "$AEGIS" cancel "$mine" > /dev/null || fail cancel
    "$AEGIS" wait "$theirs" > /dev/null || fail "nobody's job after root's"
    until_client "^server uid=$(id -u nobody) "
    return 0
}

# Another user's MPS client that aegis did not start (nobody runs one by
# hand on GPU 0): root's job was placed there and waited in CUDA
# initialisation, counted as running and charged the GPU's energy. It now
# waits in the queue, saying whose clients the GPU serves, and starts
# once they end.
case_mps_foreign() {
    needs_root
    printf 'sharing: mps\nmps_control: %s\nmps_dir: %s\n' "$MPS" "$DIR/mps" \
        >> "$DIR/aegis.yaml"
    start
    cd "$DIR/work"
    "$AEGIS" drain 1 >/dev/null && "$AEGIS" drain 2 >/dev/null || fail drain
    CUDA_VISIBLE_DEVICES=0 runuser -u nobody -- env \
        AEGIS_TEST_GPU_DIR="$AEGIS_TEST_GPU_DIR" \
        CUDA_MPS_PIPE_DIRECTORY="$DIR/mps/0/pipe" \
        "$FAKE" --mib 100 --seconds 120 &
    local theirs=$!
    wait_until "nobody's client seen" grep -q "GPU 0: 100 MiB in use by processes aegisd did not start" \
        "$DIR/state/aegisd.log"
    local mine
    mine=$("$AEGIS" submit --mem 1000 -- "$FAKE" --mib 1000 --seconds 0) || fail submit
    wait_until "root's job waits for nobody's clients" \
        sh -c "[ \"\$('$AEGIS' show --json $mine | python3 -c 'import json,sys; print(json.load(sys.stdin).get(\"wait_code\", \"\"))')\" = mps_user ]"
    is_state "$mine" queued || fail "root's job placed beside nobody's client"
    "$AEGIS" show "$mine" | grep -q "GPU 0 runs MPS clients of user $(id -u nobody)" ||
        fail "reason: $("$AEGIS" show "$mine")"
    kill "$theirs"; wait "$theirs" 2>/dev/null
    "$AEGIS" wait "$mine" > /dev/null || fail "root's job after nobody's client"
}

e2e_run
