"""Say when the model ran away: a sentence the frame cap stopped instead of its end-of-speech token.

`synthesis.frame_budget` gives every sentence a cap of frames (about 3x a normal speaking rate); a
request that reaches it ended in `FINISHED_LENGTH`, so what was heard is cut or babbled. The engine
counts these (`EngineStats.num_frame_capped`, `qwen3tts_sentences_frame_capped_total` in /metrics, for
every door); the announcer puts this text in the announcement's `finished` event's `warnings`, the
network servers in their log.
"""

from __future__ import annotations

from qwen3tts.engine.sequence import Handle, SequenceStatus


def runaway_warning(handle: Handle, sentence: int) -> str | None:
    """The warning for 1-based `sentence` if its request ended at the frame cap; None otherwise."""
    if handle.status is not SequenceStatus.FINISHED_LENGTH:
        return None
    frames = len(handle.frames)
    return (
        f"sentence {sentence} was stopped at the frame cap ({frames} frames, {frames * 0.08:.1f} s): "
        "the model did not end its speech"
    )
