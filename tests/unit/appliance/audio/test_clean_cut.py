"""Clean cuts (issue 24 item 4): a barge-in fades the cut play out within one audio block, with no click,
and the emergency chime follows at once.

The play, the cut and the click measure are scripts/measure_cut_click.py's (the numbers in
docs/benchmarks.md): a tone with nothing of its own above 4 kHz, cut mid-waveform from the sink's write;
the click is the energy above 4 kHz in the 20 ms around the cut. The bound sits between the two: the
abrupt cut (fade_ms 0, no levelling) must exceed it, so the test fails if the fade went missing.
"""

from __future__ import annotations

import numpy as np
import pytest
from script_modules import script

from qwen3tts.appliance.audio.loudness import LoudnessTarget
from qwen3tts.settings import AudioSettings

measure = script("measure_cut_click")

CLICK_BOUND_DB = -50.0
"""Energy above 4 kHz around the cut, dB re the speech's energy per 20 ms; the abrupt cut measures ~-31."""
DEFAULTS = AudioSettings()  # fade_ms 10, block_ms 40, 300 ms lead-in and tail
ABRUPT = AudioSettings(fade_ms=0)


@pytest.mark.parametrize("loudness", [None, LoudnessTarget()], ids=["unlevelled", "levelled"])
def test_a_faded_cut_stays_under_the_click_bound_that_an_abrupt_cut_exceeds(loudness):
    faded = measure.cut_then_emergency(DEFAULTS, loudness)
    abrupt = measure.cut_then_emergency(ABRUPT, None)
    faded_db = measure.click_db(faded.stream, faded.cut_end, measure.speech_of(faded))
    abrupt_db = measure.click_db(abrupt.stream, abrupt.cut_end, measure.speech_of(abrupt))
    assert abrupt_db > CLICK_BOUND_DB, f"the abrupt cut measures {abrupt_db:.1f} dB: the bound proves nothing"
    assert faded_db < CLICK_BOUND_DB, f"the faded cut clicks at {faded_db:.1f} dB"


def test_the_fade_ends_within_one_block_of_the_barge_in_and_reaches_silence():
    play = measure.cut_then_emergency(DEFAULTS, LoudnessTarget())
    assert 0 < play.cut_at < play.cut_end <= play.cut_at + DEFAULTS.block_ms * measure.RATE // 1000
    tail = play.stream[play.cut_at : play.cut_end]
    assert (
        np.abs(tail[-1]) < measure.SILENT < np.abs(tail[:10]).max()
    )  # it was sounding, and it faded to zero


def test_the_emergency_chime_follows_the_fade_without_a_gap():
    play = measure.cut_then_emergency(DEFAULTS, LoudnessTarget())
    assert (
        measure.gap_ms(play.stream, play.cut_end) < 1.0
    )  # no tail silence; the chime's 5 ms attack starts at 0
    chime = play.stream[play.cut_end : play.cut_end + measure.RATE // 10]
    assert np.abs(chime).max() > 0.1
