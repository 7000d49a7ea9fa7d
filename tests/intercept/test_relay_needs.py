"""``Relay``: what a client connection needs of its proxy, and that the real proxy has it."""

from __future__ import annotations

import inspect

from mcpsniff.intercept.relay_needs import Relay
from mcpsniff.relay.http import HttpRelay


def _members(protocol: type) -> set[str]:
    names = set(protocol.__annotations__)
    names |= {name for name, value in vars(protocol).items() if inspect.isfunction(value)}
    return {name for name in names if not name.startswith("_")}


def test_the_protocol_names_what_the_connections_use() -> None:
    members = _members(Relay)
    assert {"observer", "gate", "make_room", "forwarded", "rewrite_endpoint"} <= members
    assert len(members) == 17


def test_the_http_relay_has_every_member_with_the_same_signature() -> None:
    # The attributes are set in HttpRelay.__init__: read them from its source.
    init = inspect.getsource(HttpRelay.__init__)
    for name in _members(Relay):
        method = vars(Relay).get(name)
        if inspect.isfunction(method):
            assert inspect.signature(getattr(HttpRelay, name)).parameters.keys() == (
                inspect.signature(method).parameters.keys()
            ), name
        else:
            assert f"self.{name}" in init, name
