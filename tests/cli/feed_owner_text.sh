#!/bin/bash
# feed_owner_text.sh AEGIS -- a feed segment's owner is a name from the
# user database, which may hold what a terminal acts on (an LDAP name, or
# one made with useradd --badname: here a C1 CSI and a right-to-left
# override; shadow refuses ESC itself): `aegis feed ls` (and gc) print it
# safe ('?', text_safe.h), as they print everything else another user
# wrote. Needs root (a user is made, and a segment given to it); exit 77
# elsewhere, or where useradd has no --badname.
set -u
aegis=$1
[ "$(id -u)" = 0 ] || { echo "needs root"; exit 77; }
useradd --help | grep -q -- --badname || { echo "useradd has no --badname"; exit 77; }
user=$'aegis-e2e-\xc2\x9b31m\xe2\x80\xae'
seg=/dev/shm/aegis-feed-ownertext$$
out=$(mktemp)
cleanup() { rm -f "$seg" "$out"; userdel "$user" 2>/dev/null; }
trap cleanup EXIT
userdel "$user" >/dev/null 2>&1
useradd --badname -M -N -s /bin/sh "$user" || { echo "FAIL: useradd"; exit 1; }
# not a segment a producer made (corrupt to ls), but the user's
: > "$seg"
chown "$user" "$seg" || { echo "FAIL: chown"; exit 1; }
fails=0
# gc as nobody, who may open the segment (mode 600) no more than remove
# other tests' dead ones (/dev/shm is sticky): "left ...: user X's"
chmod 600 "$seg"
for cmd in ls gc; do
    if [ "$cmd" = gc ]; then
        runuser -u nobody -- "$aegis" feed gc > "$out" 2>&1
    else
        "$aegis" feed ls > "$out" 2>&1
    fi
    if LC_ALL=C grep -q $'\xc2\x9b\|\xe2\x80\xae' "$out"; then
        echo "FAIL feed $cmd: the owner's name printed raw:"; od -c "$out" | head; fails=$((fails + 1))
    elif ! grep -qF "user aegis-e2e-?31m?" "$out"; then
        echo "FAIL feed $cmd: no 'user aegis-e2e-?31m?' in:"; cat -v "$out"; fails=$((fails + 1))
    else
        echo "ok   feed $cmd"
    fi
done
[ "$fails" -eq 0 ]
