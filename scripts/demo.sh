#!/usr/bin/env bash
# The main job on the embedded default: the daemon with a loopback mosquitto (started if none runs),
# the tiny bundle (built on first use) and the WAV sink (ALSA when a sound card exists). It speaks one
# announcement sent over MQTT, prints where the audio went and the mosquitto_pub line to try, then
# keeps serving until Ctrl-C. Without a terminal (CI, scripts) it stops after the demo announcement.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=1883
SITE=demo
BASE="qwen3tts/$SITE"
# The demo keeps its state (tiny bundle, spool, WAV files) and compile cache inside the checkout;
# a plain `qwen3tts run` uses $XDG_STATE_HOME/qwen3tts and $XDG_CACHE_HOME/qwen3tts (docs/operations.md).
export XDG_STATE_HOME="$PWD/var/state" XDG_CACHE_HOME="$PWD/var/cache"
WAV_DIR="$XDG_STATE_HOME/qwen3tts/wav"
mkdir -p var
rm -f var/demo-events.log

.venv/bin/qwen3tts --set mqtt.site=$SITE --set mqtt.port=$PORT run --embedded >var/demo.log 2>&1 &
DAEMON=$!
SUB=""
cleanup() {
    [ -n "$SUB" ] && kill "$SUB" 2>/dev/null || true
    if kill -0 "$DAEMON" 2>/dev/null; then
        kill -TERM "$DAEMON"
        wait "$DAEMON" || { echo "the daemon exited with an error; see var/demo.log" >&2; exit 1; }
    fi
}
trap cleanup EXIT

echo "starting qwen3tts (first run builds the tiny bundle; log in var/demo.log) ..."
for _ in $(seq 1 300); do
    if ! kill -0 "$DAEMON" 2>/dev/null; then
        echo "the daemon stopped during start-up:" >&2; tail -20 var/demo.log >&2; exit 1
    fi
    if [ "$(timeout 2 mosquitto_sub -h 127.0.0.1 -p $PORT -t "$BASE/availability" -C 1 2>/dev/null)" = "online" ]; then
        break
    fi
    sleep 1
done

mosquitto_sub -h 127.0.0.1 -p $PORT -t "$BASE/event" >var/demo-events.log &
SUB=$!
sleep 0.5
# An id of its own per run: the daemon remembers the ids it accepted (a request sent again with the same
# id is dropped as a duplicate), also across restarts, and the demo's state stays in var/.
ID="demo-$(date +%s)"
mosquitto_pub -h 127.0.0.1 -p $PORT -q 1 -t "$BASE/say" \
    -m "{\"id\": \"$ID\", \"text\": \"Hello! qwen3tts is speaking on this machine.\"}"
for _ in $(seq 1 300); do
    grep -q "\"event\":\"finished\",\"id\":\"$ID\"" var/demo-events.log && break
    grep -qE "\"event\":\"(error|rejected)\",\"id\":\"$ID\"" var/demo-events.log && { cat var/demo-events.log; exit 1; }
    sleep 0.5
done
grep -q "\"event\":\"finished\",\"id\":\"$ID\"" var/demo-events.log || { echo "no finished event" >&2; exit 1; }
echo "events for $ID:"
sed 's/^/  /' var/demo-events.log
wav=$(ls -t "$WAV_DIR"/*"$ID"*.wav 2>/dev/null | head -1 || true)
if [ -n "$wav" ]; then echo "audio written to $wav (no sound card found)"; else echo "audio played on ALSA"; fi
echo "try it yourself:"
echo "  mosquitto_pub -h 127.0.0.1 -p $PORT -t $BASE/say -m 'The next train leaves in five minutes.'"
if [ -t 0 ]; then
    echo "serving until Ctrl-C ..."
    wait "$DAEMON" || true
fi
