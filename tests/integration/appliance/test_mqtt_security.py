"""TLS with a client certificate and a password from a file or $CREDENTIALS_DIRECTORY."""

from __future__ import annotations

import queue
import subprocess
from pathlib import Path

import pytest
from mosquitto_broker import Mosquitto

from qwen3tts.appliance.mqtt.client import MqttClient
from qwen3tts.settings import MqttSettings

PASSWORD = "s3cret-über"


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


def make_certificates(d: Path) -> None:
    """A throw-away CA, a server certificate for 127.0.0.1 and a client certificate."""
    openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=test-ca",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        cwd=d,
    )
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    for name, extra in (("server", ["-extfile", "san.ext"]), ("client", [])):
        openssl(
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            f"/CN={name}",
            "-keyout",
            f"{name}.key",
            "-out",
            f"{name}.csr",
            cwd=d,
        )
        openssl(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-out",
            f"{name}.crt",
            *extra,
            cwd=d,
        )


@pytest.fixture
def secure_broker(tmp_path):
    certs = tmp_path / "certs"
    certs.mkdir()
    make_certificates(certs)
    passwords = tmp_path / "passwd"
    passwords.write_text("")
    subprocess.run(["mosquitto_passwd", "-b", str(passwords), "appliance", PASSWORD], check=True, timeout=30)
    broker = Mosquitto(
        tmp_path,
        persistence=False,
        extra_config=(
            f"cafile {certs / 'ca.crt'}",
            f"certfile {certs / 'server.crt'}",
            f"keyfile {certs / 'server.key'}",
            "require_certificate true",
            f"password_file {passwords}",
        ),
    )
    broker.config.write_text(
        broker.config.read_text().replace("allow_anonymous true", "allow_anonymous false")
    )
    broker.start()
    yield broker, certs
    broker.stop()


def tls_settings(broker, certs: Path, **kw) -> MqttSettings:
    return MqttSettings(
        host=broker.host,
        port=broker.port,
        site="secure",
        username="appliance",
        tls_ca=certs / "ca.crt",
        tls_cert=certs / "client.crt",
        tls_key=certs / "client.key",
        **kw,
    )


def connects(settings: MqttSettings) -> bool:
    client = MqttClient(settings, on_inbound=queue.Queue().put)
    client.start()
    try:
        return client.wait_connected(3)
    finally:
        client.stop(timeout=1)


def test_tls_client_certificate_and_password_file(secure_broker, tmp_path):
    broker, certs = secure_broker
    secret = tmp_path / "mqtt.pass"
    secret.write_text(PASSWORD + "\n")
    assert connects(tls_settings(broker, certs, password_file=secret))


def test_password_from_the_systemd_credentials_directory(secure_broker, tmp_path, monkeypatch):
    broker, certs = secure_broker
    creds = tmp_path / "creds"
    creds.mkdir()
    (creds / "mqtt-password").write_text(PASSWORD)
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(creds))
    assert connects(tls_settings(broker, certs))


def test_wrong_password_does_not_connect(secure_broker, tmp_path):
    broker, certs = secure_broker
    secret = tmp_path / "wrong.pass"
    secret.write_text("nope")
    assert not connects(tls_settings(broker, certs, password_file=secret))
