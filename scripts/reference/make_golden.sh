#!/usr/bin/env bash
# Regenerate tests/fixtures/golden/ from the official Qwen3-TTS implementation, in one command.
#
#   scripts/reference/make_golden.sh [--product-python PY] [--out DIR]
#
# Creates (or reuses) the isolated reference venv scripts/reference/.venv with the pinned official
# stack, then runs make_golden.py in it. The tiny checkpoints are written by the product venv
# (default: <repo>/.venv/bin/python, which must have the qwen3tts package installed).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$here/.venv"
# The whole official stack, pinned; qwen-tts goes in without its dependencies (gradio, torchaudio,
# sox, onnxruntime are not needed for the 12 Hz path and are stubbed, see stubs.py).
pins="torch==2.13.0 transformers==4.57.3 accelerate==1.12.0 einops safetensors soundfile librosa numpy"
qwen_tts_pin="qwen-tts==0.1.1"
stamp="$venv/.golden-pins"

if [[ ! -x "$venv/bin/python" || "$(cat "$stamp" 2>/dev/null)" != "$pins $qwen_tts_pin" ]]; then
    echo "make_golden: creating the reference venv in $venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    # shellcheck disable=SC2086  # $pins is a list of requirement specifiers
    "$venv/bin/pip" install --quiet $pins
    "$venv/bin/pip" install --quiet --no-deps "$qwen_tts_pin"
    echo "$pins $qwen_tts_pin" > "$stamp"
fi

product_python="$repo/.venv/bin/python"
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    [[ "${args[i]}" == "--product-python" ]] && product_python="${args[i + 1]:-}"
done
if ! "$product_python" -c "import qwen3tts.model.tiny" 2>/dev/null; then
    echo "make_golden: $product_python cannot import qwen3tts.model.tiny; set up the product venv" \
         "first or pass --product-python" >&2
    exit 1
fi

cd "$here"
exec "$venv/bin/python" make_golden.py --product-python "$product_python" "$@"
