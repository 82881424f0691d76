"""Settings: one frozen tree, YAML then --set overrides, errors that name the key path."""

import dataclasses
from pathlib import Path

import pytest

from qwen3tts.errors import ConfigError
from qwen3tts.settings import (
    HttpServerSettings,
    MqttSettings,
    Settings,
    ZoneSettings,
    read_http_token,
    read_mqtt_password,
)
from qwen3tts.settings_doc import field_doc, render_default_yaml
from qwen3tts.settings_loader import build, load_settings

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path, text):
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_committed_default_config_is_the_rendering_of_the_code():
    committed = (REPO / "config" / "qwen3tts.yaml").read_text(encoding="utf-8")
    assert committed == render_default_yaml(), (
        "regenerate config/qwen3tts.yaml with `qwen3tts config --default`"
    )


def test_the_committed_default_config_loads_to_the_defaults():
    assert load_settings(REPO / "config" / "qwen3tts.yaml") == load_settings()
    assert build(Settings, {}, "") == Settings()


def undocumented(section, path: str) -> list[str]:
    """Key paths under `section` (a settings dataclass instance) without a docstring, nested ones too."""
    missing = []
    for item in dataclasses.fields(section):
        if not field_doc(type(section), item.name):
            missing.append(f"{path}.{item.name}")
        value = getattr(section, item.name)
        if dataclasses.is_dataclass(value):
            missing += undocumented(value, f"{path}.{item.name}")
    return missing


def test_every_settings_field_has_a_docstring():
    sections = [f.type for f in dataclasses.fields(Settings)]
    missing = []
    for section in dataclasses.fields(Settings()):
        value = getattr(Settings(), section.name)
        if isinstance(value, tuple):  # a list of sections: its entries' fields, and the list itself
            missing += undocumented(ZoneSettings(name="z"), f"{section.name}[]")
            missing += [] if field_doc(Settings, section.name) else [section.name]
            continue
        missing += undocumented(value, section.name)
    assert sections and not missing, missing


def test_zones_load_as_a_list_of_sections_and_bad_ones_name_their_entry(tmp_path):
    path = write(tmp_path, (
        "zones:\n  - name: platform-3\n    output: snapcast\n    snapcast: {stream: tts, clients: [left]}\n"
        "  - name: concourse\n    output: wav\n"
    ))  # fmt: skip
    settings = load_settings(path)
    assert [zone.name for zone in settings.zones] == ["platform-3", "concourse"]
    assert settings.zones[0].snapcast.stream == "tts" and settings.zones[0].snapcast.clients == ("left",)
    assert settings.zones[1].wav_dir.name == "concourse"  # <state>/wav/<zone> by default
    assert load_settings().zones == ()  # none configured: the one default zone of the audio section
    bad = [
        ("zones:\n  - name: a/b\n", r"zones\[0\]\.name: expected one MQTT topic level"),
        ("zones:\n  - name: ''\n", r"zones\[0\]\.name: expected 1-64"),
        ("zones:\n  - name: a\n  - name: a\n", r"zones\[1\]\.name: 'a' is already the name of zones\[0\]"),
        ("zones:\n  - name: a\n    output: sonos\n", r"zones\[0\]\.output: expected one of"),
        ("zones: {name: a}\n", r"zones: expected a list of sections"),
        ("zones:\n  - name: a\n    snapcast: {port: 1}\n", r"zones\[0\]\.snapcast\.port: unknown key"),
    ]
    for text, message in bad:
        with pytest.raises(ConfigError, match=message):
            load_settings(write(tmp_path, text))


def test_nested_server_sections_load_from_yaml_and_overrides(tmp_path):
    path = write(tmp_path, "servers:\n  wyoming:\n    enabled: true\n    port: 10300\n")
    settings = load_settings(path, ["servers.http.port=8081"])
    assert settings.servers.wyoming.enabled and settings.servers.wyoming.port == 10300
    assert settings.servers.http.port == 8081 and not settings.servers.http.enabled
    with pytest.raises(ConfigError, match=r"servers\.wyoming\.port: expected an integer in 1\.\.65535"):
        load_settings(None, ["servers.wyoming.port=0"])
    with pytest.raises(ConfigError, match=r"servers\.http\.token: unknown key"):
        load_settings(None, ["servers.http.token=hunter2"])  # secrets never in the YAML


def test_the_servers_are_off_and_on_loopback_by_default():
    servers = Settings().servers
    assert not servers.wyoming.enabled and not servers.http.enabled
    assert (servers.wyoming.host, servers.wyoming.port) == ("127.0.0.1", 10200)
    assert (servers.http.host, servers.http.port) == ("127.0.0.1", 8080)
    assert not servers.wyoming.allow_network


def test_the_http_token_comes_from_its_file_or_the_credentials_directory(tmp_path):
    secret = tmp_path / "token"
    secret.write_text("t0ken\n")
    assert read_http_token(HttpServerSettings(token_file=secret), environ={}) == "t0ken"
    creds = tmp_path / "creds"
    creds.mkdir()
    (creds / "http-token").write_text("from-systemd")
    assert (
        read_http_token(HttpServerSettings(), environ={"CREDENTIALS_DIRECTORY": str(creds)}) == "from-systemd"
    )
    assert read_http_token(HttpServerSettings(), environ={}) is None
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(ConfigError, match="empty"):
        read_http_token(HttpServerSettings(token_file=tmp_path / "empty"), environ={})
    (creds / "http-token").write_text("")  # the installer's empty placeholder: no token
    assert read_http_token(HttpServerSettings(), environ={"CREDENTIALS_DIRECTORY": str(creds)}) is None


def test_yaml_values_then_overrides_apply_in_order(tmp_path):
    path = write(tmp_path, "engine:\n  max_num_seqs: 2\nmqtt:\n  port: 1884\n")
    settings = load_settings(path, ["engine.max_num_seqs=3", "devices.talker=[CPU]"])
    assert settings.engine.max_num_seqs == 3
    assert settings.mqtt.port == 1884
    assert settings.devices.talker == ("CPU",)


def test_settings_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Settings().engine.max_num_seqs = 9  # type: ignore[misc]


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("engine.max_num_seqs=x", "engine.max_num_seqs: expected an integer in 1..64, got 'x'"),
        ("engine.max_num_seqs=0", "engine.max_num_seqs: expected an integer in 1..64, got 0"),
        ("audio.volume=1.5", "audio.volume: expected a number in 0.0..1.0, got 1.5"),
        ("audio.sink=speaker", "audio.sink: expected one of auto, alsa, wav, null, got 'speaker'"),
        ("mqtt.discovery=maybe", "mqtt.discovery: expected true or false, got 'maybe'"),
        ("engine.max_num_seq=2", "engine.max_num_seq: unknown key"),
        ("enigne.max_num_seqs=2", "enigne: unknown key"),
        ("thermal.batch_levels=[4, two]", "thermal.batch_levels[1]: expected an integer"),
        ("mqtt.port=70000", "mqtt.port: expected an integer in 1..65535, got 70000"),
    ],
)
def test_bad_values_name_the_key_path_and_the_expectation(override, message):
    with pytest.raises(ConfigError) as err:
        load_settings(None, [override])
    assert message in str(err.value)


def test_a_section_given_as_a_scalar_is_rejected_with_its_path(tmp_path):
    with pytest.raises(ConfigError, match="engine: expected a section"):
        load_settings(write(tmp_path, "engine: 3\n"))


def test_unreadable_and_invalid_yaml_files_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_settings(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_settings(write(tmp_path, "engine: [unclosed\n"))


def test_an_override_without_equals_sign_is_rejected():
    with pytest.raises(ConfigError, match=r"expected key\.path=value"):
        load_settings(None, ["engine.max_num_seqs"])


def test_the_mqtt_password_comes_from_its_file_or_the_credentials_directory(tmp_path):
    secret = tmp_path / "pw"
    secret.write_text("s3cret\n")
    assert read_mqtt_password(MqttSettings(password_file=secret), environ={}) == "s3cret"
    creds = tmp_path / "creds"
    creds.mkdir()
    (creds / "mqtt-password").write_text("from-systemd")
    assert read_mqtt_password(MqttSettings(), environ={"CREDENTIALS_DIRECTORY": str(creds)}) == "from-systemd"
    assert read_mqtt_password(MqttSettings(), environ={}) is None


def test_a_password_key_in_yaml_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"mqtt\.password: unknown key"):
        load_settings(write(tmp_path, "mqtt:\n  password: hunter2\n"))


@pytest.mark.parametrize("value", ["[AUTO]", "[GPU, AUTO]", "[AUTO:GPU,CPU]", "[MULTI:GPU,CPU]", "[hetero]"])
def test_openvino_meta_devices_are_rejected_at_load_with_the_key_path(value):
    with pytest.raises(ConfigError, match=r"devices\.talker\[\d\]: .* is an OpenVINO meta-device"):
        load_settings(None, [f"devices.talker={value}"])


def test_real_device_names_and_numbered_gpus_load():
    settings = load_settings(None, ["devices.talker=[GPU.1, gpu, CPU]", "devices.codec=[NPU, CPU]"])
    assert settings.devices.talker == ("GPU.1", "gpu", "CPU")
