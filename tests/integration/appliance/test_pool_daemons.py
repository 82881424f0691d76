"""Three real daemons (`qwen3tts run`, tiny bundle, WAV sinks) in one synthesis pool on a real mosquitto.

Every pooled announcement is finished by exactly one box; a member SIGKILLed mid-run loses nothing: what
it held unacknowledged is rescued by the anchor, what it had spooled it speaks after its restart; the
anchor itself SIGKILLed is rescued the same way by the next anchor. The
latency per announcement (publish to `finished`) is printed for docs/benchmarks.md, never asserted.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import compile_cache
import pytest

pytestmark = pytest.mark.slow  # a test here takes more than a few seconds (real daemons, brokers)

POOL = "qwen3tts/pool"
SITES = ("a-box", "b-box", "c-box")
COUNT = 60


class Daemon:
    """`python -m qwen3tts --config <file> run` for one site, killed by pid at the end."""

    def __init__(self, tmp_path: Path, site: str, bundle: Path, broker) -> None:
        self.dir = tmp_path / site
        self.dir.mkdir(exist_ok=True)
        self.config = self.dir / "qwen3tts.yaml"
        self.config.write_text(json.dumps({
            "model": {"bundle": str(bundle)},
            "mqtt": {"host": broker.host, "port": broker.port, "site": site, "discovery": False,
                     "pool": "g"},
            "announcements": {"spool_dir": str(self.dir / "spool")},
            "audio": {"sink": "wav", "wav_dir": str(self.dir / "wav"), "lead_in_ms": 0, "tail_ms": 0},
            "thermal": {"enabled": False}, "cache": {"enabled": False},
            "engine": {"max_frames": 12, "temperature": 0},  # short: the count, not the length, is tested
        }))  # fmt: skip
        self.process: subprocess.Popen | None = None

    def start(self) -> Daemon:
        env = {**os.environ, "XDG_STATE_HOME": str(self.dir / "state")}
        with open(self.dir / "stderr.txt", "ab") as err:
            self.process = compile_cache.popen(
                [sys.executable, "-m", "qwen3tts", "--config", str(self.config), "run"],
                self.dir, env, stdout=subprocess.DEVNULL, stderr=err,
            )  # fmt: skip
        return self

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def log(self) -> str:
        return (self.dir / "stderr.txt").read_text(errors="replace")[-3000:]

    def lines_about(self, ann_ids: list[str], limit: int = 40) -> list[str]:
        """Its log lines that name one of `ann_ids`, or its pool's lifecycle (joins, rescues, replays)."""
        text = (self.dir / "stderr.txt").read_text(errors="replace")
        keys = (*ann_ids, "pool:", "pool g:", "replayed", "Traceback", "ERROR")
        return [line[11:260] for line in text.splitlines() if any(k in line for k in keys)][-limit:]


def events(recorder, kind: str) -> list[tuple[str, dict]]:
    """(site, event) for every `kind` event any box published, in arrival order. An end a killed box
    had not seen acknowledged is sent again at its restart, the same bytes (service/owed_events.py):
    counted once; a second play of an announcement would be another event (its own times)."""
    out, seen = [], set()
    for m in list(recorder.messages):
        if m.topic.endswith("/event") and (m.topic, m.payload) not in seen:
            seen.add((m.topic, m.payload))
            event = json.loads(m.payload)
            if event.get("event") == kind:
                out.append((m.topic.split("/")[1], event))
    return out


def wait_until_finished(recorder, daemons: dict[str, Daemon], ann_ids: set[str], timeout: float) -> None:
    """Wait for a `finished` event for every id; else fail naming the missing ones, every event each got
    and what each box logged about them (the recorder's own message list is too long to read)."""
    try:
        recorder.wait_for(lambda _: {e["id"] for _, e in events(recorder, "finished")} >= ann_ids, timeout)
        return
    except pytest.fail.Exception:
        pass  # failed again below, outside this block: the recorder's own message is not chained to it
    missing = sorted(ann_ids - {e["id"] for _, e in events(recorder, "finished")})
    seen = [(m.topic.split("/")[1], json.loads(m.payload)) for m in list(recorder.messages)
            if m.topic.endswith("/event")]  # fmt: skip
    trail = {i: [f"{site}:{e.get('event')}" for site, e in seen if e.get("id") == i] for i in missing}
    logs = "\n".join(f"--- {site}\n" + "\n".join(d.lines_about(missing)) for site, d in daemons.items())
    pytest.fail(f"{len(missing)} not finished after {timeout} s: {trail}\n{logs}", pytrace=False)


def in_round_robin(recorder, site: str) -> bool:
    records = [json.loads(m.payload) for m in list(recorder.messages)
               if m.topic == f"{POOL}/members/g/{site}" and m.payload]  # fmt: skip
    return bool(records) and records[-1].get("state") == "member"


@pytest.mark.parametrize("victim", ["b-box", "a-box"], ids=["member", "anchor"])
def test_sixty_pooled_announcements_are_each_finished_once_across_a_sigkill(
    mosquitto, recorder_factory, tiny_models, tmp_path, victim
):
    """`a-box` is the anchor (the lowest site name): killing it leaves `b-box` to rescue its session."""
    bundle = tiny_models.bundle("custom_voice", "tiny", "f32")
    recorder = recorder_factory(mosquitto, ["qwen3tts/+/event", f"{POOL}/members/#"])
    daemons = {site: Daemon(tmp_path, site, bundle, mosquitto).start() for site in SITES}
    try:
        for site, daemon in daemons.items():
            try:
                recorder.wait_for(lambda _, s=site: in_round_robin(recorder, s), 90)
            except (AssertionError, TimeoutError):
                pytest.fail(f"{site} did not join the pool:\n{daemon.log()}")
        published: dict[str, float] = {}
        for n in range(COUNT):
            ann_id = f"pool-{n:02d}"
            published[ann_id] = time.time()
            recorder.publish(f"{POOL}/say", json.dumps({"id": ann_id, "text": f"Pooled notice {n}."}))
        recorder.wait_for(lambda _: len(events(recorder, "finished")) >= COUNT // 4, 120)
        daemons[victim].kill()  # mid-run: some of its share spooled, some held at the broker
        recorder.wait_for(lambda _: not in_round_robin(recorder, victim), 30)
        daemons[victim].start()
        wait_until_finished(recorder, daemons, set(published), 180)
        finished = events(recorder, "finished")
        by_id = Counter(e["id"] for _, e in finished)
        assert set(by_id) == set(published)  # nothing lost
        assert [i for i, n in by_id.items() if n > 1] == []  # nothing finished twice
        sites = Counter(site for site, _ in finished)
        assert set(sites) <= set(SITES) and len(sites) >= 2, sites  # the pool shared the work
        latencies = sorted(e.get("t_finished", 0) - published[e["id"]] for _, e in finished)
        print(f"\npool of 3, {victim} killed, {COUNT} announcements, per box {dict(sites)}; "
              f"latency publish -> finished: median {statistics.median(latencies):.2f} s, "
              f"max {latencies[-1]:.2f} s")  # fmt: skip
    finally:
        for daemon in daemons.values():
            daemon.kill()
