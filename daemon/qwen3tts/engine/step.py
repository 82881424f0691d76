"""One engine step's stages: talker -> sample code 0 -> code predictor -> codec, and each sequence's exit.

The Engine (engine.py) owns the thread, the inbox and the scheduler's turn; it hands each step's scheduled
chunks to `StepPipeline.run`. Every stage is one batched call; a failure inside one request finishes only
that request: a batched call that raises is retried one sequence at a time to find the culprit (`_isolated`).
Every sequence leaves through `finish`, which flushes its audio, frees its blocks and wakes its handle.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from qwen3tts.engine.config import EngineConfig
from qwen3tts.engine.runner import Runner, TalkerChunk
from qwen3tts.engine.sampler import code_predictor_noise, sample_code0, suppressed_mask
from qwen3tts.engine.scheduler import ScheduledChunk, Scheduler
from qwen3tts.engine.sequence import NUM_CODE_GROUPS, Sequence, SequenceStatus
from qwen3tts.errors import RequestError

log = logging.getLogger(__name__)


@dataclass
class _Row:
    """One sequence on its way from talker logits to a frame within a step."""

    seq: Sequence
    logits: np.ndarray
    hidden: np.ndarray
    code0: int = -1
    noise: np.ndarray | None = None


class StepPipeline:
    """The stages of a step over a Runner; runs on the engine's step thread only."""

    def __init__(
        self,
        runner: Runner,
        scheduler: Scheduler,
        config: EngineConfig,
        on_finished: Callable[[Sequence], None],
    ):
        self.runner = runner
        self.scheduler = scheduler
        self.config = config
        self._on_finished = on_finished  # the engine forgets the request id (before the handle wakes)
        self._suppressed = suppressed_mask(runner.vocab_size, runner.eos_token_id)

    def run(self, chunks: list[ScheduledChunk]) -> int:
        """Run the scheduled chunks through every stage; returns how many frames were produced."""
        rows = self._run_talker(chunks)
        rows = self._sample_code0(rows)
        rows = self._run_code_predictor(rows)
        for row, (codes, next_embed) in rows:
            self._append_frame(row, codes, next_embed)
        return len(rows)

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
                self.fail(chunk.seq, RequestError("the talker produced non-finite values"))
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
                self.finish(row.seq, SequenceStatus.FINISHED_STOPPED)
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
                self.finish(seq, SequenceStatus.FINISHED_LENGTH)
            else:
                self._emit_audio(seq, final=False)
        except Exception as exc:
            self.fail(seq, exc)

    def _emit_audio(self, seq: Sequence, final: bool) -> None:
        """Decode due frames: first_chunk_frames first (the request's or the config's), then chunk_frames;
        the remainder when final."""
        if seq.cancel_requested:
            return
        first = seq.request.first_chunk_frames or self.config.first_chunk_frames
        while True:
            pending = seq.num_frames - seq.num_frames_decoded
            size = first if seq.num_frames_decoded == 0 else self.config.chunk_frames
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

    # ---- per-request isolation and the one exit ----

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
                self.fail(items[0].seq, exc)
                return []
            log.warning("batched %s call failed; retrying %d sequences one by one", stage, len(items))
        paired = []
        for item in items:
            try:
                paired.append((item, fn([item])[0]))
            except Exception as exc:
                self.fail(item.seq, exc)
        return paired

    def fail(self, seq: Sequence, exc: Exception) -> None:
        if seq.is_finished:
            return
        log.error("request %r failed: %s: %s", seq.request.id, type(exc).__name__, exc, exc_info=exc)
        error = exc if isinstance(exc, RequestError) else RequestError(
            f"request {seq.request.id!r} failed: {type(exc).__name__}: {exc}"
        )  # fmt: skip
        if error is not exc:
            error.__cause__ = exc
        self.finish(seq, SequenceStatus.FINISHED_ERROR, error)

    def finish(self, seq: Sequence, status: SequenceStatus, error: Exception | None = None) -> None:
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
        self._on_finished(seq)
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
