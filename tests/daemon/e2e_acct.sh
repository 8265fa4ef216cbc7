#!/bin/bash
# e2e_acct.sh AEGISD AEGIS NVML FAKE CATALOG CASE -- accounting over a
# period (issue 30 item 8): `aegis report -u USER --since T --until T
# [--csv]` counts one user's jobs submitted in [since, until); `aegis
# log -f` without an id follows the user's last job (task-spooler's tsp
# -t); `aegis db backup FILE` writes a copy of the database by SQLite's
# online backup, for root or aegisd's user only; `aegis clear` takes a
# user's finished jobs out of ls and ls --all (tsp -C), report still
# counts them; history_days forgets finished jobs, with their logs.
set -u; AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6; source "$(dirname "$0")/e2e_lib.sh"

case_acct_report() {
    needs_root
    start
    cd "$DIR/work"
    a=$(as nobody "$AEGIS" submit -- true) || fail "submit a"
    b=$("$AEGIS" submit -- true) || fail "submit b"
    c=$(as nobody "$AEGIS" submit -- true) || fail "submit c"
    "$AEGIS" wait "$a" "$b" "$c" > /dev/null || fail "jobs failed"
    "$AEGIS" report -u nobody --json | pyjson "
assert [j['job_id'] for j in d['jobs']]==[$a, $c], d['jobs']
assert [u['user'] for u in d['users']]==['nobody'], d['users']" ||
        fail "report -u nobody"
    ta=$(job_field "$a" submitted) tc=$(job_field "$c" submitted)
    "$AEGIS" report -u nobody --since "$ta" --until "$tc" --json | pyjson "
assert [j['job_id'] for j in d['jobs']]==[$a], d['jobs']" || fail "--until"
    "$AEGIS" report --user nobody --since "$ta" --until "$tc" --csv > r.csv ||
        fail "report --csv"
    [ "$(wc -l < r.csv)" = 2 ] || fail "csv: $(cat r.csv)"
    grep -q ",$a,nobody," r.csv || fail "csv row: $(cat r.csv)"
    # a mistyped user is said, not an empty list
    aegis_refused "-u nosuchuser: no such user" report -u nosuchuser
    aegis_refused "-u nosuchuser: no such user" ls -u nosuchuser
    aegis_refused "--until is not after --since" report --since 1h --until 2h
    aegis_refused "--until is not after --since" report --until 0
    # a day the calendar lacks is refused, not rolled into the next month;
    # a time is plain decimal seconds, never infinite, hex or past 9999
    aegis_refused "no day or time of the calendar" report --since 2026-02-30
    aegis_refused "no day or time of the calendar" report --until 2026-11-31T12:00:00
    for t in inf nan 1e400 0x6B14D4E2 -5 100000d; do
        aegis_refused "--since: '$t' is not a Unix time" report --since "$t"
    done
    aegis_refused "--csv and --json: give one of them" report --csv --json
    "$AEGIS" report --until later 2> err.txt; [ $? = 2 ] || fail "bad --until: exit"
    grep -q -- "--until: 'later'" err.txt || fail "bad --until: $(cat err.txt)"
}

# A GPU's energy counter that jumps (a glitch of 5e10 J at once) is not
# charged to the job running there, which got it whole: the jump is
# logged, and that read counts power x time.
case_acct_energy_jump() {
    start
    cd "$DIR/work"
    id=$("$AEGIS" submit -- "$FAKE" --mib 100 --seconds 600) || fail "submit"
    wait_until "job $id running" is_state "$id" running
    : > "$DIR/state/aegisd.log"
    local g then e mw
    # the stand-in rewrites its counter at each read: jump until one is seen
    until grep -q "GPU [0-9]: energy counter rose" "$DIR/state/aegisd.log"; do
        for g in 0 1 2; do
            read -r then e mw < "$AEGIS_TEST_GPU_DIR/energy$g" || continue
            echo "$then $((e + 50000000000000)) $mw" > "$AEGIS_TEST_GPU_DIR/energy$g"
        done
        sleep 0.2
    done
    "$AEGIS" show --json "$id" | pyjson "assert d['energy_j'] < 1e6, d['energy_j']" ||
        fail "the jump was charged: $(job_field "$id" energy_j) J"
    "$AEGIS" cancel "$id" > /dev/null
}

# A running job keeps the energy it used across a restart of aegisd (it
# restarted from 0, and its end overwrote the total with what came after).
case_acct_energy_restart() {
    start
    cd "$DIR/work"
    id=$("$AEGIS" submit -- "$FAKE" --mib 100 --seconds 600) || fail "submit"
    wait_until "job $id used energy" sh -c "'$AEGIS' show --json $id | python3 -c \
'import json,sys; sys.exit(0 if json.load(sys.stdin)[\"energy_j\"] > 0 else 1)'"
    restart
    "$AEGIS" show --json "$id" | pyjson "assert d['state'] == 'running' and d['energy_j'] > 0, d['energy_j']" ||
        fail "energy after the restart: $(job_field "$id" energy_j)"
    "$AEGIS" cancel "$id" > /dev/null
}

# Job $1's energy over its one attempt against W watts (the stand-in's
# 55 + 345 x SMACT) x its duration: within [0.8, 1.05] of it. Up to a tick
# at either end is not the job's (its start is a read late, its end
# between two reads), hence the slack below.
energy_near() {
    "$AEGIS" show --json "$1" | pyjson "
a=d['attempt_list'][-1]; want=$2*(a['ended']-a['started'])
print('job $1: %.0f J, %.0f J expected ($2 W x %.1f s)' % (d['energy_j'], want, a['ended']-a['started']))
assert 0.8*want <= d['energy_j'] <= 1.05*want, (d['energy_j'], want)" ||
        fail "job $1: $(job_field "$1" energy_j) J, not ~$2 W x its duration"
}

# A kill -9 of aegisd loses none of a running job's energy: it is saved
# with each tick's commit, with the GPU's counter reading, and the
# counter's rise while aegisd was down is charged at its restart (it was
# saved every 60 s: a job under a minute had 0 J after the restart).
case_acct_energy_kill9() {
    start
    cd "$DIR/work"
    id=$("$AEGIS" submit --mem 1000 -- "$FAKE" --mib 1000 --seconds 0 --smact 0.5 \
        --until "$DIR/go") || fail "submit"
    until_job "$id" "assert d['energy_j'] > 1500"
    local before; before=$(job_field "$id" energy_j)
    signal_stop KILL
    start
    "$AEGIS" show --json "$id" | pyjson "assert d['state']=='running' and d['energy_j'] >= $before, d['energy_j']" ||
        fail "energy after kill -9: $(job_field "$id" energy_j) J, $before J before"
    until_job "$id" "assert d['energy_j'] > $before + 1500"
    touch "$DIR/go"
    "$AEGIS" wait "$id" > /dev/null || fail "job $id failed"
    energy_near "$id" 227.5
}

# Energy drawn while aegisd is down is charged to the jobs that drew it:
# one that ends during the outage (SMACT 0.5: 227.5 W) and one that runs
# through it (0.8: 331 W), each alone on its GPU. The rise of their GPUs'
# counters over the outage is split at restart (it was taken as a new
# baseline, and charged to nobody).
case_acct_energy_outage() {
    start
    cd "$DIR/work"
    a=$("$AEGIS" submit --mem 30000 -- "$FAKE" --mib 1000 --seconds 0 --smact 0.5 \
        --until "$DIR/go_a") || fail "submit a"
    b=$("$AEGIS" submit --mem 30000 -- "$FAKE" --mib 1000 --seconds 0 --smact 0.8 \
        --until "$DIR/go_b") || fail "submit b"
    until_job "$a" "assert d['energy_j'] > 500 and d['pid'] > 0"
    until_job "$b" "assert d['energy_j'] > 500"
    local pid; pid=$(job_field "$a" pid)
    signal_stop TERM
    sleep 3 # the outage: a runs in it, then ends
    touch "$DIR/go_a"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    sleep 2 # and its GPU idles
    : > "$DIR/state/aegisd.log"
    start
    grep -q "charged .* J drawn while aegisd was down" "$DIR/state/aegisd.log" ||
        fail "no outage charge logged"
    "$AEGIS" wait "$a" > /dev/null || fail "job $a failed"
    touch "$DIR/go_b"
    "$AEGIS" wait "$b" > /dev/null || fail "job $b failed"
    energy_near "$a" 227.5
    energy_near "$b" 331
}

# A GPU counter that went back while aegisd was down (a driver reload)
# charges nobody, and the log says so.
case_acct_energy_counter_back() {
    start
    cd "$DIR/work"
    id=$("$AEGIS" submit --mem 1000 -- "$FAKE" --mib 1000 --seconds 0 --smact 0.5 \
        --until "$DIR/go") || fail "submit"
    until_job "$id" "assert d['energy_j'] > 500"
    signal_stop TERM
    local g then e mw
    # the driver reloaded: every counter from 0, and (as the stand-in
    # counts it) held there until aegisd reads it again, however long the
    # restart takes on a loaded machine: at the job's power it could rise
    # past the saved reading first, and no longer look gone back
    for g in 0 1 2; do
        read -r then e mw < "$AEGIS_TEST_GPU_DIR/energy$g" || continue
        echo "$then 0 0" > "$AEGIS_TEST_GPU_DIR/energy$g"
    done
    : > "$DIR/state/aegisd.log"
    start
    grep -q "energy counter went back .* charged to nobody" "$DIR/state/aegisd.log" ||
        fail "no counter reset logged"
    touch "$DIR/go"
    "$AEGIS" wait "$id" > /dev/null || fail "job $id failed"
    # what it drew after the restart only, not a counter's worth
    "$AEGIS" show --json "$id" | pyjson "
a=d['attempt_list'][-1]
assert d['energy_j'] <= 227.5*1.05*(a['ended']-a['started']), d['energy_j']" ||
        fail "the reset was charged: $(job_field "$id" energy_j) J"
}

# GPU $1's saved energy row's time (table gpu_energy), "" when none.
energy_row_t() {
    python3 - "$DIR/state/aegis.db" "$1" <<'PY'
import sqlite3, sys
row = sqlite3.connect(sys.argv[1]).execute(
    "SELECT t FROM gpu_energy WHERE gpu = ?", (int(sys.argv[2]),)).fetchone()
print(repr(row[0]) if row else "")
PY
}
# Whether GPU $1's row's time is no longer $2.
energy_row_moved() { [ "$(energy_row_t "$1")" != "$2" ]; }

# An idle GPU's energy row is saved at the start and then kept, not
# rewritten at each tick (its counter rises by its idle draw, which no
# job is charged): while a job's GPU's row is rewritten tick after tick,
# in the commits that would carry the idle ones, theirs stay as saved.
case_acct_energy_idle_row() {
    start
    cd "$DIR/work"
    local g idle=() busy t seen
    for g in 0 1 2; do
        [ -n "$(energy_row_t $g)" ] || fail "GPU $g: no row saved at the start"
    done
    id=$("$AEGIS" submit --mem 1000 -- "$FAKE" --mib 1000 --seconds 0 \
        --until "$DIR/go") || fail "submit"
    until_job "$id" "assert d['state']=='running' and d['energy_j'] > 0"
    busy=$(job_field "$id" gpu_ids | tr -d '[]')
    for g in 0 1 2; do
        [ "$g" = "$busy" ] || idle+=("$g:$(energy_row_t $g)")
    done
    # two rewrites of the job's GPU's row: two ticks committed since
    for seen in 1 2; do
        t=$(energy_row_t "$busy")
        wait_until "GPU $busy's row rewritten" energy_row_moved "$busy" "$t"
    done
    for g in "${idle[@]}"; do
        [ "$(energy_row_t "${g%%:*}")" = "${g#*:}" ] ||
            fail "idle GPU ${g%%:*}'s row rewritten: t ${g#*:} -> $(energy_row_t "${g%%:*}")"
    done
    touch "$DIR/go"
    "$AEGIS" wait "$id" > /dev/null || fail "job $id failed"
}

# A job's CO2 is at the grid intensity and PUE in force while it ran: a
# reload changing them leaves a past job's row as it was (it was
# recomputed at the new figures: last month's report changed).
case_acct_co2_reload() {
    printf 'grid_intensity_g_per_kwh: 400\npue: 1.2\n' >> "$DIR/aegis.yaml"
    start
    cd "$DIR/work"
    a=$("$AEGIS" submit -- "$FAKE" --mib 1000 --seconds 2 --smact 0.4) || fail "submit a"
    "$AEGIS" wait "$a" > /dev/null || fail "job $a failed"
    "$AEGIS" report --json > before.json || fail "report"
    sed -i 's/^grid_intensity_g_per_kwh: 400/grid_intensity_g_per_kwh: 100/; s/^pue: 1.2/pue: 1.0/' \
        "$DIR/aegis.yaml"
    reload
    b=$("$AEGIS" submit -- "$FAKE" --mib 1000 --seconds 2 --smact 0.4) || fail "submit b"
    "$AEGIS" wait "$b" > /dev/null || fail "job $b failed"
    "$AEGIS" report --csv > r.csv || fail "report --csv"
    "$AEGIS" report --json > r.json || fail "report --json"
    python3 "$HERE_LIB/check_report.py" r.csv r.json daemon || fail "report schema"
    python3 - before.json r.json "$a" "$b" <<'PY' || fail "CO2 after the reload"
import json, sys
old = {j['job_id']: j for j in json.load(open(sys.argv[1]))['jobs']}
new = json.load(open(sys.argv[2]))
rows = {j['job_id']: j for j in new['jobs']}
a, b = rows[int(sys.argv[3])], rows[int(sys.argv[4])]
was = old[int(sys.argv[3])]
assert a['energy_j'] > 0 and b['energy_j'] > 0, (a, b)
assert abs(a['co2_g'] - was['co2_g']) < 1e-9, ('a changed', was['co2_g'], a['co2_g'])
near = lambda x, y: abs(x - y) < 1e-6 * y  # sums of a tick's parts each
assert near(a['grid_intensity_g_per_kwh'], 400) and near(a['pue'], 1.2), a
assert abs(a['co2_g'] - a['energy_j'] / 3.6e6 * 1.2 * 400) < 1e-6, a
assert near(b['grid_intensity_g_per_kwh'], 100) and near(b['pue'], 1.0), b
assert abs(b['co2_g'] - b['energy_j'] / 3.6e6 * 100) < 1e-6, b
assert new['grid_intensity_g_per_kwh'] == 100 and new['pue'] == 1.0, new
assert abs(new['total']['co2_g'] - a['co2_g'] - b['co2_g']) < 1e-6, new['total']
PY
}

# A job that ends while aegisd is down ends when it ended, not when
# aegisd came back (its run time and GPU-hours grew with the outage).
case_acct_end_while_down() {
    start
    cd "$DIR/work"
    id=$("$AEGIS" submit -- "$FAKE" --mib 100 --seconds 0 --until "$DIR/go") || fail "submit"
    wait_until "job $id's pid known" eval '[ "$(job_field "$id" pid)" -gt 0 ] 2>/dev/null'
    local pid; pid=$(job_field "$id" pid)
    signal_stop TERM
    touch "$DIR/go"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    local ended; ended=$(date +%s)
    sleep 3 # the outage the job's end must not take in
    start
    "$AEGIS" wait "$id" > /dev/null || fail "job $id not done"
    "$AEGIS" show --json "$id" | pyjson "assert d['finished'] <= $ended + 1, (d['finished'], $ended)" ||
        fail "finished at aegisd's return: $(job_field "$id" finished), ended $ended"
}

case_acct_log_last() {
    needs_root
    start
    cd "$DIR/work"
    as nobody "$AEGIS" log -f 2> err.txt; [ $? = 2 ] || fail "no jobs: exit"
    grep -q "you have no jobs" err.txt || fail "no jobs: $(cat err.txt)"
    as nobody "$AEGIS" submit -- sh -c 'echo first' > /dev/null || fail "submit first"
    # root's job comes later: nobody's last job is still its own
    "$AEGIS" submit -- sh -c 'echo root' > /dev/null || fail "submit root"
    last=$(as nobody "$AEGIS" submit -- sh -c 'echo go; echo done-last') || fail submit
    [ "$(as nobody "$AEGIS" log -f)" = "go
done-last" ] || fail "log -f: $(as nobody "$AEGIS" log -f)"
    [ "$(as nobody "$AEGIS" log)" = "go
done-last" ] || fail "log without -f"
    "$AEGIS" show --json "$last" | pyjson "assert d['state']=='done', d" ||
        fail "log -f returned before its end"
}

case_acct_backup() {
    needs_root
    start
    cd "$DIR/work"
    id=$("$AEGIS" submit --name kept -- true) || fail submit
    "$AEGIS" wait "$id" > /dev/null || fail "job failed"
    "$AEGIS" db backup copy.db > /dev/null || fail "db backup"
    [ "$(stat -c %a copy.db)" = 600 ] || fail "mode $(stat -c %a copy.db)"
    python3 - "$DIR/work/copy.db" "$id" <<'PY' || fail "the copy lacks the job"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
row = db.execute("SELECT name, state FROM jobs WHERE id = ?", (int(sys.argv[2]),)).fetchone()
assert row == ("kept", "done"), row
assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
PY
    aegis_refused "copy.db: File exists" db backup copy.db
    as nobody "$AEGIS" db backup /tmp/nobody.db 2> err.txt && fail "nobody backed up"
    grep -q "permission denied: only root or aegisd's user" err.txt ||
        fail "nobody: $(cat err.txt)"
    [ ! -e /tmp/nobody.db ] || fail "nobody's copy written"
    aegis_refused "not a db command" db restore x.db
}

case_acct_clear() {
    needs_root
    start
    cd "$DIR/work"
    mine=$(as nobody "$AEGIS" submit -- echo mine-out) || fail "submit mine"
    theirs=$("$AEGIS" submit -- true) || fail "submit theirs"
    as nobody "$AEGIS" wait "$mine" > /dev/null || fail "mine failed"
    "$AEGIS" wait "$theirs" > /dev/null || fail "theirs failed"
    [ "$(as nobody "$AEGIS" clear)" = "cleared 1 finished jobs from your listings" ] ||
        fail "clear said: $(as nobody "$AEGIS" clear)"
    # `aegis log` without an ID is still the last job its user submitted
    [ "$(as nobody "$AEGIS" log 2>&1)" = mine-out ] ||
        fail "log of the last job after clear: $(as nobody "$AEGIS" log 2>&1)"
    queued=$(as nobody "$AEGIS" submit --gpus 3 -- "$FAKE" --mib 100 --seconds 600) ||
        fail "submit queued"
    "$AEGIS" ls --all --json | pyjson "
ids=[j['id'] for j in d]
assert $mine not in ids and $theirs in ids and $queued in ids, ids" ||
        fail "ls --all after clear"
    "$AEGIS" show --json "$mine" | pyjson "assert d['state']=='done', d" ||
        fail "a cleared job is gone from show"
    "$AEGIS" report --json | pyjson "
assert $mine in [j['job_id'] for j in d['jobs']], d['jobs']" ||
        fail "report lost a cleared job"
}

case_acct_retention() {
    echo "history_days: 0.00002" >> "$DIR/aegis.yaml" # 1.7 s
    start
    cd "$DIR/work"
    old=$("$AEGIS" submit -- sh -c 'echo old') || fail "submit old"
    "$AEGIS" wait "$old" > /dev/null || fail "old failed"
    [ -e "$DIR/state/logs/$old.out" ] || fail "no log to prune: $(ls "$DIR/state/logs")"
    dep=$("$AEGIS" submit -- true) || fail "submit dep"
    "$AEGIS" wait "$dep" > /dev/null || fail "dep failed"
    kept=$("$AEGIS" submit -- "$FAKE" --mib 100 --seconds 600) || fail "submit kept"
    # queued (GPU 2 drained: it wants all 3), after dep: dep is kept while
    # it waits (it was forgotten, and the job then cancelled at the next
    # restart, "job N ... does not exist")
    "$AEGIS" drain 2 > /dev/null || fail "drain"
    after=$("$AEGIS" submit --gpus 3 --after "afterany:$dep" -- true) || fail "submit after"
    wait_until "the old job forgotten" eval \
        '! "$AEGIS" show "$old" > /dev/null 2>&1'
    "$AEGIS" show "$dep" > /dev/null || fail "a job a queued one runs after was forgotten"
    restart
    is_state "$after" queued || fail "job $after: $("$AEGIS" show "$after")"
    "$AEGIS" cancel "$after" > /dev/null
    "$AEGIS" show "$old" 2>&1 | grep -q "no such job" || fail "show: $("$AEGIS" show "$old" 2>&1)"
    [ ! -e "$DIR/state/logs/$old.out" ] && [ ! -e "$DIR/state/logs/$old.err" ] ||
        fail "its logs kept: $(ls "$DIR/state/logs")"
    "$AEGIS" show --json "$kept" > /dev/null || fail "a running job was forgotten"
    grep -q "history_days 2e-05: forgot 1 finished jobs" "$DIR/state/aegisd.log" ||
        fail "no log line"
}

# Makes the user aegis-e2e-<e9>t<e9> (a login name that is not UTF-8), in a
# group of its own, aegis-e2e-gPID, both removed at exit; exit 77 where
# useradd takes no such name (an older one). The group's gid in $e2e_gid.
badname_user() {
    needs_root
    useradd --help | grep -q -- --badname ||
        { echo "useradd has no --badname"; exit 77; }
    # not locals: the EXIT trap runs after the case has returned
    e2e_user=$'aegis-e2e-\xe9t\xe9' e2e_group=aegis-e2e-g$$
    trap 'userdel "$e2e_user" 2>/dev/null; groupdel "$e2e_group" 2>/dev/null; cleanup' EXIT
    userdel "$e2e_user" >/dev/null 2>&1
    groupadd "$e2e_group" || fail "groupadd"
    useradd --badname -M -N -G "$e2e_group" -s /bin/sh "$e2e_user" || fail "useradd"
    e2e_gid=$(getent group "$e2e_group" | cut -d: -f3)
}

# -u with a login name that is not UTF-8 (here the caller's own): jansson
# takes no such string, so ls and report sent no user at all and listed
# every user's jobs. The name travels as its uid.
case_acct_user_not_utf8() {
    badname_user
    local user=$e2e_user
    start
    cd "$DIR/work"
    # (its HOME, USER and LOGNAME, not UTF-8, are not passed: said on stderr)
    a=$(as "$user" "$AEGIS" submit -- true 2> /dev/null) || fail "submit as the user"
    b=$("$AEGIS" submit -- true) || fail "submit b"
    "$AEGIS" wait "$a" "$b" > /dev/null || fail "jobs failed"
    as "$user" "$AEGIS" ls --all -u "$user" --json > ls.json || fail "ls -u: exit $?"
    pyjson "assert [j['id'] for j in d]==[$a], d" < ls.json ||
        fail "ls -u (not UTF-8): $(cat ls.json)"
    as "$user" "$AEGIS" report -u "$user" --json > report.json ||
        fail "report -u: exit $?"
    pyjson "assert [j['job_id'] for j in d['jobs']]==[$a], d['jobs']" < report.json ||
        fail "report -u (not UTF-8): $(cat report.json)"
    # the name itself: each byte that starts no UTF-8 character as '?'
    # (it was null, and report's rows had none)
    pyjson "assert [j['user'] for j in d['jobs']]==['aegis-e2e-?t?'], d['jobs']" < report.json ||
        fail "report's user (not UTF-8): $(cat report.json)"
    "$AEGIS" ls --all --json > ls.json || fail "ls: exit $?"
    pyjson "assert [j['user'] for j in d if j['id']==$a]==['aegis-e2e-?t?'], d" < ls.json ||
        fail "ls's user (not UTF-8): $(cat ls.json)"
    "$AEGIS" show --json "$a" | pyjson "assert d['user']=='aegis-e2e-?t?', d" ||
        fail "show's user (not UTF-8)"
}

# The same user's job queued across a restart: the name came back from
# the store as null (not UTF-8), and the job ran as user "(null)" for its
# groups and limits, without the user's groups. It now has them.
case_acct_user_not_utf8_restart() {
    badname_user
    local user=$e2e_user id g
    start
    cd "$DIR/work"
    for g in 0 1 2; do "$AEGIS" drain $g > /dev/null || fail "drain $g"; done
    id=$(as "$user" "$AEGIS" submit -- id -G 2> /dev/null) || fail "submit as the user"
    restart
    for g in 0 1 2; do "$AEGIS" resume $g > /dev/null || fail "resume $g"; done
    "$AEGIS" wait "$id" > /dev/null || fail "job $id: $("$AEGIS" log --stderr "$id")"
    "$AEGIS" log "$id" | tr ' ' '\n' | grep -qx "$e2e_gid" ||
        fail "the job had not the user's group $e2e_gid after the restart: $("$AEGIS" log "$id")"
}

e2e_run
