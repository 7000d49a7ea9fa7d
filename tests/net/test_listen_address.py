"""``HOST:PORT`` of a listener, checked whole (mcpsniff/net/listen_address.py)."""

from __future__ import annotations

import pytest

from mcpsniff.net.listen_address import is_loopback, parse_listen_address, wildcard_warning


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[::1]:6290", ("::1", 6290)),
        ("127.0.0.1:0", ("127.0.0.1", 0)),
        ("0.0.0.0:65535", ("0.0.0.0", 65535)),
        ("localhost:80", ("localhost", 80)),
        ("my-host.example.:80", ("my-host.example.", 80)),
        ("[fe80::1%eth0]:80", ("fe80::1%eth0", 80)),
    ],
)
def test_valid_addresses(text: str, expected: tuple[str, int]) -> None:
    assert parse_listen_address(text, "--http") == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[::1", "an IPv6 address goes inside [ ]"),
        ("::1:80", "an IPv6 address goes inside [ ]"),
        ("[::1]", "wants HOST:PORT"),
        ("[x]:80", "not an IPv6 address"),
        ("[::1]x:80", "not an IPv6 address"),
        ("-bad:80", "not a host name"),
        ("a b:80", "not a host name"),
        ("256.1.1.1:80", "not a host name or IP address"),
        ("h\x1b[2J:80", "not a host name"),
        (":80", "wants HOST:PORT"),
        ("h:", "wants HOST:PORT"),
        ("h:١٢", "wants HOST:PORT"),
        ("h:123456", "wants HOST:PORT"),
        ("h:65536", "no TCP port"),
        ("a" * 300 + ":80", "not a host name"),
    ],
)
def test_invalid_addresses_name_the_option(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=r"^--http") as caught:
        parse_listen_address(text, "--http")
    assert message in str(caught.value)
    assert "\x1b" not in str(caught.value)  # repr() escapes it


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("localhost", True),
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.0.2.1", False),
        ("example.org", False),
        ("", False),
    ],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_the_wildcard_warning_names_the_host_and_what_it_exposes() -> None:
    assert wildcard_warning("127.0.0.1", "can read it") is None
    assert wildcard_warning("0.0.0.0", "can read it") == (
        "warning: listening on 0.0.0.0, not loopback: anyone who can reach this address can read it"
    )
