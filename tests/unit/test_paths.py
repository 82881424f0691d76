"""Default locations: systemd's directories, else XDG, never the working directory."""

from __future__ import annotations

from pathlib import Path

from qwen3tts.paths import cache_dir, default_bundle, default_config, state_dir, with_default_paths
from qwen3tts.settings import Settings
from qwen3tts.settings_loader import build


def test_systemd_directories_win_and_the_first_of_a_list_is_ours():
    env = {"STATE_DIRECTORY": "/var/lib/qwen3tts:/var/lib/other", "CACHE_DIRECTORY": "/var/cache/qwen3tts",
           "XDG_STATE_HOME": "/home/u/.state", "HOME": "/home/u"}  # fmt: skip
    assert state_dir(env) == Path("/var/lib/qwen3tts")
    assert cache_dir(env) == Path("/var/cache/qwen3tts")


def test_xdg_directories_elsewhere_and_relative_xdg_values_are_ignored():
    assert state_dir({"XDG_STATE_HOME": "/x/state", "HOME": "/home/u"}) == Path("/x/state/qwen3tts")
    assert cache_dir({"XDG_CACHE_HOME": "relative", "HOME": "/home/u"}) == Path("/home/u/.cache/qwen3tts")
    assert state_dir({"HOME": "/home/u"}) == Path("/home/u/.local/state/qwen3tts")


def test_empty_paths_get_their_defaults_and_configured_ones_stay():
    env = {"STATE_DIRECTORY": "/var/lib/qwen3tts", "CACHE_DIRECTORY": "/var/cache/qwen3tts"}
    settings = build(Settings, {"audio": {"wav_dir": "/srv/wav"}}, "")
    resolved = with_default_paths(settings, env)
    assert resolved.model.bundle == default_bundle(env) == Path("/var/lib/qwen3tts/bundle-tiny")
    assert resolved.model.cache_dir == Path("/var/cache/qwen3tts/openvino")
    assert resolved.announcements.spool_dir == Path("/var/lib/qwen3tts/spool")
    assert resolved.audio.wav_dir == Path("/srv/wav")
    assert resolved.cache.phrase_dir == Path("/var/cache/qwen3tts/phrases")
    assert all(p.is_absolute() for p in (resolved.model.bundle, resolved.announcements.spool_dir))


def test_without_config_the_environment_then_the_installed_file_then_none(tmp_path):
    installed = tmp_path / "qwen3tts.yaml"
    assert default_config({}, installed) is None  # a development checkout
    installed.write_text("{}\n")
    assert default_config({}, installed) == installed
    named = {"QWEN3TTS_CONFIG": str(tmp_path / "other.yaml")}
    assert default_config(named, installed) == tmp_path / "other.yaml"
    assert named == {"QWEN3TTS_CONFIG": str(tmp_path / "other.yaml")}  # the directories stay the caller's
