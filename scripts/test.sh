#!/usr/bin/env bash
# Run the whole test suite (installing first if this checkout has no venv yet).
# Extra arguments go to pytest, e.g. scripts/test.sh -k settings -x
set -euo pipefail
cd "$(dirname "$0")/.."
# (also when native/ is not built yet: its tests are part of the suite and need the library)
if [ ! -x .venv/bin/qwen3tts ] || [ ! -f native/build/libqwen3tts_native.so ]; then
    scripts/setup.sh
fi
# pytest exits 5 when it collects no test: that is a failure here, never a silent pass.
exec .venv/bin/python -m pytest "$@"
