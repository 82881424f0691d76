"""Engine: submit() -> streaming Handle, cancel(), set_max_batch(), stats(), and the step loop.

One thread runs the loop; every step is schedule -> ONE talker call -> sample code 0 -> ONE code
predictor call -> codec chunks. A failure inside one request finishes only
that request: a batched call that raises is retried one sequence at a time to find the culprit.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from qwen3tts.engine.admission import build_prompt, validate_request
from qwen3tts.engine.block_manager import BlockManager
from qwen3tts.engine.config import EngineConfig
from qwen3tts.engine.runner import Runner, TalkerChunk
from qwen3tts.engine.sampler import code_predictor_noise, sample_code0, suppressed_mask
from qwen3tts.engine.scheduler import ScheduledChunk, Scheduler
from qwen3tts.engine.sequence import (
    NUM_CODE_GROUPS,
    Handle,
    Prompt,
    Request,
    Sequence,
    SequenceStatus,
)
from qwen3tts.engine.stats import EngineStats, StepMeter
from qwen3tts.errors import RequestError

log = logging.getLogger(__name__)

PromptBuilder = Callable[[Request], Prompt]


@dataclass
class _Row:
    """One sequence on its way from talker logits to a frame within a step."""

    seq: Sequence
    logits: np.ndarray
    hidden: np.ndarray
    code0: int = -1
    noise: np.ndarray | None = None


class Engine:
    """Continuous-batching TTS engine over a Runner. Thread-safe API; one internal step-loop thread."""

    def __init__(
        self,
        runner: Runner,
        prompt_builder: PromptBuilder,
        config: EngineConfig | None = None,
        heartbeat: Callable[[], None] | None = None,
    ):
        self.runner = runner
        self._heartbeat = heartbeat or (lambda: None)
        self.config = config or EngineConfig()
        self.block_manager = BlockManager(
            runner.num_kv_blocks, runner.block_size, self.config.enable_prefix_caching
        )
        self.scheduler = Scheduler(
            self.block_manager, self.config.max_num_seqs, self.config.max_num_batched_tokens
        )
        self._prompt_builder = prompt_builder
        self._suppressed = suppressed_mask(runner.vocab_size, runner.eos_token_id)
        self._lock = threading.Lock()
        self._wakeup = threading.Condition(self._lock)
        self._inbox: list[Sequence] = []
        self._live: dict[str, Sequence] = {}  # index of unfinished sequences by request id
        self._pending_max_batch: int | None = None
        self._thread: threading.Thread | None = None
        self._stopping = False
        self.meter = StepMeter()

    # ---- public API (any thread) ----

    def submit(self, request: Request) -> Handle:
        """Validate and queue a request; bad input raises RequestError here, never later."""
        params, max_frames = validate_request(request, self.config)
        prompt = build_prompt(request, self._prompt_builder, self.runner.hidden_size, self.block_manager)
        seq = Sequence(request, prompt, params, max_frames)
        with self._lock:
            if self._stopping:
                raise RequestError("the engine is stopped")
            if request.id in self._live:
                raise RequestError(f"request id {request.id!r} is already in progress")
            self._live[request.id] = seq
            self._inbox.append(seq)
            self._wakeup.notify()
        log.debug("submitted %r", seq)
        return Handle(seq, self.cancel)

    def cancel(self, request_id: str) -> bool:
        """Stop a request at the next step (no further frames); False if unknown or finished."""
        with self._lock:
            seq = self._live.get(request_id)
            if seq is None:
                return False
            seq.cancel_requested = True
            seq.output.put(None)  # wake a consumer blocked on the next chunk right away
            self._wakeup.notify()
            return True

    def set_max_batch(self, n: int) -> None:
        """Live limit on running sequences (clamped to max_num_seqs); emergencies bypass it."""
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"max batch must be an integer >= 1, got {n!r}")
        with self._lock:
            self._pending_max_batch = n
            self._wakeup.notify()

    def stats(self) -> EngineStats:
        return EngineStats(
            num_running=len(self.scheduler.running),
            num_waiting=len(self.scheduler.waiting) + len(self._inbox),
            num_kv_blocks_used=self.block_manager.num_used_blocks,
            num_kv_blocks_free=self.block_manager.num_free_blocks,
            frames_per_second=self.meter.frames_per_second,
            max_batch=self._pending_max_batch or self.scheduler.max_batch,
            num_preemptions=self.scheduler.num_preemptions,
            num_steps=self.meter.num_steps,
            num_frames=self.meter.num_frames,
            mean_batch=self.meter.mean_batch(),
            num_cached_blocks=self.block_manager.num_cached_blocks,
            prefix_queried_tokens=self.block_manager.num_prefix_queried_tokens,
            prefix_hit_tokens=self.block_manager.num_prefix_hit_tokens,
            num_frame_capped=self.scheduler.num_frame_capped,
        )

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("engine already started")
        self._thread = threading.Thread(target=self._loop, name="qwen3tts-engine", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = 10.0) -> None:
        """Stop the loop after its current step; unfinished requests end as cancelled."""
        with self._lock:
            self._stopping = True
            self._wakeup.notify()
        if self._thread is not None:
            self._thread.join(timeout)
        for seq in list(self._live.values()):
            self._finish(seq, SequenceStatus.FINISHED_CANCELLED)

    # ---- the step loop (one thread) ----

    def _loop(self) -> None:
        while True:
            self._heartbeat()
            with self._lock:
                # Wake at least twice a second even when idle: the heartbeat proves the loop is alive.
                if not self._stopping and not (self._inbox or self.scheduler.has_unfinished()):
                    self._wakeup.wait(timeout=0.5)
                if self._stopping:
                    return
                if not (self._inbox or self.scheduler.has_unfinished()):
                    continue
            try:
                progressed = self.step()
            except Exception as exc:  # supervisor boundary: an engine bug must not hang every handle
                log.exception("engine step failed; failing the running requests")
                for seq in list(self.scheduler.running):
                    self._fail(seq, exc)
                progressed = False
            if not progressed:
                time.sleep(0.001)

    def step(self) -> bool:
        """One scheduling step; returns False when there was nothing to run. Tests call it directly."""
        self._intake()
        out = self.scheduler.schedule()
        for seq in out.aborted:
            self._finish(seq, SequenceStatus.FINISHED_ERROR, seq.error)
        if not out.chunks:
            return bool(out.aborted)
        rows = self._run_talker(out.chunks)
        rows = self._sample_code0(rows)
        rows = self._run_code_predictor(rows)
        for row, (codes, next_embed) in rows:
            self._append_frame(row, codes, next_embed)
        self.meter.count(len(rows))
        return True

    def _intake(self) -> None:
        with self._lock:
            inbox, self._inbox = self._inbox, []
            if self._pending_max_batch is not None:
                self.scheduler.set_max_batch(self._pending_max_batch)
                self._pending_max_batch = None
            cancelled = [seq for seq in self._live.values() if seq.cancel_requested]
        for seq in inbox:
            self.scheduler.add(seq)
        for seq in cancelled:
            self._finish(seq, SequenceStatus.FINISHED_CANCELLED)

    def _run_talker(self, chunks: list[ScheduledChunk]) -> list[_Row]:
        def talker(batch: list[ScheduledChunk]) -> list[tuple[np.ndarray, np.ndarray]]:
            logits, hidden = self.runner.talker([_talker_chunk(chunk) for chunk in batch])
            return list(zip(logits, hidden, strict=True))

        rows = []
        for chunk, (logits, hidden) in self._isolated(talker, chunks, "talker"):
            chunk.seq.num_computed_tokens += chunk.num_tokens
            if not chunk.completes:
                continue  # a prefill chunk in the middle of the prompt: its logits mean nothing
            if not (np.isfinite(logits).all() and np.isfinite(hidden).all()):
                self._fail(chunk.seq, RequestError("the talker produced non-finite values"))
                continue
            rows.append(_Row(chunk.seq, logits, hidden))
        return rows

    def _sample_code0(self, rows: list[_Row]) -> list[_Row]:
        def sample(batch: list[_Row]) -> np.ndarray:
            seqs = [row.seq for row in batch]
            return sample_code0(
                np.stack([row.logits for row in batch]),
                [seq.code0_history for seq in seqs],
                [seq.params for seq in seqs],
                [seq.rng for seq in seqs],
                self.runner.eos_token_id,
                self._suppressed,
            )

        frame_rows = []
        for row, code0 in self._isolated(sample, rows, "sampler"):
            row.code0 = int(code0)
            if row.code0 == self.runner.eos_token_id:
                self._finish(row.seq, SequenceStatus.FINISHED_STOPPED)
            else:
                frame_rows.append(row)
        if frame_rows:  # drawn once, outside the call, so a per-sequence retry sees the same noise
            noise = code_predictor_noise(
                [row.seq.rng for row in frame_rows], [row.seq.params for row in frame_rows],
                NUM_CODE_GROUPS - 1, self.runner.codebook_size,
            )  # fmt: skip
            for row, row_noise in zip(frame_rows, noise, strict=True):
                row.noise = row_noise
        return frame_rows

    def _run_code_predictor(self, rows: list[_Row]) -> list[tuple[_Row, tuple[np.ndarray, np.ndarray]]]:
        def code_predictor(batch: list[_Row]) -> list[tuple[np.ndarray, np.ndarray]]:
            params = [row.seq.params for row in batch]
            codes, next_embed = self.runner.code_predictor(
                np.stack([row.hidden for row in batch]),
                np.array([row.code0 for row in batch], dtype=np.int64),
                np.stack([row.noise for row in batch]),
                np.array([0 if p.subtalker_greedy else p.subtalker_temperature for p in params], np.float32),
                np.array([p.subtalker_top_k for p in params], dtype=np.int64),
                np.array([p.subtalker_top_p for p in params], dtype=np.float32),
            )
            return list(zip(codes, next_embed, strict=True))

        return self._isolated(code_predictor, rows, "code predictor")

    def _append_frame(self, row: _Row, codes: np.ndarray, next_embed: np.ndarray) -> None:
        seq = row.seq
        try:
            seq.append_frame(np.concatenate([[row.code0], codes]), next_embed)
            if seq.num_frames >= seq.max_frames - 1:  # the next token would get no frame
                self._finish(seq, SequenceStatus.FINISHED_LENGTH)
            else:
                self._emit_audio(seq, final=False)
        except Exception as exc:
            self._fail(seq, exc)

    def _emit_audio(self, seq: Sequence, final: bool) -> None:
        """Decode due frames: first_chunk_frames first, then chunk_frames; the remainder when final."""
        if seq.cancel_requested:
            return
        while True:
            pending = seq.num_frames - seq.num_frames_decoded
            size = self.config.first_chunk_frames if seq.num_frames_decoded == 0 else self.config.chunk_frames
            if pending < size and not (final and pending > 0):
                return
            count = min(pending, size)
            if not seq.codec_open:
                self.runner.codec_open(seq.seq_id, seq.codec_context)
                seq.codec_open = True
            start = seq.num_frames_decoded
            last = final and count == pending  # the stream ends: the codec may pad its last chunk
            pcm = self.runner.codec_decode(seq.seq_id, seq.frames[start : start + count], final=last)
            seq.output.put(np.asarray(pcm, dtype=np.float32))
            seq.num_frames_decoded += count

    # ---- per-request isolation and endings ----

    def _isolated(self, fn: Callable[[list], object], items: list, stage: str) -> list[tuple]:
        """Pair each item with its row of fn(items); if the batched call raises, find who fails it.

        Items are chunks or rows with a `.seq`; the failing ones end with a RequestError, the rest go on.
        """
        if not items:
            return []
        try:
            return list(zip(items, fn(items), strict=True))
        except Exception as exc:
            if len(items) == 1:
                self._fail(items[0].seq, exc)
                return []
            log.warning("batched %s call failed; retrying %d sequences one by one", stage, len(items))
        paired = []
        for item in items:
            try:
                paired.append((item, fn([item])[0]))
            except Exception as exc:
                self._fail(item.seq, exc)
        return paired

    def _fail(self, seq: Sequence, exc: Exception) -> None:
        if seq.is_finished:
            return
        log.error("request %r failed: %s: %s", seq.request.id, type(exc).__name__, exc, exc_info=exc)
        error = exc if isinstance(exc, RequestError) else RequestError(
            f"request {seq.request.id!r} failed: {type(exc).__name__}: {exc}"
        )  # fmt: skip
        if error is not exc:
            error.__cause__ = exc
        self._finish(seq, SequenceStatus.FINISHED_ERROR, error)

    def _finish(self, seq: Sequence, status: SequenceStatus, error: Exception | None = None) -> None:
        """The one exit of every sequence: flush audio, free blocks, close the codec, wake the handle."""
        if seq.done.is_set():
            return
        if status in (SequenceStatus.FINISHED_STOPPED, SequenceStatus.FINISHED_LENGTH):
            try:
                self._emit_audio(seq, final=True)
            except Exception as exc:
                log.error("request %r failed in the codec: %s", seq.request.id, exc, exc_info=exc)
                status, error = SequenceStatus.FINISHED_ERROR, RequestError(f"codec failed: {exc}")
        seq.error = error
        self.scheduler.finish(seq, status)
        if seq.codec_open:
            try:
                self.runner.codec_close(seq.seq_id)
            except Exception:
                log.exception("codec_close failed for request %r", seq.request.id)
        with self._lock:
            self._live.pop(seq.request.id, None)
        seq.output.put(None)
        seq.done.set()
        log.debug("finished %r", seq)


def _talker_chunk(chunk: ScheduledChunk) -> TalkerChunk:
    seq = chunk.seq
    return TalkerChunk(
        seq_id=seq.seq_id,
        embeddings=seq.token_embeddings(chunk.start, chunk.start + chunk.num_tokens),
        past_len=chunk.start,
        block_table=tuple(seq.block_table),
    )
