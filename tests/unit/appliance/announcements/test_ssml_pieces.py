"""SSML pieces through `Announcer.turn()`: what each mark does to the engine requests and to the track.

Fake engine, playback and clock (announcer_fakes.py); the text front end and the time-scale
modification are the real ones.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from announcer_fakes import TurnRig, fake_speech

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.announcements.piece_audio import PieceAudio, piece_key
from qwen3tts.appliance.audio.chimes import ChimeSet, synthesize_chime
from qwen3tts.text import Piece


def rig_with_chimes(tmp_path) -> TurnRig:
    rig = TurnRig(tmp_path)
    rig.lookahead.sounds = PieceAudio(ChimeSet.defaults())  # what the service wires from audio.chime_*
    return rig


def played(rig: TurnRig, play) -> np.ndarray:
    """Synthesise every piece with `fake_speech`, then play the track to its end."""
    for _ in range(20):
        rig.engine.speak_all()
        rig.turn()
        if play.track.closed:
            break
    while rig.playback.block():
        pass
    return rig.playback.speech(play.id)


def test_a_break_is_exact_silence_between_the_two_pieces_speech(tmp_path):
    rig = rig_with_chimes(tmp_path)
    rig.say("b", '<speak>Platform one.<break time="750ms"/>Platform two.</speak>')
    rig.turn()
    ann = rig.play("b")
    first, second = rig.engine.of("b")
    assert [first.request.text, second.request.text] == ["Platform one.", "Platform two."]
    audio = played(rig, ann)
    one, two = fake_speech("Platform one."), fake_speech("Platform two.")
    np.testing.assert_array_equal(audio, np.concatenate([one, np.zeros(18000, np.float32), two]))
    assert ann.ends == [len(one) + 18000, len(one) + 18000 + len(two)]


def test_an_audio_element_plays_the_configured_chime_at_that_point_without_a_request(tmp_path):
    rig = rig_with_chimes(tmp_path)
    rig.say("c", '<speak>Attention.<audio src="emergency"/>Leave now.</speak>')
    rig.turn()
    ann = rig.play("c")
    assert rig.engine.texts("c") == ["Attention.", "Leave now."]  # the chime is not synthesised
    audio = played(rig, ann)
    chime = synthesize_chime("emergency")
    expected = np.concatenate([fake_speech("Attention."), chime, fake_speech("Leave now.")])
    np.testing.assert_array_equal(audio, expected)


def test_a_chime_the_settings_turned_off_cannot_be_named(tmp_path):
    rig = TurnRig(tmp_path)  # every chime 'none'
    rig.say("off", '<speak>Attention.<audio src="normal"/></speak>')
    rig.turn()
    assert rig.kinds("off")[-1] == "error" and "not a configured chime" in rig.events("off")[-1][1]
    assert rig.play("off") is None and rig.playback.handed == []


def test_lang_and_voice_go_into_each_pieces_request(tmp_path):
    rig = rig_with_chimes(tmp_path)
    text = (
        '<speak>Good morning. <lang xml:lang="de-DE">Guten Morgen.</lang>'
        '<voice name="ANNA">Welcome.</voice></speak>'
    )
    rig.say("lv", text)
    rig.turn()
    requests = [handle.request for handle in rig.engine.of("lv")]
    assert [(r.text, r.language, r.speaker) for r in requests] == [
        ("Good morning.", "english", "ryan"),
        ("Guten Morgen.", "german", "ryan"),
        ("Welcome.", "english", "anna"),  # the catalog's spelling
    ]


@pytest.mark.parametrize(("rate", "ratio"), [("x-slow", 2.0), ("200%", 0.5)])
def test_prosody_rate_time_scales_the_pieces_speech(tmp_path, rate, ratio):
    rig = rig_with_chimes(tmp_path)
    rig.say("r", f'<speak><prosody rate="{rate}">A slow sentence here.</prosody></speak>')
    rig.turn()
    ann = rig.play("r")
    [handle] = rig.engine.of("r")
    tone = np.sin(2 * np.pi * 150 * np.arange(24000) / 24000).astype(np.float32) * 0.5
    handle.finish(tone)
    rig.turn()
    assert ann.track.closed
    assert ann.track.received == pytest.approx(ratio * len(tone), rel=0.05)
    assert ann.pieces[0].stretch is None  # freed when the piece ended


def test_a_plain_text_that_looks_like_markup_is_read_as_text_when_ssml_is_false(tmp_path):
    rig = rig_with_chimes(tmp_path)
    rig.say("p", "<speak>Hello</speak>", ssml=False)
    rig.turn()
    [text] = rig.engine.texts("p")
    assert "Hello" in text and "speak" in text


def test_the_ssml_choice_survives_the_spool_and_a_bad_value_is_refused():
    ann = Announcement(id="s", text="<speak>Hi</speak>", ssml=True)
    assert Announcement.from_json(ann.to_json()).ssml is True
    with pytest.raises(ValueError, match="ssml"):
        Announcement.from_json({**ann.to_json(), "ssml": "yes"})


def test_a_repeat_from_the_phrase_cache_keys_on_the_marks():
    plain = Piece("Hi.", "Hi.", 0, 3)
    assert piece_key(plain) == "Hi."  # plain announcements keep the keys their renditions have
    assert piece_key(replace(plain, silence_after_ms=750)) != piece_key(replace(plain, silence_after_ms=500))
