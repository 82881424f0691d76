"""The hostile matrix's MQTT rows (scripts/hostile_matrix.py): hostile payloads, many says, emergencies over
a playing announcement, and malformed spool files at a restart. Each row runs against the live daemon and
returns a function that tallies it once every row has run."""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.announcements.spool import MAX_FILE_BYTES, Spool, quarantined
from qwen3tts.bench.matrix_tally import Row, count_ends, ends_by_key, tally

SUPPORT = Path(__file__).resolve().parents[1] / "tests" / "support"
PACE = 10
"""Hostile payloads between two pacing stops: the queue then holds what they queued, not the whole corpus."""


def corpus(count: int) -> list[tuple[str, bytes]]:
    """`count` (topic, payload) pairs of the suite's hostile corpus, the same ones on every run."""
    sys.path.insert(0, str(SUPPORT))
    from hostile_corpus import COMMAND_SUFFIXES, payloads
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    found: list[tuple[str, bytes]] = []

    @settings(max_examples=count, database=None, derandomize=True, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(st.sampled_from(COMMAND_SUFFIXES), payloads)
    def take(topic: str, payload: bytes) -> None:
        found.append((topic, payload))

    take()
    return found[:count]


def claimed_id(payload: bytes) -> str | None:
    try:
        obj = json.loads(payload.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    found = obj.get("id") if isinstance(obj, dict) else None
    return found if isinstance(found, str) else None


def hostile_payloads(daemon, count: int):
    """Every payload with its own correlation data; a stop by an unknown id after every PACE of them, and
    its `not_found` awaited, keeps the corpus from being one flood."""
    sys.path.insert(0, str(SUPPORT))
    from hostile_corpus import ANSWERS

    listener, sent = daemon.listener, corpus(count)
    keys = [f"m{n}" for n in range(len(sent))]
    unpaced = []
    for n, (topic, payload) in enumerate(sent):
        listener.publish(topic, payload, correlation=keys[n])
        if n % PACE == PACE - 1 or n == len(sent) - 1:
            pace = f"pace{n}"
            listener.publish("stop", json.dumps({"scope": "id", "id": pace}), correlation=pace)
            if not listener.wait(lambda p=pace: listener.has(p, "not_found"), 300):
                unpaced.append(pace)

    def queued() -> list[str]:
        by_key = listener.by_correlation()
        return [k for k in keys if any(e["event"] == "queued" for e in by_key.get(k, []))]

    listener.publish("stop", "all", correlation="m-stop-all")  # what the corpus queued, some for an hour
    waited = listener.wait(lambda: all(count_ends(listener.by_correlation()[k]) for k in queued()), 900)

    def finish() -> Row:
        by_key = listener.by_correlation()
        first_queued: dict[object, str] = {}
        for key in keys:
            for event in by_key.get(key, []):
                if event["event"] == "queued":
                    first_queued.setdefault(event.get("id"), key)
        silent = [k for k, (topic, payload) in zip(keys, sent, strict=True)
                  if topic == "say" and first_queued.get(claimed_id(payload), k) != k]  # fmt: skip
        row = tally("mqtt", keys, ends_by_key({k: by_key.get(k, []) for k in keys}), silent)
        for key, (topic, payload) in zip(keys, sent, strict=True):
            events = by_key.get(key, [])
            if events and events[0]["event"] not in ANSWERS[topic]:
                row.failures.append(f"{key} on {topic}: answered {events[0]['event']} ({payload[:60]!r})")
            if any(e["event"] == "error" for e in events):
                row.failures.append(f"{key} on {topic}: error {events[-1].get('reason')} ({payload[:60]!r})")
        answers = defaultdict(int)
        for key in keys:
            if by_key.get(key):
                answers[by_key[key][0]["event"]] += 1
        row.figures = {"first_answers": dict(sorted(answers.items())), "queued_then_ended": len(queued())}
        if unpaced or not waited:
            row.failures.append(f"unanswered pacing stops {unpaced[:5]}, every queued one ended: {waited}")
        return row

    return finish


def says(daemon, count: int):
    """`count` announcements published at once, each to end exactly once."""
    listener = daemon.listener
    ids = [f"say-{n}" for n in range(count)]
    for n, ann_id in enumerate(ids):
        listener.say(ann_id, f"Announcement number {n}: the train to platform {n % 9 + 1} leaves now.")
    waited = listener.wait(lambda: listener.ended(ids), 1800 + count)

    def finish() -> Row:
        by_id = listener.by_id()
        row = tally("says", ids, ends_by_key({i: by_id.get(i, []) for i in ids}))
        spoken = sum(1 for i in ids if any(e["event"] == "finished" for e in by_id.get(i, [])))
        refused = sum(1 for i in ids if any(e["event"] == "rejected" for e in by_id.get(i, [])))
        row.figures = {"finished": spoken, "rejected": refused}
        if not waited:
            row.failures.append("not every say ended within the row's wait")
        return row

    return finish


def emergencies(daemon, count: int):
    """An emergency published once the announcement before it is heard (its `first_audio`): it barges in,
    and the interrupted one resumes (docs/announcer.md, "Priorities")."""
    listener, trials = daemon.listener, []
    text = " ".join(f"Store notice, part {k}." for k in range(6))
    for n in range(count):
        long_id, alarm_id = f"long-{n}", f"alarm-{n}"
        listener.say(long_id, text)
        listener.wait(lambda i=long_id: listener.has(i, "first_audio") or listener.ended([i]), 600)
        listener.say(alarm_id, "Fire alarm. Leave the building now.", priority="emergency")
        listener.wait(lambda i=(long_id, alarm_id): listener.ended(i), 600)
        trials.append((long_id, alarm_id))

    def finish() -> Row:
        by_id = listener.by_id()
        ids = [i for trial in trials for i in trial]
        row = tally("emergencies", ids, ends_by_key({i: by_id.get(i, []) for i in ids}))
        resumed = 0
        for long_id, alarm_id in trials:
            life = [(e["event"], e.get("reason", "")) for e in by_id.get(long_id, [])]
            barged = any(name == "queued" and "barged in" in why for name, why in life)
            starts = sum(1 for name, _ in life if name == "started")
            ok = barged and starts >= 2 and life[-1][0] == "finished"
            ok = ok and any(e["event"] == "finished" for e in by_id.get(alarm_id, []))
            resumed += ok
            if not ok:
                row.failures.append(f"{long_id} not resumed after {alarm_id}: {[n for n, _ in life]}")
        row.figures = {"resumed": resumed, "trials": len(trials)}
        return row

    return finish


def _entry(number: int, **fields) -> bytes:
    announcement = {**Announcement(id=f"spool-bad-{number}", text="Bad.", seq=number).to_json(), **fields}
    return json.dumps({"version": 1, "announcement": announcement}).encode()


def _malformed(seq: int, kind: int) -> tuple[bytes, bool]:
    """A malformed spool file for `seq`, and whether its error event can name its id."""
    named = {
        0: {"text": "x" * 100_000}, 1: {"text": "y" * 2001}, 2: {"not_before": 1e300}, 3: {"voice": "nobody"},
        4: {"repeat": 1000}, 5: {"volume": 5.0}, 6: {"repeat_interval": 1e9}, 7: {"chime": "siren"},
        8: {"response_topic": "#"}, 9: {"response_topic": "elsewhere/x"}, 10: {"seed": 2**40},
        11: {"plays_done": 3, "repeat": 3}, 12: {"message_id": 10**9}, 13: {"text": "Bell\x07"},
        14: {"session_id": "s" * 300}, 15: {"repeat": "twice", "volume": [1]}, 16: {"text": "a \ud800 b"},
        17: {"volume": float("nan")}, 18: {"zones": ["nowhere"]}, 19: {"priority": "urgent"},
        20: {"lang": "klingon"}, 21: {"text": "\u200b\ufeff"}, 22: {"attempts": 5}, 23: {"seq": seq + 1},
    }  # fmt: skip
    if kind in named:
        return _entry(seq, **named[kind]), True
    unnamed = {
        24: b"\x00\xff\xfe garbage",
        25: b"",
        26: _entry(seq)[:40],
        27: b"[1, 2, 3]",
        28: json.dumps({"version": 1, "announcement": "x"}).encode(),
        29: b"[" * 100_000,
        30: b"y" * (MAX_FILE_BYTES + 1),
        31: _entry(seq).decode().encode("utf-16"),
    }
    return unnamed[kind], False


def spool_files(daemon, count: int):
    """Stop the daemon, write `count` malformed spool files beside two valid ones, start it again."""
    listener, base = daemon.listener, 500_000
    daemon.stop()
    Spool(daemon.spool).write(Announcement(id="spool-good-0", text="Platform four.", seq=base))
    files = {}
    for n in range(count):
        seq = base + 1 + n
        content, named = _malformed(seq, n % 32)
        (daemon.spool / f"{seq:012d}.json").write_bytes(content)
        files[f"{seq:012d}.json"] = f"spool-bad-{seq}" if named else None
    Spool(daemon.spool).write(Announcement(id="spool-good-1", text="Platform five.", seq=base + count + 1))
    errors_before = len(errors_since(listener, 0))
    good, started = ["spool-good-0", "spool-good-1"], None
    try:
        daemon.start()
        listener.wait(lambda: listener.ended(good), 600)
        listener.wait(lambda: len(errors_since(listener, errors_before)) >= count, 60)
    except RuntimeError as exc:  # left down, as an operator would find it
        started = str(exc)

    def finish() -> Row:
        errors = errors_since(listener, errors_before)
        by_file, anonymous = assign(errors, files)
        ends = {name: len(by_file.get(name, [])) for name in files}
        unnamed = [name for name, ann_id in files.items() if ann_id is None and not ends[name]]
        for name in unnamed[:anonymous]:  # an id-less event stands for an id-less file, one each
            ends[name] = 1
        by_id = listener.by_id()
        ends.update({i: count_ends(by_id.get(i, [])) for i in good})
        row = tally("spool", [*files, *good], ends)
        row.doubled += max(0, anonymous - len(unnamed))
        kept = len(quarantined(daemon.spool))
        row.figures = {"quarantined_files": kept, "error_events": len(errors)}
        if kept != count:
            row.failures.append(f"{kept} files in the quarantine, {count} malformed written")
        if started is not None:
            row.failures.insert(0, started)
        if any(not e.get("reason", "").startswith("quarantined: ") for e in errors):
            row.failures.append("an error event at start that is not a quarantine")
        return row

    return finish


def errors_since(listener, start: int) -> list[dict]:
    return [e for _, e in list(listener.events) if e["event"] == "error"][start:]


def assign(errors: list[dict], files: dict[str, str | None]) -> tuple[dict[str, list[dict]], int]:
    """Each error event to the file it names (by the id it claimed, or the file name in its reason); the
    number of events naming neither."""
    of_id = {ann_id: name for name, ann_id in files.items() if ann_id}
    by_file: dict[str, list[dict]] = defaultdict(list)
    anonymous = 0
    for event in errors:
        name = of_id.get(event.get("id")) or next((f for f in files if f in event.get("reason", "")), None)
        if name is None:
            anonymous += 1
        else:
            by_file[name].append(event)
    return by_file, anonymous
