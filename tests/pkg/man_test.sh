#!/bin/sh
# man_test.sh MAN_DIR AEGIS CONFIG [DIPP] -- the generated manual pages:
# one per command `aegis --help` (and `dipp --help`) lists, plus aegis(1),
# aegisd(8), aegis.yaml(5) (and dipp(1)); each renders without a groff
# warning and says what its source says.
set -u
MAN=$1 AEGIS=$2 CONFIG=$3 DIPP=${4:-}
status=0
fail() { echo "FAIL: $*"; status=1; }
render() { LC_ALL=C.UTF-8 MANWIDTH=200 man -l "$MAN/$1" 2>/dev/null; }
# commands_of BIN: the commands its --help lists (entries two spaces in)
commands_of() {
    "$1" --help | awk '/Commands:$/{on=1;next} on&&/^  [a-z]/{print $1} on&&/^[^ ]/{exit}'
}

pages="aegis.1 aegisd.8 aegis.yaml.5"
for cmd in $(commands_of "$AEGIS"); do
    pages="$pages aegis-$cmd.1"
done
if [ -n "$DIPP" ]; then
    pages="$pages dipp.1"
    for cmd in $(commands_of "$DIPP"); do
        pages="$pages dipp-$cmd.1"
    done
fi
for p in $pages; do
    [ -s "$MAN/$p" ] || { fail "$p: missing"; continue; }
    warn=$(LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z "$MAN/$p" 2>&1)
    [ -z "$warn" ] || fail "$p: groff: $warn"
    render "$p" | grep -q "^NAME" || fail "$p: no NAME section"
done
# the options a help lists, one a line: -d, --delay, --json ...
options_of() {
    "$@" --help | grep -oE '^ +-[a-zA-Z-][a-z0-9-]*|^ +-[a-zA-Z], --[a-z][a-z0-9-]*' |
        tr -d ' ' | tr ',' ' '
}
# the subcommands of a help that sends the reader to theirs
subcommands_of() {
    "$@" --help | grep -qE '(SUBCOMMAND|COMMAND) --help' || return 0
    "$@" --help | grep -oE '^  [a-z][a-z-]*( |$)' | tr -d ' ' | awk '!seen[$0]++'
}
# every option of every command's help (top's -d, --delay and -n, show's
# --history, --spark and --svg, submit's --notify...), and of its
# subcommands' (dataset add's --format, dipp ground upload's --base), is
# in its page, with ASCII dashes
for p in $pages; do
    case $p in
    aegis-*.1) bin=$AEGIS cmd=${p#aegis-} ;;
    dipp-*.1) bin=$DIPP cmd=${p#dipp-} ;;
    *) continue ;;
    esac
    cmd=${cmd%.1}
    page=$(render "$p")
    for opt in $(options_of "$bin" "$cmd"); do
        printf '%s\n' "$page" | grep -q -- "$opt" || fail "$p: no $opt"
    done
    for sub in $(subcommands_of "$bin" "$cmd"); do
        # the subcommand's own section: its heading to the next one
        section=$(printf '%s\n' "$page" | awk -v h="$(echo "$sub" | tr a-z A-Z)" \
            '$0 == h { on = 1; next } on && /^[A-Z]/ { exit } on')
        [ -n "$section" ] || fail "$p: no section $sub"
        for opt in $(options_of "$bin" "$cmd" "$sub"); do
            printf '%s\n' "$section" | grep -q -- "$opt" || fail "$p: no $sub $opt"
        done
    done
done
render aegisd.8 | grep -q -- "--check-config FILE" || fail "aegisd.8: no --check-config"
# every key of the example configuration, with its default
for key in $(grep -oE '^[a-z_]+:' "$CONFIG"); do
    line=$(grep -m1 "^$key" "$CONFIG")
    render aegis.yaml.5 | grep -qF "$line" || fail "aegis.yaml.5: no '$line'"
done
exit $status
