#!/usr/bin/env bash
# Install everything qwen3tts needs on a fresh Debian machine: system packages, a venv in .venv,
# and the package (editable, with the test extras). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# mosquitto: the local broker (tests and the embedded demo); libportaudio2: the ALSA sink;
# alsa-utils: aplay -L diagnostics; systemd: systemd-analyze for the unit tests; libsndfile1: reference
# recordings in any format (soundfile); chromium: the status page's tests drive it headless through
# Playwright (which never downloads a browser of its own here). The Debian package (scripts/package.sh)
# and its fresh-root tests: debootstrap, debhelper (with dpkg-dev), lintian, systemd-container
# (systemd-nspawn boots the root's own systemd), podman and runc (the OCI image; crun refuses this
# machine's hybrid cgroups), debian-archive-keyring (named, so apt brings it to its newest: debootstrap
# checks the trixie root against its Debian 13 keys). cmake, g++: native/ (the OpenVINO CPU
# extension). snapserver, snapclient: the Snapcast zone tests (a real server and two `--player file`
# clients). iproute2, iptables: the lossy-broker test (a network namespace whose loopback drops
# packets); gcc (with g++): the clock-step test builds a small LD_PRELOAD shim.
$SUDO apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    python3 python3-venv mosquitto mosquitto-clients libportaudio2 alsa-utils systemd libsndfile1 \
    chromium debootstrap debian-archive-keyring debhelper lintian systemd-container podman runc cmake g++ \
    snapserver snapclient iproute2 iptables >/dev/null

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# at the versions constraints.txt pins: a release published upstream does not change what the tests run on
.venv/bin/python -m pip install -q -e ".[dev]" --constraint constraints.txt

# native/: libqwen3tts_native.so against the headers and CMake config of the openvino wheel just installed
# (every instruction-set path is compiled on any x86-64; which one runs is chosen at run time).
ov_cmake=$(.venv/bin/python -c 'import openvino, pathlib; print(pathlib.Path(openvino.__file__).parent / "cmake")')
cmake -S native -B native/build -DCMAKE_BUILD_TYPE=Release -DOpenVINO_DIR="$ov_cmake" -DTBB_DIR="$ov_cmake" \
    --log-level=WARNING >/dev/null
cmake --build native/build -j "$(nproc)" >/dev/null
echo "qwen3tts installed in $(pwd)/.venv ($(.venv/bin/qwen3tts --version)); native kernels in native/build"
