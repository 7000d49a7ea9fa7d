"""``HOST:PORT`` for a listening socket, checked whole before anything else happens.

A listener must refuse a malformed address before it says anything about it:
``[::1`` was split at its last colon into host ``[:`` and port ``1``, so
``replay serve`` first warned "listening on :, not loopback" and only then
failed to bind. The host must be an IP literal (IPv6 inside ``[ ]``, as in a
URL, RFC 3986 §3.2.2) or a host name of RFC 1123 labels.
"""

from __future__ import annotations

import ipaddress
import re

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*\.?")
_DOTTED_DIGITS = re.compile(r"[0-9.]+")
_EXAMPLE = "127.0.0.1:6290 or [::1]:6290"


def is_loopback(host: str) -> bool:
    """Whether ``host`` names a loopback interface only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def wildcard_warning(host: str, exposure: str) -> str | None:
    """The warning every listener gives on an address that is not loopback (None on loopback).

    ``exposure`` ends the sentence "anyone who can reach this address ...": what such a
    listener hands to whoever reaches it.
    """
    if is_loopback(host):
        return None
    return (
        f"warning: listening on {host}, not loopback: anyone who can reach this address {exposure}"
    )


def parse_listen_address(text: str, option: str) -> tuple[str, int]:
    """``(host, port)`` from ``HOST:PORT``; raises ``ValueError`` naming ``option`` if invalid.

    The host comes back without brackets; port 0 means any free port.
    """
    if text.startswith("[") and "]" not in text:
        raise ValueError(f"{option}: {text!r}: an IPv6 address goes inside [ ], as {_EXAMPLE}")
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isascii() or not port.isdigit() or len(port) > 5:
        raise ValueError(f"{option} wants HOST:PORT, e.g. {_EXAMPLE}, not {text!r}")
    if int(port) > 65535:
        raise ValueError(f"{option}: {port} is no TCP port (0 to 65535)")
    return _host(host, text, option), int(port)


def _host(host: str, text: str, option: str) -> str:
    if host.startswith("["):
        inner = host[1:-1] if host.endswith("]") else None
        try:
            if inner is None:
                raise ValueError
            ipaddress.IPv6Address(inner)
        except ValueError:
            raise ValueError(f"{option}: {host!r} is not an IPv6 address in [ ]") from None
        return inner
    if ":" in host:
        raise ValueError(f"{option}: {text!r}: an IPv6 address goes inside [ ], as {_EXAMPLE}")
    if _DOTTED_DIGITS.fullmatch(host):
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            raise ValueError(f"{option}: {host!r} is not a host name or IP address") from None
        return host
    if len(host) > 253 or not _HOST_NAME.fullmatch(host):
        raise ValueError(f"{option}: {host!r} is not a host name or IP address")
    return host
