#!/bin/sh
# The tensorsocket compatibility package is installed where TensorSocket is
# absent, and left out, saying so, where a TensorSocket is importable
# (python/install_tensorsocket.cmake). Usage: tensorsocket_install.sh BUILD
set -u
BUILD=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# A machine without TensorSocket (this test's PYTHONPATH names nothing).
if /usr/bin/python3 -c "import tensorsocket" 2>/dev/null; then
    echo "a tensorsocket is importable here: the absent case is skipped"
else
    out=$(cmake --install "$BUILD" --component tensorsocket --prefix "$TMP/a") ||
        fail "install: $out"
    echo "$out" | grep -q "installing aegis's compatibility package" ||
        fail "no word of the install: $out"
    init=$(find "$TMP/a" -path '*/tensorsocket/__init__.py')
    [ -n "$init" ] || fail "no tensorsocket/__init__.py under $TMP/a"
    for f in producer consumer payload heartbeat; do
        [ -f "$(dirname "$init")/$f.py" ] || fail "no tensorsocket/$f.py"
    done
fi

# A machine where TensorSocket is installed: a stand-in for it.
mkdir -p "$TMP/real/tensorsocket"
echo '__version__ = "0.0.4"' > "$TMP/real/tensorsocket/__init__.py"
out=$(PYTHONPATH="$TMP/real" cmake --install "$BUILD" --component tensorsocket \
      --prefix "$TMP/b") || fail "install: $out"
echo "$out" | grep -q "TensorSocket is installed ($TMP/real/tensorsocket/__init__.py); aegis's compatibility package is not installed" ||
    fail "no word of the skip: $out"
[ -z "$(find "$TMP/b" -name tensorsocket 2>/dev/null)" ] || fail "installed over TensorSocket"
echo "tensorsocket install: ok"
