"""The doctor's lines about the servers: disabled, guarded, refused, port free or taken."""

import socket

from qwen3tts.doctor.servers import server_checks
from qwen3tts.settings_loader import load_settings


def test_disabled_servers_say_so_with_their_ports():
    checks = server_checks(load_settings(None), environ={})
    assert [c.ok for c in checks] == [True, True, True]
    assert [c.name for c in checks] == ["wyoming server", "http server", "renderer server"]
    assert "disabled" in checks[0].detail and "10200" in checks[0].detail
    assert "disabled" in checks[1].detail and "8080" in checks[1].detail
    assert "disabled" in checks[2].detail and "49494" in checks[2].detail


def test_an_enabled_server_reports_its_guard_and_a_taken_port():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        settings = load_settings(None, ["servers.http.enabled=true", f"servers.http.port={port}"])
        [_, http, _] = server_checks(settings, environ={})
    assert http.ok and "127.0.0.1" in http.detail and "no token" in http.detail and "in use" in http.detail


def test_an_unsafe_network_bind_is_reported_as_a_failure_without_binding():
    settings = load_settings(None, ["servers.wyoming.enabled=true", "servers.wyoming.host=0.0.0.0"])
    [wyoming, _, _] = server_checks(settings, environ={})
    assert not wyoming.ok and "allow_network" in wyoming.detail and "docs/servers.md" in wyoming.fix


def test_the_renderer_reports_its_guard_and_refuses_an_open_bind_without_allow_network():
    settings = load_settings(None, ["servers.renderer.enabled=true", "servers.renderer.host=0.0.0.0"])
    [*_, refused] = server_checks(settings, environ={})
    assert not refused.ok and "servers.renderer.allow_network" in refused.detail
    settings = load_settings(None, ["servers.renderer.enabled=true", "servers.renderer.port=1"])
    [*_, loopback] = server_checks(settings, environ={})
    assert loopback.ok and "127.0.0.1:1, loopback only, SSDP on" in loopback.detail
