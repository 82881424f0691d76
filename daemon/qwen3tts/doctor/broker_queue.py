"""Whether the broker may drop announcements it has already acknowledged to their publisher.

A QoS 1 `say` is acknowledged to its publisher by the broker, which then queues it for the daemon's
session. The daemon takes `mqtt.receive_maximum` of them at a time (MQTT 5; with 3.1.1 the broker's
`max_inflight_messages`); the rest wait in the broker's queue for the session, and past mosquitto's
`max_queued_messages` (default 1000) or `max_queued_bytes` (default 0: no bound) the broker drops
them: only its own log says so ("Outgoing messages are being dropped for client ...").

What the doctor can see, and what it cannot:
- `$SYS/broker/publish/messages/dropped`: publishes mosquitto dropped since it started, for any client
  (retained, refreshed every `sys_interval`). Not visible when an ACL hides $SYS or the broker is not
  mosquitto; it does not say for which client.
- the broker's configuration file, when it is readable here (`--broker-config`, default
  /etc/mosquitto/mosquitto.conf for a broker on this machine, with the files of its `include_dir`).
  mosquitto publishes no topic with its configured limits: a remote broker's cannot be read.
"""

from __future__ import annotations

from pathlib import Path

from qwen3tts.doctor.check import Check
from qwen3tts.doctor.daemon import LOOPBACK
from qwen3tts.errors import BrokerError
from qwen3tts.settings import MqttSettings

DROPPED_TOPIC = "$SYS/broker/publish/messages/dropped"
MOSQUITTO_CONFIG = Path("/etc/mosquitto/mosquitto.conf")
QUEUE_TO_USE = 10000
"""max_queued_messages docs/operations.md recommends: a flood of several thousand waits, none is lost."""
MOSQUITTO_DEFAULT_QUEUE = 1000
FIX = (
    f"in mosquitto.conf: max_queued_messages {QUEUE_TO_USE} (or more; 0 = no bound), max_queued_bytes 0, "
    "persistence true; restart mosquitto (docs/operations.md, 'What the broker may drop')"
)


def broker_queue_checks(mqtt: MqttSettings, broker_config: Path | None, timeout: float) -> list[Check]:
    """What the broker dropped since it started ($SYS), and its queue limits (its config file: the one
    given, else mosquitto's usual one when the broker is on this machine and that file exists)."""
    if broker_config is None and mqtt.host in LOOPBACK and MOSQUITTO_CONFIG.is_file():
        broker_config = MOSQUITTO_CONFIG
    return [_dropped_check(mqtt, timeout), _limits_check(broker_config)]


def _dropped_check(mqtt: MqttSettings, timeout: float) -> Check:
    from qwen3tts.appliance.mqtt.probe import read_retained

    try:
        found = dict(read_retained(mqtt, [DROPPED_TOPIC], quiet_s=0.3, timeout=timeout))
    except BrokerError as exc:
        return Check("broker drops", False, f"cannot tell: {exc}", needed=False)
    try:
        dropped = int(found[DROPPED_TOPIC].decode().strip())
    except (KeyError, ValueError, UnicodeDecodeError):
        detail = f"cannot tell: the broker shows us no {DROPPED_TOPIC} (not mosquitto, or an ACL hides $SYS)"
        return Check("broker drops", True, detail, needed=False)
    if dropped == 0:
        return Check("broker drops", True, "mosquitto dropped no message since it started", needed=False)
    detail = (f"mosquitto dropped {dropped} messages since it started (its queue limits; its log names the "
              "client): acknowledged announcements may never have reached the daemon")  # fmt: skip
    return Check("broker drops", False, detail, FIX, needed=False)


def _limits_check(config: Path | None) -> Check:
    if config is None:
        detail = "not checked: no broker configuration to read here (--broker-config FILE); a broker's "
        return Check("broker queue", True, detail + "limits are not visible over MQTT", needed=False)
    try:
        options = read_mosquitto_config(config)
    except OSError as exc:
        detail = f"cannot read {config}: {exc.strerror or exc} (use --broker-config FILE)"
        return Check("broker queue", False, detail, FIX, needed=False)
    try:
        queued = int(options.get("max_queued_messages", MOSQUITTO_DEFAULT_QUEUE))
        queued_bytes = int(options.get("max_queued_bytes", 0))
    except ValueError as exc:
        return Check("broker queue", False, f"{config}: unreadable queue limit ({exc})", FIX, needed=False)
    problems = []
    if queued != 0 and queued < QUEUE_TO_USE:
        source = "" if "max_queued_messages" in options else " (mosquitto's default)"
        problems.append(f"max_queued_messages {queued}{source}: a burst beyond it is dropped")
    if queued_bytes:
        problems.append(f"max_queued_bytes {queued_bytes}: a burst beyond it is dropped")
    if problems:
        return Check("broker queue", False, f"{config}: " + "; ".join(problems), FIX, needed=False)
    limit = "no bound" if queued == 0 else str(queued)
    return Check("broker queue", True, f"{config}: max_queued_messages {limit}", needed=False)


def read_mosquitto_config(path: Path) -> dict[str, str]:
    """The options of a mosquitto.conf and of the `*.conf` files of its include_dir (the last value of
    an option wins, as in mosquitto); OSError when the main file cannot be read."""
    options: dict[str, str] = {}
    for line in path.read_text(errors="replace").splitlines():
        key, _, value = line.strip().partition(" ")
        if not key or key.startswith("#"):
            continue
        if key == "include_dir":
            directory = Path(value.strip())
            for included in sorted(directory.glob("*.conf")) if directory.is_dir() else []:
                try:
                    options.update(read_mosquitto_config(included))
                except OSError:
                    continue
        else:
            options[key] = value.strip()
    return options
