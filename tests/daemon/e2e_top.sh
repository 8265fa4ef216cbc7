#!/bin/bash
# e2e_top.sh -- `aegis top` end to end on the test GPUs: the full screen
# in a tmux terminal of 80x24 (a clock, bars per GPU, jobs by name and
# user, the queue's REASON), following a resize, quitting with q or
# Ctrl-C with the terminal as it was; one plain snapshot when stdout is
# not a terminal; a clear failure, or retries on screen, without aegisd.
#
# usage: e2e_top.sh AEGISD AEGIS TESTNVML FAKEGPU CATALOG CASE
set -u
AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6
source "$(dirname "$0")/e2e_lib.sh"
command -v tmux >/dev/null || { echo "tmux is not installed"; exit 77; }

# A tmux server of this case's own (its socket in the case's folder, no
# user config), stopped before the folder goes.
tm() { tmux -S "$DIR/tmux.sock" -f /dev/null "$@"; }
trap 'tm kill-server 2>/dev/null; cleanup' EXIT

# A terminal of 80x24 (no status line) running a shell in the work folder.
terminal() {
    tm new-session -d -s top -x 80 -y 24 -c "$DIR/work" \
        "env -i PATH=/usr/bin:/bin TERM=tmux-256color PS1='shell\$ ' bash --norc --noprofile" \
        \; set-option -t top status off || fail "tmux did not start"
    pane_until '^shell\$' || fail "no shell prompt"
}
# The pane's text, one line a row, into pane.txt.
capture() { tm capture-pane -p -t top > pane.txt 2>/dev/null; }
# Waits (at most 20 s) until the pane shows the extended regex $1.
pane_until() {
    local deadline=$((SECONDS + 20))
    until capture && grep -qE -- "$1" pane.txt; do
        [ $SECONDS -lt $deadline ] || return 1
        sleep 0.1
    done
}
# A tmux format of the pane (#{alternate_on}, #{cursor_flag}, ...).
pane_format() { tm display-message -p -t top "$1"; }
# Runs `aegis top ARGS` in the terminal, between two stty snapshots.
run_top() {
    local line="stty -g > stty.before; $AEGIS --socket $AEGIS_SOCKET top $*"
    tm send-keys -t top "$line; echo top-exit=\$?; stty -g > stty.after" Enter
}
# The length of the pane's memory/utilization bar line (the first).
bar_width() { awk '/MEM *\[.*UTIL *\[/ { print length($0); exit }' pane.txt; }
# Waits until the pane is back at the shell after top with status $1 and
# checks the terminal is as top found it: the normal screen, a visible
# cursor, the same termios settings.
top_ended() {
    pane_until "^top-exit=$1" || { cat pane.txt >&2; fail "top did not exit $1"; }
    pane_until '^shell\$ *$' || fail "no shell prompt after top"
    [ "$(pane_format '#{alternate_on}')" = 0 ] || fail "still on the alternate screen"
    [ "$(pane_format '#{cursor_flag}')" = 1 ] || fail "cursor left hidden"
    cmp -s stty.before stty.after || fail "termios not restored: $(cat stty.before stty.after)"
    grep -q 'GPU 0' pane.txt && fail "top's screen left behind: $(cat pane.txt)"
    return 0
}
# Three jobs of 30000 MiB fill the three GPUs (nobody's, which cannot
# open the test GPU's root-owned files, only says so); a fourth waits for
# memory, a fifth is held (after the first, so that it cannot start
# before the hold): the queue has a REASON for each.
fill_and_queue() {
    [ "$(id -u)" = 0 ] || { echo "needs root to submit as another user"; exit 77; }
    first=$("$AEGIS" submit --name trainer-a --mem 30000 -- "$FAKE" --mib 30000 --seconds 90) || fail submit
    runuser -u nobody -- env AEGIS_SOCKET="$AEGIS_SOCKET" AEGIS_TEST_GPU_DIR="$AEGIS_TEST_GPU_DIR" \
        "$AEGIS" submit --name trainer-b --mem 30000 -- sleep 90 > /dev/null ||
        fail "submit as nobody"
    "$AEGIS" submit --name trainer-c --mem 30000 -- "$FAKE" --mib 30000 --seconds 90 > /dev/null || fail submit
    "$AEGIS" submit --name waits-mem --mem 30000 -- "$FAKE" --mib 30000 --seconds 1 > /dev/null || fail submit
    held=$("$AEGIS" submit --name waits-hold --after "$first" -- true) || fail submit
    "$AEGIS" hold "$held" > /dev/null || fail hold
    local deadline=$((SECONDS + 30))
    until "$AEGIS" ls --json | pyjson "
run=[j for j in d if j['state']=='running']
waits=[j for j in d if j.get('wait_reason')]
assert len(run)==3 and len(waits)==2, d" 2>/dev/null; do
        [ $SECONDS -lt $deadline ] || fail "never 3 running and 2 waiting: $("$AEGIS" ls)"
        sleep 0.1
    done
}

# The full screen in 80x24, a resize to 60x12 and to 100x30, then q.
case_top_screen() {
    start
    cd "$DIR/work"
    fill_and_queue
    terminal
    run_top
    # a REASON for the job that waits for memory (which one depends on
    # how long the GPUs were watched)
    pane_until 'waits-mem +[A-Za-z]' || fail "no REASON: $(cat pane.txt)"
    [ "$(pane_format '#{alternate_on}')" = 1 ] || fail "not on the alternate screen"
    [ "$(grep -cE '^GPU [0-2] ' pane.txt)" = 3 ] || fail "not 3 GPUs: $(cat pane.txt)"
    [ "$(grep -cE 'MEM *\[\|* *[0-9]+/40960 MiB\] UTIL *\[' pane.txt)" = 3 ] ||
        fail "no memory and utilization bars: $(cat pane.txt)"
    grep -qE '^aegis top .*[0-9]{2}:[0-9]{2}:[0-9]{2}' pane.txt || fail "no clock: $(cat pane.txt)"
    grep -qE '^ +[0-9]+ +root +.*trainer-a' pane.txt || fail "no trainer-a of root"
    grep -qE '^ +[0-9]+ +nobody +.*trainer-b' pane.txt || fail "no trainer-b of nobody"
    grep -qE '^QUEUED +USER +NAME +REASON' pane.txt || fail "no queue: $(cat pane.txt)"
    grep -qE 'waits-hold +held' pane.txt || fail "no held REASON: $(cat pane.txt)"
    [ "$(bar_width)" = 80 ] || fail "bars not 80 wide: $(bar_width)"
    grep -q 'more' pane.txt && fail "rows cut in 80x24: $(cat pane.txt)"
    # smaller: the bars shrink, the longest list (the queue) is cut first
    tm resize-window -t top -x 60 -y 12 || fail "resize-window"
    pane_until '^ +\+ 2 more$' || fail "no cut rows in 60x12: $(cat pane.txt)"
    [ "$(bar_width)" = 60 ] || fail "bars not 60 wide: $(bar_width)"
    [ "$(wc -l < pane.txt)" -le 12 ] || fail "more than 12 rows"
    tm resize-window -t top -x 100 -y 30 || fail "resize-window"
    pane_until 'waits-hold' || fail "queue not back in 100x30: $(cat pane.txt)"
    [ "$(bar_width)" = 100 ] || fail "bars not 100 wide: $(bar_width)"
    tm send-keys -t top q
    top_ended 0
    # Ctrl-C quits as q does
    run_top -d 0.5
    pane_until 'trainer-b' || fail "no second top: $(cat pane.txt)"
    tm send-keys -t top C-c
    top_ended 0
}

# Not a terminal: one plain snapshot (or -n of them), exit 0.
case_top_snapshot() {
    start
    cd "$DIR/work"
    fill_and_queue
    "$AEGIS" top < /dev/null > snap.txt 2> err.txt || fail "exit $?: $(cat err.txt)"
    [ "$(grep -c '^aegis top ' snap.txt)" = 1 ] || fail "not one snapshot: $(cat snap.txt)"
    grep -q $'\033' snap.txt && fail "escape sequences in the snapshot"
    [ "$(grep -cE 'MEM *\[.*UTIL *\[' snap.txt)" = 3 ] || fail "no bars: $(cat snap.txt)"
    grep -qE 'nobody +.*trainer-b' snap.txt || fail "no trainer-b: $(cat snap.txt)"
    grep -qE 'waits-hold +held' snap.txt || fail "no REASON: $(cat snap.txt)"
    "$AEGIS" top -n 2 --delay 0.2 > snap2.txt || fail "-n 2"
    [ "$(grep -c '^aegis top ' snap2.txt)" = 2 ] || fail "-n 2: not 2 snapshots"
    aegis_refused "--delay" top -d 0
    aegis_refused "-n: '0' is not" top -n 0
    # as wide as $COLUMNS, but never narrower than the layout's 20
    COLUMNS=5 "$AEGIS" top > narrow.txt || fail "COLUMNS=5: exit $?"
    [ "$(awk '{ if (length($0) > n) n = length($0) } END { print n }' narrow.txt)" = 20 ] ||
        fail "COLUMNS=5: not 20 wide: $(cat narrow.txt)"
    aegis_refused "--delay" top --delay soon
    aegis_refused "unexpected argument 'extra'" top extra
}

# aegisd's measure of a running job (used_mib and sm_pct in ls and show
# --json, summed over its GPUs) in top's job lines, per GPU: a job on two
# GPUs holds 1500 MiB and 40% of the SMs on each, beside its --mem 4000.
case_top_measured() {
    start
    cd "$DIR/work"
    id=$("$AEGIS" submit --name pair --gpus 2 --mem 4000 -- \
        "$FAKE" --mib 1500 --smact 0.4 --seconds 60) || fail submit
    local deadline=$((SECONDS + 30))
    until "$AEGIS" ls --json | pyjson "
j=[j for j in d if j['id']==$id][0]
assert j['used_mib']==3000 and j['sm_pct']==80, j" 2>/dev/null; do
        [ $SECONDS -lt $deadline ] || fail "no measure in ls --json: $("$AEGIS" ls --json)"
        sleep 0.1
    done
    until_job "$id" "assert d['used_mib']==3000 and d['sm_pct']==80, d"
    "$AEGIS" top > snap.txt || fail "top: exit $?"
    [ "$(grep -cE "^ +$id root +1500/4000 MiB  SM  40%  pair$" snap.txt)" = 2 ] ||
        fail "not on both GPUs at 1500/4000 MiB, SM 40%: $(cat snap.txt)"
    # a queued job has no measure (it waits for pair, so it cannot start:
    # with room beside pair it otherwise might, once pair is observed)
    "$AEGIS" submit --name later --after "$id" -- true > /dev/null || fail submit
    "$AEGIS" ls --json | pyjson "
j=[j for j in d if j['name']=='later'][0]
assert j['state']=='queued' and 'used_mib' not in j and 'sm_pct' not in j, j" ||
        fail "a queued job with a measure"
}

# Without aegisd: exit 1 with the reason when not a terminal; on one, the
# reason on screen, retried until aegisd answers, then q exits 0.
case_top_down() {
    cd "$DIR/work"
    "$AEGIS" top > out.txt 2> err.txt
    rc=$?
    [ "$rc" = 1 ] || fail "exit $rc without aegisd, not 1"
    grep -q "cannot reach aegisd at $AEGIS_SOCKET" err.txt || fail "message: $(cat err.txt)"
    terminal
    run_top -d 0.2
    pane_until "cannot reach aegisd" || fail "no error on screen: $(cat pane.txt)"
    pane_until "retrying" || fail "not retrying: $(cat pane.txt)"
    start
    pane_until '^GPU 2 ' || fail "no GPUs once aegisd runs: $(cat pane.txt)"
    tm send-keys -t top q
    top_ended 0
}

# aegisd stopped (SIGSTOP) takes the connection and never answers: Ctrl-C
# still ends top at once, the terminal restored, with exit 1.
case_top_hung() {
    start
    cd "$DIR/work"
    pid=$(daemon_pid)
    kill -STOP "$pid"
    terminal
    run_top
    local deadline=$((SECONDS + 20))
    until [ "$(pane_format '#{alternate_on}')" = 1 ]; do
        [ $SECONDS -lt $deadline ] || fail "top never took the screen"
        sleep 0.1
    done
    tm send-keys -t top C-c
    top_ended 1
    kill -CONT "$pid"
}

e2e_run
