# aegis.bash -- bash completion for the aegis command, installed as
# share/bash-completion/completions/aegis. The commands and each command's
# options are read from `aegis --help` and `aegis COMMAND --help` of the
# very binary being completed, so completion never lags behind it; so are
# the values it offers: job ids (`aegis ls --json`, for a command whose
# synopsis takes an ID), job states (the --state line of `aegis ls
# --help`), users (after --user and -u) and workload names (`aegis
# gen-trace --list`, after --workloads).

# The commands `aegis --help` lists (indented "name  summary" lines after
# "Commands:").
_aegis_commands() {
    "$1" --help 2>/dev/null | awk '
        /Commands:$/ { on = 1; next }
        on && /^ +[a-z][a-z-]* +[^ ]/ { print $1; next }
        on && /^[^ ]/ { exit }'
}

# A command's options: those starting an OPTIONS line and those of its
# synopsis ("[--name ...").
_aegis_options() {
    "$1" "$2" --help 2>/dev/null |
        grep -oE '^ +--[a-z][a-z0-9-]*|\[--[a-z][a-z0-9-]*' |
        tr -d ' [' | sort -u
}

# What the option $3 of command $2 takes: "file", "value" or "" (a flag),
# from its help line ("--trace FILE  the job trace").
_aegis_argument() {
    local line
    line=$("$1" "$2" --help 2>/dev/null |
           grep -m1 -E "^ +$3([ =][^ ]|\$)")
    case $line in
    *"$3 "*FILE* | *"$3 "*PATH* | *"$3 "*DIR* | *"$3=FILE"*) echo file ;;
    *"$3 "[A-Za-z0-9]* | *"$3="*) echo value ;;
    esac
}

# The ids of the jobs aegisd lists (the user's unfinished ones, as `aegis
# ls` shows them), through the socket the line names, if any.
_aegis_job_ids() {
    "$1" ${2:+--socket "$2"} ls --json 2>/dev/null |
        grep -oE '"id": *[0-9]+' | grep -oE '[0-9]+$'
}

# The states `aegis ls --state` takes: the list on its help line
# ("--state STATE  only jobs in these states (comma-separated: a, b; ...").
_aegis_states() {
    "$1" ls --help 2>/dev/null | tr -s '\n ' '  ' |
        sed -n 's/.*--state STATE only jobs in these states (comma-separated: \([^;)]*\).*/\1/p' |
        tr -d ' ' | tr ',' '\n'
}

# Whether command $2's synopsis takes a job ID.
_aegis_takes_id() {
    "$1" "$2" --help 2>/dev/null | sed -n '/^SYNOPSIS/,/^[A-Z]/p' |
        grep -qE "aegis $2 .*\bID\b"
}

# The value of option $3 of command $2, current word $4: states, users,
# workload names, or nothing (1) when the option takes none of them.
_aegis_value() {
    local values
    case $3 in
    --state) values=$(_aegis_states "$1") ;;
    --user | -u) COMPREPLY=($(compgen -u -- "$4")); return 0 ;;
    --workloads) values=$("$1" gen-trace --list 2>/dev/null) ;;
    *) return 1 ;;
    esac
    # a comma-separated list: complete its last item
    local done=${4%"${4##*,}"}
    COMPREPLY=($(compgen -P "$done" -W "$values" -- "${4##*,}"))
}

_aegis() {
    local aegis=${COMP_WORDS[0]} cur=${COMP_WORDS[COMP_CWORD]}
    local prev=${COMP_WORDS[COMP_CWORD-1]} cmd="" i=1
    # The command is the first word that is neither an option nor the
    # value of --socket.
    local socket=""
    while [ $i -lt "$COMP_CWORD" ]; do
        case ${COMP_WORDS[i]} in
        --socket) i=$((i + 1)); socket=${COMP_WORDS[i]} ;;
        -*) ;;
        *) cmd=${COMP_WORDS[i]}; break ;;
        esac
        i=$((i + 1))
    done
    COMPREPLY=()
    if [ -z "$cmd" ]; then
        case $prev in
        --socket) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        esac
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "--socket --help --version" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$(_aegis_commands "$aegis")" -- "$cur"))
        fi
        return
    fi
    if [[ $prev == -* ]] && _aegis_value "$aegis" "$cmd" "$prev" "$cur"; then
        return
    fi
    if [[ $prev == --* ]]; then
        case $(_aegis_argument "$aegis" "$cmd" "$prev") in
        file) compopt -o filenames 2>/dev/null
              COMPREPLY=($(compgen -f -- "$cur")); return ;;
        value) return ;;
        esac
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_aegis_options "$aegis" "$cmd")" -- "$cur"))
    elif _aegis_takes_id "$aegis" "$cmd"; then
        COMPREPLY=($(compgen -W "$(_aegis_job_ids "$aegis" "$socket")" -- "$cur"))
    elif [ "$cmd" = submit ]; then
        # a command to queue, or a spec file
        compopt -o filenames 2>/dev/null
        COMPREPLY=($(compgen -c -f -- "$cur"))
    else
        compopt -o filenames 2>/dev/null
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -F _aegis aegis
