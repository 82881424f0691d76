#!/usr/bin/env bash
# Run the whole test suite (installing first if this checkout has no venv yet).
# Extra arguments go to pytest as they are, e.g. scripts/test.sh -k settings -x (one process, no workers).
#
# With no arguments, the suite runs in two parts at once. Everything but the packaging folder runs on
# parallel workers (pytest-xdist, QWEN3TTS_TEST_WORKERS of them, 2 by default; a module stays on one
# worker, so its module-scoped daemons and servers are made once): most of those tests wait on daemons,
# brokers, browsers and timeouts, not on the CPU. The packaging folder runs beside them in one process
# of its own: its Debian roots, packages and container store are made once for the session and shared
# by its modules, which workers would each make again, and most of its time is spent waiting on
# debootstrap, apt and dpkg; its batch work (building roots and packages, lintian) runs at the lowest CPU
# priority (tests/integration/packaging/conftest.py, BATCH), so it takes the cores the workers leave. Its
# output is kept in var/ and printed once both parts have ended, so the two reports do not interleave.
set -euo pipefail
cd "$(dirname "$0")/.."
# (also when native/ is not built yet: its tests are part of the suite and need the library)
if [ ! -x .venv/bin/qwen3tts ] || [ ! -f native/build/libqwen3tts_native.so ]; then
    scripts/setup.sh
fi
# Some images set PYTHONDONTWRITEBYTECODE: then each of the suite's ~130 Python processes (the workers,
# the daemons and commands they start) compiles every source it imports again, and each worker rewrites
# the asserts of every test module again (7 s more of CPU per worker to collect). Here bytecode is kept
# (__pycache__/, ignored by git).
unset PYTHONDONTWRITEBYTECODE
# pytest exits 5 when it collects no test: that is a failure here, never a silent pass.
if [ $# -gt 0 ]; then
    exec .venv/bin/python -m pytest "$@"
fi
mkdir -p var
packaging_log=var/test-packaging.log
.venv/bin/python -m pytest tests/integration/packaging >"$packaging_log" 2>&1 &
packaging=$!
# stopping this script (Ctrl-C, a CI timeout) stops the packaging part too
trap 'kill "$packaging" 2>/dev/null || true' INT TERM
status=0
.venv/bin/python -m pytest -n "${QWEN3TTS_TEST_WORKERS:-2}" --dist loadscope \
    --ignore=tests/integration/packaging || status=$?
packaging_status=0
wait "$packaging" || packaging_status=$?
echo "=== the packaging part (tests/integration/packaging), run beside the part above ==="
cat "$packaging_log"
exit $((status ? status : packaging_status))
