#!/usr/bin/env bash
# completion_test.sh AEGIS SOURCE_DIR -- the bash completion of pkg/aegis.bash
# against the built aegis: commands, each command's options, file names
# after an option that takes a FILE, nothing after one that takes a number,
# and the values of --state, --user and --workloads.
set -u
AEGIS=$1 SRC=$2
cd "$SRC" || exit 1
source pkg/aegis.bash
status=0

# complete LINE: COMPREPLY for the last word of LINE (a trailing space
# completes an empty word), as bash would fill it in.
complete_line() {
    read -ra COMP_WORDS <<<"$1"
    [[ $1 == *" " ]] && COMP_WORDS+=("")
    COMP_WORDS[0]=$AEGIS
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    _aegis
    printf '%s\n' "${COMPREPLY[@]}" | sort
}
# expect LINE WORD...: every WORD is offered; expect_none LINE: nothing is.
expect() {
    local line=$1 got; shift
    got=$(complete_line "$line")
    for w in "$@"; do
        grep -qxF -- "$w" <<<"$got" ||
            { echo "FAIL: '$line' does not offer $w (got: $got)"; status=1; }
    done
}
expect_none() {
    local got; got=$(complete_line "$1")
    [ -z "$got" ] || { echo "FAIL: '$1' offers: $got"; status=1; }
}

expect "aegis su" submit
expect "aegis " sim gen-trace submit ls show cancel log wait estimate report
# every command of `aegis --help` is offered
n_help=$("$AEGIS" --help | awk '/Commands:$/{on=1;next} on&&/^ +[a-z]/{n++} on&&/^[^ ]/{exit} END{print n}')
n_offered=$(complete_line "aegis " | grep -c .)
[ "$n_help" = "$n_offered" ] ||
    { echo "FAIL: $n_help commands in --help, $n_offered offered"; status=1; }
expect "aegis --so" --socket
expect "aegis submit --m" --mem --model
expect "aegis sim --j" --json
expect "aegis --socket /tmp/s ls --" --all --json --socket
expect "aegis sim --trace data/traces/de" data/traces/demo.csv
expect "aegis sim --catalog data/cat" data/catalog.csv
expect_none "aegis submit --gpus "
expect_none "aegis nosuchcommand --"
# values: job states, users, workload names (job ids: daemon_e2e_admin_completion)
expect "aegis ls --state " queued running done failed cancelled timeout
expect "aegis ls --state queued,r" queued,running
expect "aegis ls --user roo" root
expect "aegis ls -u roo" root
expect "aegis gen-trace --workloads bert_b" bert_base_wiki_bs32_1gpu
exit $status
