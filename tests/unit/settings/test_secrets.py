"""Secrets from files or systemd credentials (settings/secrets.py), beyond the plain reads in
tests/unit/test_settings.py: which source wins, a credentials directory without the credential, and an
unreadable secret file refused with its key instead of a traceback."""

import pytest

from qwen3tts.errors import ConfigError
from qwen3tts.settings import HttpServerSettings, MqttSettings
from qwen3tts.settings.secrets import read_http_token, read_mqtt_password


@pytest.fixture
def creds(tmp_path):
    directory = tmp_path / "creds"
    directory.mkdir()
    (directory / "mqtt-password").write_text("from-systemd")
    (directory / "http-token").write_text("token-from-systemd\n")
    return {"CREDENTIALS_DIRECTORY": str(directory)}


def test_the_configured_file_wins_over_systemds_credential(tmp_path, creds):
    secret = tmp_path / "pw"
    secret.write_text("  from-file \n")
    assert read_mqtt_password(MqttSettings(password_file=secret), environ=creds) == "from-file"
    token = tmp_path / "token"
    token.write_text("t0ken")
    assert read_http_token(HttpServerSettings(token_file=token), environ=creds) == "t0ken"


def test_systemds_credential_is_read_when_no_file_is_configured(creds):
    assert read_mqtt_password(MqttSettings(), environ=creds) == "from-systemd"
    assert read_http_token(HttpServerSettings(), environ=creds) == "token-from-systemd"


def test_a_credentials_directory_without_the_credential_means_no_secret(tmp_path):
    environ = {"CREDENTIALS_DIRECTORY": str(tmp_path)}
    assert read_mqtt_password(MqttSettings(), environ=environ) is None
    assert read_http_token(HttpServerSettings(), environ=environ) is None
    assert read_mqtt_password(MqttSettings(), environ={"CREDENTIALS_DIRECTORY": ""}) is None


def test_the_process_environment_is_used_when_none_is_given(monkeypatch, creds):
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", creds["CREDENTIALS_DIRECTORY"])
    assert read_mqtt_password(MqttSettings()) == "from-systemd"


def test_a_missing_password_file_is_a_config_error_naming_the_key_and_the_path(tmp_path):
    missing = tmp_path / "absent"
    with pytest.raises(ConfigError) as refused:
        read_mqtt_password(MqttSettings(password_file=missing), environ={})
    assert str(refused.value) == f"mqtt.password_file: cannot read {missing}: No such file or directory"


def test_a_token_path_that_is_a_directory_is_a_config_error_naming_the_key(tmp_path):
    with pytest.raises(ConfigError, match=r"^servers\.http\.token_file: cannot read .*: Is a directory$"):
        read_http_token(HttpServerSettings(token_file=tmp_path), environ={})


def test_an_empty_password_file_is_an_empty_password_not_an_error(tmp_path):
    empty = tmp_path / "pw"
    empty.write_text("\n")
    assert read_mqtt_password(MqttSettings(password_file=empty), environ={}) == ""
