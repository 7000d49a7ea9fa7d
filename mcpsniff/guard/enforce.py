"""``--guard enforce``: the relay's decision on each ``tools/call`` before it is forwarded.

Off by default: the relays are transparent recorders (docs/architecture.md,
invariant 1). With ``--guard enforce`` a ``tools/call`` to a tool that
``--forbid-tool`` forbids, or whose definition differs from its pin in the
lock file (``--pins``), is answered by mcpsniff with a JSON-RPC error saying
why and never reaches the server. To know the definitions, the gate reads a
copy of the server's ``initialize`` and ``tools/list`` replies as they pass.

A ``Gate`` is fed whole lines (the stdio relay frames both directions by
lines in this mode) and does no I/O: the relay forwards, writes the reply and
records what happened (the event ``guard-answered``).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any

import orjson

from mcpsniff.core.guard.diff import Listed, diff_offers
from mcpsniff.core.guard.fingerprint import definitions
from mcpsniff.core.observations import GuardAnswered
from mcpsniff.guard.lockfile import Lock

#: The JSON-RPC error code of a call mcpsniff refused: in the range JSON-RPC
#: 2.0 §5.1 leaves to implementations (-32000 to -32099).
REFUSED = -32001
#: The event the relay records before the reply it wrote itself.
EVENT = GuardAnswered.name
#: At most this many requests are remembered while their reply is awaited.
MAX_PENDING = 4096


@dataclass(frozen=True)
class EnforcePolicy:
    """What ``--guard enforce`` refuses."""

    #: The server's label: ``stdio:LABEL`` (the lock file's keys add ``[serverInfo.name]``).
    label: str
    pins: Lock | None = None
    forbid_tools: tuple[str, ...] = ()


@dataclass(frozen=True)
class Refusal:
    """A call the gate refused: the reply to write to the client, and what to record."""

    reply: bytes
    tool: str
    reason: str
    request_id: Any


class Gate:
    """Decides, line by line, which client requests mcpsniff answers itself."""

    def __init__(self, policy: EnforcePolicy) -> None:
        self.policy = policy
        self.server_name: str | None = None
        #: The tools listed in this session: name -> fingerprint; None until listed.
        self.listed: dict[str, Listed] | None = None
        self._pending: dict[bytes, str] = {}

    def client_line(self, line: bytes) -> Refusal | None:
        """None: forward ``line``; a ``Refusal``: answer it instead (never forwarded)."""
        if b'"tools/call"' not in line and not (b'"tools/list"' in line or b'"initialize"' in line):
            return None
        message = _object(line)
        if message is None or "id" not in message:
            return None
        method = message.get("method")
        if method in ("tools/list", "initialize"):
            if len(self._pending) < MAX_PENDING:
                self._pending[_key(message["id"])] = method
            return None
        if method != "tools/call":
            return None
        params = message.get("params")
        name = params.get("name") if type(params) is dict else None
        if type(name) is not str:
            return None
        reason = self.reason(name)
        if reason is None:
            return None
        error = {
            "code": REFUSED,
            "message": reason,
            "data": {"refusedBy": "mcpsniff guard", "tool": name},
        }
        reply = orjson.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}) + b"\n"
        return Refusal(reply, name, reason, message["id"])

    def server_line(self, line: bytes) -> None:
        """Learn the server's name and its tools from a reply the client asked for."""
        if not self._pending or b'"result"' not in line:
            return
        message = _object(line)
        if message is None or "id" not in message:
            return
        method = self._pending.pop(_key(message["id"]), None)
        result = message.get("result")
        if method is None or type(result) is not dict:
            return
        if method == "initialize":
            info = result.get("serverInfo")
            if type(info) is dict and type(info.get("name")) is str:
                self.server_name = info["name"]
        elif type(result.get("nextCursor")) is not str:
            self.listed = {
                d.key: Listed(d.kind, d.name, d.fingerprint, d.body)
                for d in definitions("tools/list", result)
            }

    @property
    def identity(self) -> str:
        """The server as the lock file names it."""
        if self.server_name:
            return f"{self.policy.label} [{self.server_name}]"
        return self.policy.label

    def reason(self, tool: str) -> str | None:
        """Why a call to ``tool`` is refused, or None."""
        for pattern in self.policy.forbid_tools:
            if fnmatch.fnmatchcase(tool, pattern):
                return f"mcpsniff guard refused {tool!r}: forbidden by --forbid-tool {pattern!r}"
        lock = self.policy.pins
        if lock is None:
            return None
        pinned = lock.servers.get(self.identity)
        if pinned is None:
            return f"mcpsniff guard refused {tool!r}: server {self.identity!r} is not pinned"
        key = f"tool:{tool}"
        if key not in pinned:
            return f"mcpsniff guard refused {tool!r}: the tool is not pinned"
        if self.listed is None or key not in self.listed:
            return (
                f"mcpsniff guard refused {tool!r}: its definition was not listed in this "
                "session, so it cannot be checked against the pin"
            )
        changes = diff_offers({key: pinned[key]}, {key: self.listed[key]})
        if changes:
            return (
                f"mcpsniff guard refused {tool!r}: its definition drifted from the pin "
                f"({changes[0].describe()[:300]})"
            )
        return None


def _object(line: bytes) -> dict[str, Any] | None:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return value if type(value) is dict else None


def _key(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:
        return b"?"
