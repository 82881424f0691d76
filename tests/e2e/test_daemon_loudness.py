"""Black box: `qwen3tts run` on the tiny bundle levels what it plays to the configured loudness (issue 24
item 1): the WAV the daemon writes, measured with pyloudnorm, sits within 1 LU of `audio.loudness`'s
target; the same announcement with levelling off comes out at the model's own, different level."""

from __future__ import annotations

import pytest
from loudness_plays import lufs
from test_daemon import RATE, SITE, Daemon, config_file, read_wav, say, wait_event, wait_online

pytestmark = pytest.mark.e2e
TEXT = "Store notice. The shop closes in ten minutes, please bring your purchases to the tills."


@pytest.fixture(scope="module")
def bundle(tiny_models):
    return tiny_models.bundle("custom_voice", "tiny", "int8")


def speech_of_one_announcement(tmp_path, bundle, mosquitto, recorder_factory, loudness: dict):
    ann_id = f"level-{tmp_path.name}"  # each daemon its own id on the shared broker
    tmp_path.mkdir()
    recorder = recorder_factory(mosquitto, [f"qwen3tts/{SITE}/#"])
    config = config_file(tmp_path, bundle, mosquitto, {"max_frames": 40}, lead_in_ms=0, tail_ms=0,
                         loudness=loudness)  # fmt: skip
    daemon = Daemon(config)
    try:
        wait_online(recorder)
        say(recorder, ann_id, TEXT, seed=3)
        wait_event(recorder, ann_id, "finished")
        assert daemon.terminate() == 0, daemon.output()[-2000:]
    finally:
        daemon.kill()
    [wav] = sorted((tmp_path / "wav").glob(f"*{ann_id}*.wav"))
    return read_wav(wav)


def test_the_daemon_plays_the_tiny_models_speech_at_the_configured_loudness(
    tmp_path, bundle, mosquitto, recorder_factory
):
    levelled = speech_of_one_announcement(tmp_path / "on", bundle, mosquitto, recorder_factory,
                                          {"target_lufs": -23.0})  # fmt: skip
    raw = speech_of_one_announcement(
        tmp_path / "off", bundle, mosquitto, recorder_factory, {"enabled": False}
    )
    assert len(levelled) > RATE  # over a second of speech: an integrated loudness means something
    print(f"model's own level {lufs(raw):.2f} LUFS, levelled {lufs(levelled):.2f} LUFS")
    assert abs(lufs(raw) + 23.0) > 1.0  # the model alone does not happen to sit at the target
    assert abs(lufs(levelled) + 23.0) <= 1.0
