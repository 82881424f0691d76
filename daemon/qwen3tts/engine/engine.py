"""Engine: submit() -> streaming Handle, cancel(), set_max_batch(), stats(), and the step-loop thread.

One thread runs the loop; every step is intake -> schedule -> the stages of step.py (ONE talker call ->
sample code 0 -> ONE code predictor call -> codec chunks). Any thread may call the public API; the lock
guards only the inbox, the index of live requests and the pending batch limit.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from qwen3tts.engine.admission import build_prompt, validate_request
from qwen3tts.engine.block_manager import BlockManager
from qwen3tts.engine.config import EngineConfig
from qwen3tts.engine.runner import Runner
from qwen3tts.engine.scheduler import Scheduler
from qwen3tts.engine.sequence import Handle, Prompt, Request, Sequence, SequenceStatus
from qwen3tts.engine.stats import EngineStats, StepMeter
from qwen3tts.engine.step import StepPipeline
from qwen3tts.errors import RequestError

log = logging.getLogger(__name__)

PromptBuilder = Callable[[Request], Prompt]


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
        self.pipeline = StepPipeline(runner, self.scheduler, self.config, self._forget)
        self._lock = threading.Lock()
        self._wakeup = threading.Condition(self._lock)
        self._inbox: list[Sequence] = []
        self._live: dict[str, Sequence] = {}  # index of unfinished sequences by request id
        self._pending_max_batch: int | None = None
        self._thread: threading.Thread | None = None
        self._runner: threading.Thread | None = None
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
        """Live limit on running sequences (clamped to max_num_seqs); urgent requests bypass it."""
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
            decode_frames_per_second=self.meter.decode_frames_per_second,
        )

    def start(self) -> None:
        """The step loop on a thread of its own, for tools that run the engine alone (`say`, `bench`);
        the daemon runs `run` under its supervisor instead."""
        if self._thread is not None:
            raise RuntimeError("engine already started")
        self._thread = threading.Thread(target=self.run, args=(threading.Event(),), name="qwen3tts-engine",
                                        daemon=True)  # fmt: skip
        self._thread.start()

    def stop(self, timeout: float | None = 10.0) -> None:
        """Stop the loop after its current step; unfinished requests end as cancelled."""
        with self._lock:
            self._stopping = True
            self._wakeup.notify()
        runner = self._runner  # the thread in run(): the daemon's supervised worker, or start()'s own
        if runner is not None and runner is not threading.current_thread():
            runner.join(timeout)
        for seq in list(self._live.values()):
            self.pipeline.finish(seq, SequenceStatus.FINISHED_CANCELLED)

    # ---- the step loop (one thread) ----

    def run(self, stop: threading.Event) -> None:
        """The step loop, until `stop` is set or `stop()` is called."""
        self._runner = threading.current_thread()
        while True:
            self._heartbeat()
            with self._lock:
                # Wake at least twice a second even when idle: the heartbeat proves the loop is alive.
                if not self._stopping and not (self._inbox or self.scheduler.has_unfinished()):
                    self._wakeup.wait(timeout=0.5)
                if self._stopping or stop.is_set():
                    return
                if not (self._inbox or self.scheduler.has_unfinished()):
                    continue
            try:
                progressed = self.step()
            except Exception as exc:  # supervisor boundary: an engine bug must not hang every handle
                log.exception("engine step failed; failing the running requests")
                for seq in list(self.scheduler.running):
                    self.pipeline.fail(seq, exc)
                progressed = False
            if not progressed:
                time.sleep(0.001)

    def step(self) -> bool:
        """One scheduling step; returns False when there was nothing to run. Tests call it directly."""
        self._intake()
        out = self.scheduler.schedule()
        for seq in out.aborted:
            self.pipeline.finish(seq, SequenceStatus.FINISHED_ERROR, seq.error)
        if not out.chunks:
            return bool(out.aborted)
        started = self.meter.clock()
        self.meter.count(self.pipeline.run(out.chunks), started)
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
            self.pipeline.finish(seq, SequenceStatus.FINISHED_CANCELLED)

    def _forget(self, seq: Sequence) -> None:
        """The pipeline's last word on a finished sequence: its request id may be submitted again."""
        with self._lock:
            self._live.pop(seq.request.id, None)
