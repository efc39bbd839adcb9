#!/usr/bin/env bash
# Build the kernel with AddressSanitizer + UndefinedBehaviorSanitizer into native/build/asan
# (a copy of the app package's Python files next to the sanitized app._native) and run the
# kernel tests against it.
# Usage: bash native/sanitize.sh PYTHON   (PYTHON: an interpreter with the test extras)
# Exits non-zero if the build fails, the wrong module is imported, or any test fails.
set -euo pipefail

PY=${1:-python3}
# Absolute, since we change directories (keep the venv's own path: do not resolve links).
if [[ "$PY" == */* ]]; then
    PY="$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")"
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/native/build/asan
SAN_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -O1 -g"

rm -rf "$OUT"
mkdir -p "$OUT"
# The whole package, sub-packages included: app.kernel imports from them, and the
# kernel tests import app.index (the numpy reference of passage layouts), whose store
# reads its Lua scripts.
(cd "$ROOT" && find app \( -name '*.py' -o -name '*.lua' \) -not -path '*/__pycache__/*' \
    -exec cp --parents {} "$OUT/" \;)
# Drop any compiled kernel copied from a source tree: only the sanitized one may load.
rm -f "$OUT"/app/_native*.so

echo "== building app._native with: $SAN_FLAGS"
(
    cd "$OUT"
    NEARDUP_CFLAGS="$SAN_FLAGS" "$PY" - "$ROOT/native" "$OUT" <<'PYEOF'
import sys

sys.path.insert(0, sys.argv[1])
import build_ffi  # noqa: E402

build_ffi.ffibuilder.compile(tmpdir=sys.argv[2], verbose=False)
PYEOF
)

LIBASAN=$(gcc -print-file-name=libasan.so)
if [ ! -e "$LIBASAN" ]; then
    echo "libasan.so not found (gcc -print-file-name gave '$LIBASAN')" >&2
    exit 2
fi

export PYTHONPATH="$OUT"
export LD_PRELOAD="$LIBASAN"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

# Run from the build dir: sys.path[0] is then $OUT, never the source tree's app/.
cd "$OUT"
LOADED=$("$PY" -c 'import app._native as m; print(m.__file__)')
echo "== kernel module under test: $LOADED"
case "$LOADED" in
    "$OUT"/app/_native*) ;;
    *)
        echo "the sanitized kernel is not the one imported" >&2
        exit 3
        ;;
esac

# --capture=sys: the sanitizers write their reports to fd 2, which must reach the log
# even when the process aborts (fd-level capture would swallow them).
"$PY" -m pytest -q -p no:cacheprovider --capture=sys --rootdir "$ROOT" "$ROOT"/tests/test_kernel*.py
