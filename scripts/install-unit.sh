#!/usr/bin/env bash
# Install qwen3tts as a systemd service: code + venv in /opt/qwen3tts, config in /etc/qwen3tts,
# state (spool, bundle) in /var/lib/qwen3tts, OpenVINO compile cache in /var/cache/qwen3tts: the unit's
# StateDirectory=/CacheDirectory=, which the daemon reads from $STATE_DIRECTORY/$CACHE_DIRECTORY.
# Run as root from a checkout. It does not start the service and never overwrites an existing config.
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX=/opt/qwen3tts

# procps: /bin/kill for the unit's ExecReload=; udev: the `render` group of SupplementaryGroups= (as the
# Debian package depends on them)
apt-get install -y -qq python3-venv libportaudio2 libasound2 procps udev >/dev/null
mkdir -p "$PREFIX"
tar --exclude=./.venv --exclude=./var --exclude=./.git -cf - . | tar -C "$PREFIX" -xf -
python3 -m venv "$PREFIX/.venv"
"$PREFIX/.venv/bin/pip" install -q "$PREFIX"

mkdir -p /etc/qwen3tts
if [ ! -f /etc/qwen3tts/qwen3tts.yaml ]; then
    # the bundle is set explicitly, so a missing one is an error, never the random demo bundle
    sed -e 's#^  bundle: .*#  bundle: /var/lib/qwen3tts/bundle#' config/qwen3tts.yaml >/etc/qwen3tts/qwen3tts.yaml
fi
[ -f /etc/qwen3tts/mqtt.pass ] || install -m 0600 /dev/null /etc/qwen3tts/mqtt.pass
[ -f /etc/qwen3tts/http.token ] || install -m 0600 /dev/null /etc/qwen3tts/http.token
install -m 0644 systemd/qwen3tts.service /etc/systemd/system/qwen3tts.service
systemctl daemon-reload 2>/dev/null || true
cat <<MSG
installed. Next:
  $PREFIX/.venv/bin/qwen3tts build --checkpoint /path/to/Qwen3-TTS-12Hz-0.6B-CustomVoice --out /var/lib/qwen3tts/bundle
    (docs/models.md: where the checkpoints are and how to download them)
  STATE_DIRECTORY=/var/lib/qwen3tts CACHE_DIRECTORY=/var/cache/qwen3tts $PREFIX/.venv/bin/qwen3tts doctor
    (without --config, commands read /etc/qwen3tts/qwen3tts.yaml)
  edit /etc/qwen3tts/qwen3tts.yaml (mqtt.host, voice), put the MQTT password in /etc/qwen3tts/mqtt.pass
  systemctl enable --now qwen3tts
MSG
