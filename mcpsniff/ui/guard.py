"""Who may talk to ``mcpsniff ui``: the Host check, the cross-site check and the run's token.

The UI serves every recorded trace, so three kinds of request are refused:

- DNS rebinding: a page on ``evil.example`` whose name now resolves to this
  machine. Its requests carry ``Host: evil.example``; only the listener's own
  address, loopback names, the machine's own names and IP literals pass (a
  page served from an IP literal has that address as its origin, which on
  this port is this server itself, so no other site can use one).
- Cross-site requests: any page the user visits may send a GET to
  ``127.0.0.1:6288`` (it cannot read the answer, but a costly filter would
  still run). Browsers label such requests: ``Sec-Fetch-Site`` says
  ``cross-site`` or ``same-site`` (Fetch Metadata), ``Origin`` names the
  other site. The API answers only ``same-origin`` and ``none`` (typed by the
  user), and an ``Origin`` that is this server's.
- Requests without the run's token: a random token made at start is set as a
  ``SameSite=Strict``, ``HttpOnly`` cookie when the page is served, so the
  page's own ``fetch`` and ``EventSource`` carry it and no other site's
  request does. On a loopback listener the page itself is served to anyone
  who can connect (it holds no trace data); on any other listener the page,
  too, needs the token, given once in the URL that ``mcpsniff ui`` prints
  (``/?token=...``), since anyone on the network can connect.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import socket
from collections.abc import Mapping

from mcpsniff.net.listen_address import is_loopback

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
WILDCARDS = frozenset({"0.0.0.0", "::", ""})
#: The header a script (or a test) may send the token in instead of the cookie.
TOKEN_HEADER = "X-Mcpsniff-Token"
#: ``Sec-Fetch-Site`` values of a request the page itself (or the user) made.
_OWN_FETCH = frozenset({"same-origin", "none"})


def host_name(value: str) -> str:
    """The name in a ``Host`` header, lower-cased, without its port (``[::1]`` keeps brackets)."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[: end + 1] if end >= 0 else value
    if value.count(":") == 1:
        return value.split(":", 1)[0]
    return value


def _is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


def machine_names() -> frozenset[str]:
    """This machine's own host names (``socket.gethostname()``, its FQDN, ``NAME.local``)."""
    names = set()
    for name in (socket.gethostname(), socket.getfqdn()):
        if name:
            names.add(name.lower())
            names.add(name.lower().split(".", 1)[0] + ".local")
    return frozenset(names)


class Guard:
    """The checks for one UI listener on ``host`` (the address it was asked to bind)."""

    def __init__(self, host: str, token: str | None = None) -> None:
        self.host = host.lower()
        self.token = token or secrets.token_urlsafe(32)
        self.loopback = self.host not in WILDCARDS and is_loopback(self.host)
        self.names = LOOPBACK_NAMES | {self.host, f"[{self.host}]"}
        if not self.loopback:
            # A wildcard or LAN listener is reached by the machine's own names too.
            self.names |= machine_names()

    def cookie_name(self, port: int) -> str:
        """The token's cookie: one per port, since cookies ignore ports."""
        return f"mcpsniff-ui-{port}"

    def allowed_host(self, value: str | None) -> bool:
        """Whether a request's Host header names this server (the DNS-rebinding guard)."""
        if not value:
            return False
        name = host_name(value)
        if name in self.names:
            return True
        # An IP literal is never a rebinding (see the module's docstring); a
        # loopback listener still accepts only its own and loopback addresses.
        return not self.loopback and _is_ip_literal(name)

    def cross_site(self, headers: Mapping[str, str]) -> str | None:
        """Why a request came from another site, or None when it did not (or cannot tell)."""
        site = headers.get("Sec-Fetch-Site")
        if site is not None and site.lower() not in _OWN_FETCH:
            return f"Sec-Fetch-Site: {site[:40]}"
        origin = headers.get("Origin")
        if origin is not None:
            host = headers.get("Host", "")
            if origin.lower() != f"http://{host.lower()}":
                return "Origin is another site"
        return None

    def has_token(self, headers: Mapping[str, str], cookies: Mapping[str, str], port: int) -> bool:
        """Whether the request carries this run's token (cookie or ``X-Mcpsniff-Token``)."""
        given = headers.get(TOKEN_HEADER) or cookies.get(self.cookie_name(port)) or ""
        return hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode())

    def token_in_query(self, query: Mapping[str, str]) -> bool:
        """Whether ``?token=`` of the page's URL is this run's token."""
        given = query.get("token", "")
        return hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode())
