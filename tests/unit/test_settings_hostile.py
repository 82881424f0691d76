"""Configuration mistakes a new user makes: each is one line naming the key, at load time."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from qwen3tts.errors import ConfigError
from qwen3tts.settings_loader import check_writable_dirs, load_settings


def write(tmp_path, data: bytes):
    path = tmp_path / "config.yaml"
    path.write_bytes(data)
    return path


def one_line_error(path=None, overrides=()) -> str:
    with pytest.raises(ConfigError) as err:
        load_settings(path, list(overrides))
    message = str(err.value)
    assert "\n" not in message
    return message


def test_a_config_file_that_is_not_utf8_is_one_line(tmp_path):
    message = one_line_error(write(tmp_path, "mqtt:\n  site: Küche\n".encode("latin-1")))
    assert "not UTF-8" in message and "config.yaml" in message


def test_invalid_yaml_is_one_line(tmp_path):
    assert "not valid YAML" in one_line_error(write(tmp_path, b"engine: [unclosed\n  more: {\n"))


@pytest.mark.parametrize("key", ["mqtt.site", "mqtt.prefix"])
@pytest.mark.parametrize("bad", ["a+b", "a#", "a/b"])
def test_site_and_prefix_are_single_topic_levels_without_wildcards(key, bad):
    message = one_line_error(overrides=[f"{key}={bad}"])
    assert message.startswith(f"{key}: expected one MQTT topic level without")


def test_discovery_and_response_prefixes_may_have_levels_but_no_wildcards():
    assert load_settings(None, ["mqtt.response_prefix=replies/kiosk"]).mqtt.response_prefix == "replies/kiosk"
    assert one_line_error(overrides=["mqtt.response_prefix=replies/#"]).startswith("mqtt.response_prefix:")
    assert one_line_error(overrides=["mqtt.discovery_prefix=home+"]).startswith("mqtt.discovery_prefix:")


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", ".NaN"])
@pytest.mark.parametrize("key", ["audio.volume", "announcements.default_ttl", "thermal.t_hot_c"])
def test_nan_and_infinity_are_refused_for_every_number(tmp_path, key, value):
    section, name = key.split(".")
    message = one_line_error(write(tmp_path, f"{section}:\n  {name}: {value}\n".encode()))
    assert message.startswith(f"{key}: expected a finite number")


def test_nan_for_an_integer_names_the_key(tmp_path):
    assert one_line_error(write(tmp_path, b"engine:\n  max_num_seqs: .nan\n")).startswith(
        "engine.max_num_seqs: expected an integer"
    )


def test_sink_null_works_unquoted(tmp_path):
    assert load_settings(write(tmp_path, b"audio:\n  sink: null\n")).audio.sink == "null"
    assert load_settings(write(tmp_path, b"audio:\n  sink: ~\n")).audio.sink == "null"
    assert load_settings(None, ["audio.sink=null"]).audio.sink == "null"


CHECK_AS_NOBODY = """
import os, sys
from qwen3tts.errors import ConfigError
from qwen3tts.settings_loader import check_writable_dirs, load_settings
if os.geteuid() == 0:  # drop root after the imports: root may write anywhere, the service user may not
    os.setgid(65534)
    os.setuid(65534)
try:
    check_writable_dirs(load_settings(None, sys.argv[1:]))
except ConfigError as exc:
    print(exc)
"""


@pytest.mark.parametrize("key", ["announcements.spool_dir", "audio.wav_dir"])
def test_unwritable_spool_and_wav_directories_name_the_key(key):
    """Checked as an unprivileged user (root may write anywhere): the service's own situation."""
    parent = Path(tempfile.mkdtemp(prefix="qwen3tts-ro-"))
    try:
        parent.chmod(0o755)
        locked = parent / "locked"
        locked.mkdir(mode=0o555)
        writable = parent / "writable"
        writable.mkdir(mode=0o777)
        writable.chmod(0o777)
        others = [f"{k}={writable / 'd'}" for k in ("announcements.spool_dir", "audio.wav_dir") if k != key]
        args = [*others, f"{key}={locked / 'sub'}", "audio.sink=wav"]
        result = subprocess.run(
            [sys.executable, "-c", CHECK_AS_NOBODY, *args],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        assert result.stdout.startswith(f"{key}: {locked / 'sub'} is not writable"), result
    finally:
        shutil.rmtree(parent)


def test_a_file_where_a_directory_belongs_names_the_key(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    settings = load_settings(None, [f"announcements.spool_dir={blocker / 'spool'}"])
    with pytest.raises(ConfigError, match=r"^announcements\.spool_dir: .* is not a directory"):
        check_writable_dirs(settings)
    check_writable_dirs(load_settings(None, [f"announcements.spool_dir={tmp_path / 'new' / 'spool'}"]))
