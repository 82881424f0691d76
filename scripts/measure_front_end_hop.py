"""What the guarded text front end (text/guard.py) costs: the process hop per text, the lexicon's trip,
a worker's replacement, and (with a bundle) the effect on time to first audio.

    PYTHONPATH=daemon .venv/bin/python scripts/measure_front_end_hop.py [BUNDLE] [--runs N]

Per text: `prepare` in this thread against the same call through a one-worker GuardedFrontEnd, the
lexicon unchanged (what nearly every call is) and the lexicon sent with every call (two equal lexicon
objects alternate, so the worker receives and unpickles it each time: RE2 patterns recompiled), in
interleaved rounds; medians in microseconds. Replacement: a worker killed by pid until the next text is
read. With BUNDLE: from the text to the first PCM chunk of its first piece (read_text, submit, first
chunk) on a fresh engine, in-process and guarded interleaved, medians in milliseconds.
"""

from __future__ import annotations

import argparse
import os
import pickle
import signal
import statistics
import time

from qwen3tts.synthesis import TextOptions, read_text, sentence_request
from qwen3tts.text import Lexicon, prepare
from qwen3tts.text.guard import GuardedFrontEnd

TEXTS = {
    "short (45 chars)": "The train to Berlin leaves from platform four.",
    "typical (190 chars)": (
        "Attention please: the 10:45 service to Central Station via Pl. 3 is delayed by about 15 minutes. "
        "We apologise for the inconvenience. Tickets cost £2.50 at the Rd. 7 office, open until 18:00."
    ),
}
TEXTS["long (1,900 chars)"] = " ".join([TEXTS["typical (190 chars)"]] * 10)
SITE_LEXICON = {
    "words": {f"Word{n}": f"word number {n}" for n in range(20)} | {"Rd.": "Road", "Qwen3": "Qwen three"},
    "patterns": {
        r"\bPl\. (\d+)": r"Platform \1",
        r"\bGate ([A-Z])(\d+)\b": r"Gate \1 \2",
        r"\bNo\. (\d+)": r"number \1",
    },
}


def timed_us(call, *args) -> float:
    started = time.perf_counter()
    call(*args)
    return (time.perf_counter() - started) * 1e6


def hop(runs: int) -> None:
    lexicon = Lexicon.from_dict(SITE_LEXICON)
    twins = [lexicon, Lexicon.from_dict(SITE_LEXICON)]
    guarded = GuardedFrontEnd(5.0, workers=1).start()
    try:
        print(f"lexicon: {len(lexicon.words)} words, {len(lexicon.patterns)} patterns, "
              f"{len(pickle.dumps(lexicon))} bytes pickled")  # fmt: skip
        trip = [timed_us(lambda: pickle.loads(pickle.dumps(lexicon))) for _ in range(runs)]
        print(f"lexicon pickle + unpickle (RE2 recompiled): median {statistics.median(trip):.0f} us")
        heading = f"{'text':22} {'in-process':>11} {'guarded':>9} {'hop':>7} {'lexicon each call':>18}"
        print(f"{heading}  (us, median of {runs})")
        for name, text in TEXTS.items():
            inline, kept, sent = [], [], []
            for n in range(runs):  # interleaved: a load change hits every mode alike
                inline.append(timed_us(prepare, text, "english", True, lexicon))
                kept.append(timed_us(guarded, text, "english", True, lexicon))
                sent.append(timed_us(guarded, text, "english", True, twins[n % 2]))
            a, b, c = (statistics.median(x) for x in (inline, kept, sent))
            print(f"{name:22} {a:11.0f} {b:9.0f} {b - a:7.0f} {c:18.0f}")
        replaced = []
        for _ in range(10):
            [pid] = guarded.pids()
            started = time.perf_counter()
            os.kill(pid, signal.SIGKILL)
            guarded("Next one.", "english")
            replaced.append((time.perf_counter() - started) * 1000)
        print(f"worker killed -> next text read: median {statistics.median(replaced):.0f} ms of 10")
    finally:
        guarded.stop()


def ttfa(bundle: str, runs: int) -> None:
    from qwen3tts.appliance.priority import Priority
    from qwen3tts.runtime.loader import load_runtime
    from qwen3tts.settings_loader import load_settings

    settings = load_settings(None, ["engine.max_frames=30", "engine.temperature=0"])
    runtime = load_runtime(bundle, settings)
    engine = runtime.engine
    engine.start()
    speaker = next(iter(runtime.spec.speakers))
    guarded = GuardedFrontEnd(5.0, runtime.spec.languages, workers=1).start()
    modes = {"in-process": TextOptions(languages=tuple(runtime.spec.languages)),
             "guarded": TextOptions(languages=tuple(runtime.spec.languages), front_end=guarded)}  # fmt: skip
    found: dict[str, list[float]] = {mode: [] for mode in modes}
    try:
        for n in range(runs):
            for mode, options in modes.items():
                started = time.perf_counter()
                pieces, _ = read_text(TEXTS["typical (190 chars)"], "english", options)
                request = sentence_request(
                    f"{mode}-{n}", pieces[0], language="english", voice=speaker, instruct=None,
                    rank=Priority.NORMAL.rank, max_frames=30,
                )  # fmt: skip
                handle = engine.submit(request)
                next(iter(handle))
                found[mode].append((time.perf_counter() - started) * 1000)
                handle.cancel()
                handle.wait(30)
    finally:
        guarded.stop()
        engine.stop()
    a, b = (statistics.median(found[m]) for m in modes)
    print(f"time to first audio (ms, median of {runs}): in-process {a:.1f}, guarded {b:.1f}, "
          f"difference {b - a:+.1f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bundle", nargs="?")
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    hop(args.runs)
    if args.bundle:
        ttfa(args.bundle, max(10, args.runs // 10))


if __name__ == "__main__":
    main()
