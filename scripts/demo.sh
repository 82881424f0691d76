#!/usr/bin/env bash
# The main job on the embedded default: today, write a tiny release-layout checkpoint and read it
# back through the same loader a real download goes through. (Grows into the daemon demo.)
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p var
.venv/bin/qwen3tts tiny var/tiny-checkpoint --variant custom_voice
.venv/bin/qwen3tts inspect var/tiny-checkpoint
