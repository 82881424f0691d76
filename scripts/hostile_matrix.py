"""The hostile matrix of issue 37, rerun from outside against one live daemon, as an operator would.

Starts its own mosquitto on a free loopback port and one `qwen3tts run` (the tiny random bundle built in
the work dir unless --bundle; WAV sink at loudspeaker speed, HTTP and Wyoming on, a site lexicon holding
`(\\w+\\s?)+$`, the spool in the work dir, a file limit of 1024), then runs the rows in this order:

- **mqtt**: `--mqtt` malformed payloads (tests/support/hostile_corpus.py's generator, derandomised) on
  `say`, `stop`, `volume/set` and `voice/set`, each with its own MQTT 5 correlation data; every one gets
  exactly one documented answer, and every say it queued exactly one end (a `stop all` ends what they
  queued). A say repeating an id already accepted may go unanswered (docs/mqtt.md): counted as silent.
- **http**: `--http` hostile bodies and protocol abuses against /v1/audio/speech, over raw sockets: each
  answered (a 4xx/5xx carries a JSON error) or closed, never a hang, never a 500.
- **lexicon**: `--lexicon` texts that make `(\\w+\\s?)+$` backtrack in Python's engine, and long texts,
  over HTTP beside a normal request; their times are reported, not judged.
- **says**: `--says` announcements published at once; every one ends exactly once (most are refused
  `queue full` at the door, the rest are spoken).
- **emergencies**: `--emergencies` times, an emergency over a playing announcement: the emergency
  finishes and the interrupted one resumes (`queued` again, `started` again) and finishes.
- **idle**: `--idle` idle Wyoming connections under the daemon's 1024-file limit; a say is still spoken
  meanwhile and both servers answer once they left (default 1100, as in the issue).
- **spool**: the daemon is stopped, `--spool` malformed spool files and two valid ones are written into
  its spool, and it is started again: each malformed one is quarantined with one `error` event, the
  valid ones play.

Then the daemon must still be alive, speak a normal `say` to `finished`, and its log must hold no
`Traceback`. One line per row; exit 1 when any row is not clean; `--json FILE` writes the summary.
The issue's counts are the defaults, but for `--says` (5000, all published at once, as the soak's flood).
Hostile reference clips need a Base bundle (voice cloning) and SIGKILL trials a daemon per trial: not
rows here (the suite has them: tests/integration/voices/, the pool's SIGKILL tests).

    PYTHONPATH=daemon .venv/bin/python scripts/hostile_matrix.py --json var/matrix.json
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import paho.mqtt.client as paho
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from qwen3tts.bench.live_daemon import daemon_config, free_port, launch_daemon, start_broker, tiny_bundle
from qwen3tts.bench.matrix_tally import Row, count_ends

SITE = "matrix"
BASE = f"qwen3tts/{SITE}"
FILE_LIMIT = 1024
OWN_IDS = ("say-", "long-", "alarm-", "idle-", "spool-", "after-")
LEXICON = "patterns:\n  '(\\w+\\s?)+$': 'x'\n  '(a|aa)+$': 'y'\n"


class Listener:
    """Every event the daemon publishes (each distinct payload once: docs/mqtt.md says a broker may deliver
    one twice after a broken link), with the correlation data it came with, and the availability."""

    def __init__(self, port: int):
        self.events: list[tuple[str | None, dict]] = []
        self.onlines = 0
        self._payloads: set[bytes] = set()
        self._cond = threading.Condition()
        self.client = paho.Client(paho.CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
        self.client.on_connect = lambda c, *_: c.subscribe(
            [(f"{BASE}/event", 1), (f"{BASE}/availability", 1)]
        )
        self.client.on_message = self._on_message
        self.client.max_queued_messages_set(0)
        for _ in range(100):  # the broker takes a moment to listen
            try:
                self.client.connect("127.0.0.1", port)
                break
            except ConnectionRefusedError:
                time.sleep(0.1)
        self.client.loop_start()

    def _on_message(self, client, userdata, msg) -> None:
        with self._cond:
            if msg.topic.endswith("/availability"):
                self.onlines += msg.payload == b"online"
            elif msg.payload not in self._payloads:
                self._payloads.add(msg.payload)
                correlation = getattr(msg.properties, "CorrelationData", None)
                key = correlation.decode("ascii", "replace") if correlation else None
                self.events.append((key, json.loads(msg.payload)))
            self._cond.notify_all()

    def publish(self, suffix: str, payload, correlation: str | None = None) -> None:
        props = None
        if correlation is not None:
            props = Properties(PacketTypes.PUBLISH)
            props.CorrelationData = correlation.encode("ascii")
        self.client.publish(f"{BASE}/{suffix}", payload, qos=1, properties=props)

    def say(self, ann_id: str, text: str, **fields) -> None:
        self.publish("say", json.dumps({"id": ann_id, "text": text, **fields}))

    def wait(self, predicate, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(predicate, timeout)

    def by_id(self) -> dict[str, list[dict]]:
        found: dict[str, list[dict]] = defaultdict(list)
        with self._cond:
            for _, event in self.events:
                found[event.get("id")].append(event)
        return found

    def by_correlation(self) -> dict[str, list[dict]]:
        found: dict[str, list[dict]] = defaultdict(list)
        with self._cond:
            for key, event in self.events:
                found[key].append(event)
        return found

    def ended(self, ids) -> bool:
        """Whether every one of `ids` has ended (call under wait())."""
        events = defaultdict(list)
        for _, event in self.events:
            events[event.get("id")].append(event)
        return all(count_ends(events[i]) for i in ids)

    def has(self, ann_id: str, name: str) -> bool:
        return any(e.get("id") == ann_id and e.get("event") == name for _, e in self.events)


def held_to_file_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FILE_LIMIT, FILE_LIMIT))


class LiveDaemon:
    """The one daemon of the matrix (restarted by the spool row), its broker, and its log."""

    def __init__(self, workdir: Path, args):
        self.workdir = workdir
        bundle = args.bundle or tiny_bundle(workdir)
        (workdir / "lexicon.yaml").write_text(LEXICON)
        self.broker, broker_port = start_broker(workdir)
        self.http_port, self.wyoming_port = free_port(), free_port()
        ports = (broker_port, self.http_port, self.wyoming_port)
        self.config = daemon_config(workdir, bundle, SITE, ports, args.max_frames)
        self.config["audio"].update(wav_realtime=True, chime_normal="none", chime_priority="none",
                                    chime_emergency="none", jitter_buffer_ms=0)  # fmt: skip
        self.config["servers"]["wyoming"]["zeroconf"] = False
        self.config["text"] = {"lexicon": str(workdir / "lexicon.yaml")}
        self.spool = workdir / "spool"
        self.listener = Listener(broker_port)
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 600) -> None:
        onlines = self.listener.onlines
        self.process = launch_daemon(self.workdir, self.config, preexec_fn=held_to_file_limit)
        deadline = time.monotonic() + timeout
        # `online` comes over MQTT; an exit sends nothing (a daemon that never connected has no will)
        while not self.listener.wait(lambda: self.listener.onlines > onlines, 1.0):
            if self.process.poll() is not None:
                raise RuntimeError(f"the daemon exited with {self.process.returncode} at start")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the daemon did not come online in {timeout:.0f} s")

    def stop(self) -> int | None:
        if self.process is None or self.process.poll() is not None:
            return None if self.process is None else self.process.returncode
        self.process.terminate()
        return self.process.wait(120)

    def log(self) -> str:
        return (self.workdir / "daemon.log").read_text(errors="replace")

    def tracebacks(self, start: int = 0, end: int | None = None) -> int:
        return self.log()[start:end].count("Traceback")

    def excerpts(self, lines: int = 12) -> list[str]:
        """The last `lines` lines of each traceback in the log (the exception and where it was raised)."""
        found, text = [], self.log().splitlines()
        for n, line in enumerate(text):
            if line.startswith("Traceback"):
                end = next(
                    (m for m in range(n + 1, len(text)) if not text[m].startswith((" ", "Traceback"))), n
                )
                found.append("\n".join(text[max(n, end - lines + 1) : end + 1]))
        return found

    def close(self) -> None:
        self.stop()
        self.listener.client.loop_stop()
        self.broker.terminate()
        self.broker.wait(10)


def final_check(daemon: LiveDaemon) -> Row:
    """After every row: alive, a normal say finished, no traceback in the whole log, no id ended twice."""
    row = Row("after", sent=1)
    alive = daemon.process.poll() is None
    if alive:
        daemon.listener.say("after-all", "The matrix is over. Thank you.")
        daemon.listener.wait(lambda: daemon.listener.ended(["after-all"]), 600)
    ends = count_ends(daemon.listener.by_id().get("after-all", []))
    row.answered, row.lost, row.doubled = int(ends == 1), int(ends == 0), int(ends > 1)
    if not alive:
        row.failures.append(f"the daemon exited ({daemon.process.returncode})")
    if not daemon.listener.has("after-all", "finished"):
        row.failures.append("the last say did not finish")
    row.tracebacks = daemon.tracebacks()
    # the ids the matrix chose: the hostile corpus repeats ids of its own (two `rejected` for one id under
    # two correlations are two answers); id-less events (quarantines, commands' answers) are the rows' own
    ours = [(i, e) for i, e in daemon.listener.by_id().items() if str(i).startswith(OWN_IDS)]
    doubled = {i: n for i, e in ours if (n := count_ends(e)) > 1}
    row.figures = {"ids_ended_more_than_once": len(doubled), "log_lines": daemon.log().count("\n")}
    if doubled:
        row.failures.append(f"ids ended more than once: {sorted(doubled)[:10]}")
    return row


def run(args, workdir: Path) -> list[Row]:
    import matrix_http
    import matrix_mqtt

    rows_in_order = [
        ("mqtt", args.mqtt, matrix_mqtt.hostile_payloads),
        ("http", args.http, matrix_http.hostile_requests),
        ("lexicon", args.lexicon, matrix_http.lexicon_texts),
        ("says", args.says, matrix_mqtt.says),
        ("emergencies", args.emergencies, matrix_mqtt.emergencies),
        ("idle", args.idle, matrix_http.idle_sockets),
        ("spool", args.spool, matrix_mqtt.spool_files),
    ]
    daemon = LiveDaemon(workdir, args)
    finishers = []
    try:
        try:
            daemon.start()
        except RuntimeError as exc:
            raise SystemExit(f"{exc}; see {workdir / 'daemon.log'}") from None
        for name, count, row in rows_in_order:
            if count <= 0:
                continue
            began, start = time.monotonic(), len(daemon.log())
            finish = row(daemon, count)
            finishers.append((finish, start, len(daemon.log())))
            print(f"{name}: ran in {time.monotonic() - began:.0f} s", flush=True)
        rows = [final_check(daemon)]
        for finish, start, end in finishers:  # tallied last: an end that came twice has had time to come
            row = finish()
            row.tracebacks = daemon.tracebacks(start, end)
            rows.insert(-1, row)
        for excerpt in daemon.excerpts()[:3]:
            print(f"daemon log:\n{excerpt}")
    finally:
        daemon.close()
    return rows


def report(rows: list[Row], json_path: Path | None) -> bool:
    for row in rows:
        print(row.line())
        for failure in row.failures[:10]:
            print(f"    {failure}")
        if row.figures:
            print(f"    {json.dumps(row.figures)}")
    clean = all(row.clean for row in rows)
    if json_path:
        json_path.write_text(json.dumps({"clean": clean, "rows": [r.to_json() for r in rows]}, indent=1))
    return clean


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in (("mqtt", 1158), ("http", 73), ("lexicon", 8), ("says", 5000), ("emergencies", 10),
                          ("idle", 1100), ("spool", 30)):  # fmt: skip
        parser.add_argument(f"--{name}", type=int, default=default, help=f"row size (0: skip it; {default})")
    parser.add_argument("--max-frames", type=int, default=16, help="engine.max_frames (1.3 s a sentence)")
    parser.add_argument("--bundle", type=Path, help="default: a tiny random bundle built in the work dir")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--json", type=Path, help="also write the summary here")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)  # this process holds the idle row's sockets
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4 * args.idle + 256)), hard))
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        rows = run(args, args.workdir.resolve())
    else:
        with tempfile.TemporaryDirectory(prefix="qwen3tts-matrix-") as workdir:
            rows = run(args, Path(workdir))
    sys.exit(0 if report(rows, args.json) else 1)


if __name__ == "__main__":
    main()
