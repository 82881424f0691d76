"""Default locations: systemd's directories, else XDG, never the working directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from qwen3tts.paths import (
    cache_dir,
    default_bundle,
    default_config,
    keep_temporary_files_in_runtime_dir,
    runtime_dir,
    state_dir,
    with_default_paths,
)
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


def test_the_runtime_directory_is_systemds_else_xdgs_else_under_the_state():
    assert runtime_dir({"RUNTIME_DIRECTORY": "/run/qwen3tts:/run/other"}) == Path("/run/qwen3tts")
    assert runtime_dir({"XDG_RUNTIME_DIR": "/run/user/1000"}) == Path("/run/user/1000/qwen3tts")
    assert runtime_dir({"XDG_RUNTIME_DIR": "rel", "XDG_STATE_HOME": "/s"}) == Path("/s/qwen3tts/run")


def test_temporary_files_are_made_in_the_runtime_directory_created_private(monkeypatch):
    import shutil
    import tempfile

    # a short directory of its own, as /run/user/N is: a parallel worker's tmp_path is too deep for the
    # forkserver's socket path, which the function refuses (the next test)
    runtime = Path(tempfile.mkdtemp(prefix="q3-", dir="/tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)  # restored after the test: this process's default
    try:
        directory = keep_temporary_files_in_runtime_dir({"XDG_RUNTIME_DIR": str(runtime)})
        assert directory == runtime / "qwen3tts" and directory.stat().st_mode & 0o777 == 0o700
        with tempfile.NamedTemporaryFile() as made:
            assert Path(made.name).parent == directory
    finally:
        shutil.rmtree(runtime)


def test_a_runtime_directory_too_deep_for_the_forkservers_socket_is_refused_and_tempfile_kept(
    tmp_path, monkeypatch
):
    import errno
    import shutil
    import socket
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    deep = tmp_path / ("d" * 120)
    with pytest.raises(OSError) as refused:
        keep_temporary_files_in_runtime_dir({"RUNTIME_DIRECTORY": str(deep)})
    assert refused.value.errno == errno.ENAMETOOLONG and tempfile.tempdir is None and not deep.exists()
    # the limit is the kernel's: the forkserver's socket under the longest accepted directory binds
    longest = Path("/tmp") / ("r" * (107 - len("/tmp/") - len("/pymp-xxxxxxxx/listener-xxxxxxxx")))
    try:
        assert keep_temporary_files_in_runtime_dir({"RUNTIME_DIRECTORY": str(longest)}) == longest
        (longest / "pymp-xxxxxxxx").mkdir()
        with socket.socket(socket.AF_UNIX) as listener:
            listener.bind(str(longest / "pymp-xxxxxxxx" / "listener-xxxxxxxx"))
    finally:
        shutil.rmtree(longest, ignore_errors=True)
