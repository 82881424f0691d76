"""The bench workloads: fixed-length streams driven step by step, and time-to-first-audio rounds.

Every request has EOS disabled (min_new_tokens = max_frames), so each produces exactly `frames`
frames and runs can be compared. Throughput runs drive `Engine.step()` from this thread and time
every step; the time-to-first-audio runs use the engine's own loop thread, as the daemon does.
"""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass, field

from qwen3tts.bench.timing_runner import STAGES, Call, TimingRunner
from qwen3tts.engine.engine import Engine
from qwen3tts.engine.sequence import Request, SequenceStatus
from qwen3tts.errors import RequestError

FRAME_SECONDS = 0.08  # one frame = 1920 samples at 24 kHz
FILLER_WORDS = ("station", "platform", "announcement", "evening", "service", "passengers", "delay", "minutes")
TTFA_SENTENCE = "Platform {}, gate {}: the next train to the city centre leaves."  # 12 words
# Each first-audio request speaks its own sentence (its second word first), as each new announcement
# does: with one sentence for every round, the prefix cache (on by default) held the whole prompt after
# the first round, and the p50 measured a cache hit, not a prefill of new text.
NUMBERS = ("one", "two", "three", "four", "five", "six",
           "seven", "eight", "nine", "ten", "eleven", "twelve")  # fmt: skip


def ttfa_sentence(index: int) -> str:
    """The first-audio request `index`'s sentence: a new one for each of 144 requests, then again."""
    return TTFA_SENTENCE.format(NUMBERS[index % 12], NUMBERS[index // 12 % 12])


def stage_seconds(calls, stage: str) -> float:
    """The runner's seconds in `stage` over `calls`."""
    return sum(c.seconds for c in calls if c.stage == stage)


@dataclass(frozen=True)
class StepRecord:
    """One engine step: its wall time and the runner calls it made."""

    wall: float
    calls: tuple[Call, ...]

    def seconds(self, stage: str) -> float:
        return stage_seconds(self.calls, stage)

    def talker_call(self) -> Call | None:
        return next((c for c in self.calls if c.stage == "talker"), None)

    @property
    def frames(self) -> int:
        return sum(c.rows for c in self.calls if c.stage == "code_predictor")

    @property
    def host(self) -> float:
        return self.wall - sum(c.seconds for c in self.calls)

    def is_decode(self, batch: int) -> bool:
        """Every running stream decodes one token and gets one frame (no prefill in this step)."""
        talker = self.talker_call()
        return talker is not None and talker.tokens == talker.rows == batch and self.frames == batch


@dataclass
class Workload:
    """What every request of a run looks like."""

    text: str
    speaker: str | None
    language: str
    frames: int
    prompt_tokens: int  # talker prompt positions the text gives (measured, not asked for)
    text_track: str = "auto"  # engine.text_track: how the prompt gives the text (runtime/prompt.py)

    def request(
        self, request_id: str, seed: int, frames: int | None = None, text: str | None = None
    ) -> Request:
        frames = frames or self.frames
        return Request(
            id=request_id,
            text=text or self.text,
            language=self.language,
            speaker=self.speaker,
            seed=seed,
            max_frames=frames + 1,  # N sampled tokens give N - 1 frames
            sampling={"min_new_tokens": frames + 1},  # EOS masked for the whole run
        )


def fixed_length_text(
    prompt_builder, target_tokens: int, speaker: str | None, language: str
) -> tuple[str, int]:
    """The shortest filler text whose talker prompt has at least `target_tokens` positions; with the
    text streamed (engine.text_track) the prompt does not grow with the text: then the shortest text
    of `target_tokens` words, its prompt positions as they are."""
    words: list[str] = []
    while True:
        words.append(FILLER_WORDS[len(words) % len(FILLER_WORDS)])
        text = " ".join(words) + "."
        probe = Request(id="probe", text=text, language=language, speaker=speaker)
        positions = prompt_builder(probe).embeddings.shape[0]
        if positions >= target_tokens or len(words) >= target_tokens:
            return text, positions


@dataclass
class BatchRun:
    batch: int
    repeat: int
    e2e_seconds: float  # first submit to the last request finished, prefill and last codec flush included
    steps: list[StepRecord] = field(default_factory=list)
    warmup_steps: int = 2

    @property
    def decode_steps(self) -> list[StepRecord]:
        return [s for s in self.steps if s.is_decode(self.batch)][self.warmup_steps :]


def run_batch(
    timing: TimingRunner, prompt_builder, config, workload: Workload, batch: int, repeat: int
) -> BatchRun:
    """`batch` identical-length streams at once, driven step by step until all have `frames` frames."""
    engine = Engine(timing, prompt_builder, config)
    started = time.perf_counter()
    handles = [
        engine.submit(workload.request(f"b{batch}-r{repeat}-{i}", seed=1000 * (repeat + 1) + i))
        for i in range(batch)
    ]
    run = BatchRun(batch, repeat, 0.0)
    while not all(h.wait(0) for h in handles):
        mark = len(timing.calls)
        step_started = time.perf_counter()
        engine.step()
        run.steps.append(StepRecord(time.perf_counter() - step_started, tuple(timing.calls[mark:])))
    run.e2e_seconds = time.perf_counter() - started
    for handle in handles:
        if handle.status is not SequenceStatus.FINISHED_LENGTH or handle.frames.shape[0] != workload.frames:
            raise RequestError(
                f"bench request {handle.request_id} ended {handle.status.value} after "
                f"{handle.frames.shape[0]} of {workload.frames} frames: {handle.error}"
            )
    return run


@dataclass(frozen=True)
class FirstAudio:
    """One request's wait for its first PCM chunk, and the runner's seconds per stage meanwhile (with
    several requests at once, the batched calls they shared: what the engine did before this audio)."""

    seconds: float
    stages: dict[str, float]


def time_to_first_audio(
    timing: TimingRunner, prompt_builder, config, workload: Workload, concurrency: int, rounds: int
) -> list[FirstAudio]:
    """Submit to the first PCM chunk, for `concurrency` requests at once, `rounds` times."""
    engine = Engine(timing, prompt_builder, config)
    engine.start()
    waits: list[FirstAudio] = []
    try:
        for round_index in range(rounds):
            waits += _ttfa_round(engine, timing, workload, concurrency, round_index)
    finally:
        engine.stop()
    return waits


def _ttfa_round(
    engine: Engine, timing: TimingRunner, workload: Workload, concurrency: int, round_index: int
) -> list[FirstAudio]:
    frames = engine.config.first_chunk_frames + 1
    results: list[FirstAudio] = []
    lock = threading.Lock()

    def consume(handle, submitted: float, mark: int) -> None:
        for chunk in handle:
            if chunk.size:  # the call that made it was recorded before the engine handed it over
                waited, calls = time.perf_counter() - submitted, timing.calls[mark:]
                stages = {stage: stage_seconds(calls, stage) for stage in STAGES}
                with lock:
                    results.append(FirstAudio(waited, stages))
                handle.cancel()
                break

    threads = []
    for i in range(concurrency):
        mark = len(timing.calls)
        submitted = time.perf_counter()
        text = ttfa_sentence(round_index * concurrency + i)
        request = workload.request(
            f"ttfa-c{concurrency}-r{round_index}-{i}", seed=i, frames=frames, text=text
        )
        handle = engine.submit(request)
        thread = threading.Thread(target=consume, args=(handle, submitted, mark), daemon=True)
        thread.start()
        threads.append((thread, handle))
    for thread, handle in threads:
        thread.join()
        handle.wait()
    if len(results) != concurrency:
        raise RequestError(f"only {len(results)} of {concurrency} requests produced audio")
    return results


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=100, method="inclusive")[min(98, max(0, round(q) - 1))]
