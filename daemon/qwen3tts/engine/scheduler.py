"""Continuous batching: which sequences run in the next talker step, and how many positions each.

One step has a budget of `max_num_batched_tokens` talker positions, filled in this order:
  1. decodes: every running sequence with one pending position (the input of its newest frame);
  2. prefill chunks of running sequences that are still (re)computing their prompt;
  3. admissions from the waiting queue (highest rank first, then arrival), while a sequence slot,
     budget and KV blocks allow. A prompt longer than the remaining budget is prefilled in chunks, so
     a long prompt never stalls running streams for more than one step.
Blocks are allocated on demand. When the KV cache is full the victim is the running sequence with the
lowest rank, most recently admitted: its blocks are freed and it waits to be recomputed.
`max_batch` (set_max_batch, the thermal throttle) limits running sequences below `max_num_seqs`;
urgent sequences bypass it, are never preempted by it, and may displace one that is not to start.
With prefix caching (block_manager.py) an admission first shares the cached blocks of its known prefix
and prefills only the rest; full blocks are registered in the cache once computed: at the next
schedule(), and when a sequence is preempted or finishes (except with an error).
"""

from __future__ import annotations

import bisect
import itertools
import logging
from dataclasses import dataclass, field

from qwen3tts.engine.block_manager import BlockManager
from qwen3tts.engine.sequence import Sequence, SequenceStatus
from qwen3tts.errors import RequestError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScheduledChunk:
    """Positions [start, start + num_tokens) of `seq` to run through the talker this step."""

    seq: Sequence
    start: int  # positions already in the KV cache (past_len)
    num_tokens: int

    @property
    def completes(self) -> bool:
        """True when this chunk reaches the newest position, so its logits pick the next code 0."""
        return self.start + self.num_tokens == self.seq.num_tokens


@dataclass
class SchedulerOutput:
    """The plan of one step, plus what the scheduler did to sequences while making it."""

    max_num_batched_tokens: int
    chunks: list[ScheduledChunk] = field(default_factory=list)
    preempted: list[Sequence] = field(default_factory=list)
    aborted: list[Sequence] = field(default_factory=list)  # finished with an error (outgrew the KV cache)

    @property
    def num_batched_tokens(self) -> int:
        return sum(chunk.num_tokens for chunk in self.chunks)

    @property
    def budget(self) -> int:
        return self.max_num_batched_tokens - self.num_batched_tokens

    def is_scheduled(self, seq: Sequence) -> bool:
        return any(chunk.seq is seq for chunk in self.chunks)

    def unschedule(self, seq: Sequence) -> None:
        self.chunks = [chunk for chunk in self.chunks if chunk.seq is not seq]


def _running_key(seq: Sequence) -> tuple[int, int]:
    """Service order of running sequences; the maximum is the preemption victim."""
    return (-seq.rank, seq.admitted_order)


def _waiting_key(seq: Sequence) -> tuple[int, int]:
    return (-seq.rank, seq.arrival_order)


class Scheduler:
    """Owns the waiting and running queues and the block manager's bookkeeping for them."""

    def __init__(self, block_manager: BlockManager, max_num_seqs: int, max_num_batched_tokens: int):
        self.block_manager = block_manager
        self.max_num_seqs = max_num_seqs
        self.max_num_batched_tokens = max_num_batched_tokens
        self.max_batch = max_num_seqs
        self.waiting: list[Sequence] = []  # sorted by _waiting_key
        self.running: list[Sequence] = []  # in admission order
        self.num_preemptions = 0
        self.num_frame_capped = 0  # requests stopped by their frame cap: the model ran away
        self._admissions = itertools.count()

    def has_unfinished(self) -> bool:
        return bool(self.waiting or self.running)

    def add(self, seq: Sequence) -> None:
        seq.status = SequenceStatus.WAITING
        bisect.insort(self.waiting, seq, key=_waiting_key)

    def set_max_batch(self, n: int) -> None:
        """Live limit on running sequences (1..max_num_seqs); the next schedule() preempts down to it."""
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"max batch must be an integer >= 1, got {n!r}")
        self.max_batch = min(n, self.max_num_seqs)

    def finish(self, seq: Sequence, status: SequenceStatus) -> None:
        """End `seq` (EOS, length, cancel, error): leave the queues and give back every block."""
        if seq in self.running:
            self.running.remove(seq)
        if seq in self.waiting:
            self.waiting.remove(seq)
        if status is not SequenceStatus.FINISHED_ERROR:  # a failed step may have left garbage behind
            self.block_manager.cache_computed_blocks(seq)
        self.block_manager.free(seq)
        seq.status = status
        if status is SequenceStatus.FINISHED_LENGTH:
            self.num_frame_capped += 1

    def schedule(self) -> SchedulerOutput:
        out = SchedulerOutput(self.max_num_batched_tokens)
        for seq in self.running:  # the positions of the previous step are computed now
            self.block_manager.cache_computed_blocks(seq)
        self._enforce_max_batch(out)
        self._schedule_running(out, decodes=True)
        self._schedule_running(out, decodes=False)
        self._admit_waiting(out)
        return out

    def _enforce_max_batch(self, out: SchedulerOutput) -> None:
        while len(self.running) > self.max_batch:
            throttled = [s for s in self.running if not s.urgent]
            if not throttled:
                return
            self._preempt(max(throttled, key=_running_key), out)

    def _schedule_running(self, out: SchedulerOutput, decodes: bool) -> None:
        for seq in sorted(self.running, key=_running_key):
            if seq not in self.running or out.is_scheduled(seq):
                continue  # preempted earlier in this loop, or already planned
            if (seq.num_uncomputed_tokens == 1) != decodes:
                continue
            num_tokens = self._reserve(seq, min(seq.num_uncomputed_tokens, out.budget), out)
            if num_tokens:
                out.chunks.append(ScheduledChunk(seq, seq.num_computed_tokens, num_tokens))

    def _reserve(self, seq: Sequence, num_tokens: int, out: SchedulerOutput) -> int:
        """Allocate blocks for `num_tokens` more positions of a running `seq`, preempting as needed.

        Returns the positions actually reserved: fewer when `seq` is itself the lowest-ranked
        sequence and only part of its prefill chunk fits, 0 when it had to step aside.
        """
        bm = self.block_manager
        while num_tokens and not bm.can_allocate(seq, seq.num_computed_tokens + num_tokens):
            victim = max(self.running, key=_running_key)
            if victim is not seq:
                self._preempt(victim, out)
                continue
            fits = (len(seq.block_table) + bm.num_free_blocks) * bm.block_size - seq.num_computed_tokens
            if fits > 0:
                num_tokens = min(num_tokens, fits)
            elif len(self.running) == 1:
                # Every used block is its own: this request alone is larger than the KV cache.
                self._abort(seq, out, f"needs more than all {bm.num_blocks} KV blocks of the cache")
                return 0
            else:
                self._preempt(seq, out)
                return 0
        if num_tokens:
            bm.allocate(seq, seq.num_computed_tokens + num_tokens)
        return num_tokens

    def _admit_waiting(self, out: SchedulerOutput) -> None:
        for seq in list(self.waiting):
            if out.budget == 0 or seq in out.preempted:
                return  # strict rank order: nobody overtakes a sequence that cannot start
            if not self._make_slot(seq, out):
                return
            self.block_manager.allocate_cached_prefix(seq)  # shared hits count as computed
            num_tokens = min(seq.num_uncomputed_tokens, out.budget)
            if not self._make_blocks(seq, num_tokens, out):
                self.block_manager.undo_cached_prefix(seq)  # the lookup repeats at the next step
                return
            self.waiting.remove(seq)
            self.running.append(seq)
            seq.status = SequenceStatus.RUNNING
            seq.admitted_order = next(self._admissions)
            self.block_manager.allocate(seq, seq.num_computed_tokens + num_tokens)
            out.chunks.append(ScheduledChunk(seq, seq.num_computed_tokens, num_tokens))

    def _make_slot(self, seq: Sequence, out: SchedulerOutput) -> bool:
        limit = self.max_num_seqs if seq.urgent else self.max_batch
        if len(self.running) < limit:
            return True
        victim = self._urgent_victim(seq)
        if victim is None:
            return False
        self._preempt(victim, out)
        return True

    def _make_blocks(self, seq: Sequence, num_tokens: int, out: SchedulerOutput) -> bool:
        while not self.block_manager.can_allocate(seq, seq.num_computed_tokens + num_tokens):
            victim = self._urgent_victim(seq)
            if victim is None:
                return False
            self._preempt(victim, out)
        return True

    def _urgent_victim(self, seq: Sequence) -> Sequence | None:
        """A running sequence that is not urgent which an urgent `seq` may displace, or None."""
        if not seq.urgent:
            return None
        candidates = [s for s in self.running if not s.urgent]
        return max(candidates, key=_running_key) if candidates else None

    def _preempt(self, seq: Sequence, out: SchedulerOutput) -> None:
        out.unschedule(seq)
        self.running.remove(seq)
        self.block_manager.cache_computed_blocks(seq)  # a re-admission may find them still cached
        self.block_manager.free(seq)
        seq.num_computed_tokens = 0  # recompute: prompt + generated frames are prefilled again
        seq.status = SequenceStatus.PREEMPTED
        bisect.insort(self.waiting, seq, key=_waiting_key)
        out.preempted.append(seq)
        self.num_preemptions += 1
        log.info("preempted %r", seq)

    def _abort(self, seq: Sequence, out: SchedulerOutput, reason: str) -> None:
        out.unschedule(seq)
        self.finish(seq, SequenceStatus.FINISHED_ERROR)
        seq.error = RequestError(f"request {seq.request.id!r} {reason}")
        out.aborted.append(seq)
