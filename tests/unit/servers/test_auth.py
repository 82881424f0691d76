"""Safe by default: loopback is open; elsewhere HTTP needs a token and Wyoming an explicit opt-in."""

import pytest

from qwen3tts.errors import ConfigError
from qwen3tts.servers.auth import bearer_ok, check_http_bind, check_wyoming_bind, is_loopback


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "127.255.0.9", "::1", "[::1]", "localhost"])
def test_the_whole_loopback_range_counts_as_loopback(host):
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "10.0.0.1", "appliance.lan", ""])
def test_every_other_address_or_name_counts_as_the_network(host):
    assert not is_loopback(host)


def test_a_network_http_bind_without_a_token_is_refused_naming_the_settings():
    with pytest.raises(
        ConfigError, match=r"servers\.http\.host: binding 0\.0\.0\.0 .*servers\.http\.token_file"
    ):
        check_http_bind("0.0.0.0", None)
    check_http_bind("0.0.0.0", "a-token")  # with a token it may
    check_http_bind("127.0.0.1", None)  # loopback needs none


def test_a_network_wyoming_bind_needs_allow_network():
    with pytest.raises(ConfigError, match=r"servers\.wyoming\.allow_network: true"):
        check_wyoming_bind("192.168.1.20", allow_network=False)
    check_wyoming_bind("192.168.1.20", allow_network=True)
    check_wyoming_bind("127.0.0.1", allow_network=False)


@pytest.mark.parametrize(
    ("header", "ok"),
    [
        ("Bearer s3cret", True),
        ("bearer s3cret", True),
        ("Bearer  s3cret ", True),
        ("Bearer s3cre", False),
        ("Bearer s3cret2", False),
        ("Basic s3cret", False),
        ("s3cret", False),
        ("", False),
        (None, False),
    ],
)
def test_only_the_exact_bearer_token_passes(header, ok):
    assert bearer_ok(header, "s3cret") is ok
