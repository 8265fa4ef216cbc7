# fake_lib.sh -- sourced by the CLI tests that run aegis against the
# stand-in aegisd (fake_aegisd.py): a scratch folder, $dir, made the
# current directory and removed at exit with the stand-in.
dir=$(mktemp -d)
fake_pid=
fake_cleanup() {
    [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null
    rm -rf "$dir"
}
trap fake_cleanup EXIT
cd "$dir" || exit 1

# fake_start FAKE_AEGISD.py ANSWERS.json: the stand-in serving ANSWERS on
# $dir/sock, once its socket is there (it is renamed into place ready),
# as AEGIS_SOCKET.
fake_start() {
    /usr/bin/python3 "$1" "$dir/sock" "$2" & fake_pid=$!
    for _ in $(seq 300); do
        [ -S "$dir/sock" ] && { export AEGIS_SOCKET=$dir/sock; return 0; }
        sleep 0.1
    done
    echo "FAIL: the stand-in aegisd did not start"
    exit 1
}
