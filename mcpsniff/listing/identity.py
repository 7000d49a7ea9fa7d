"""Who a session was: the name a person tells it apart by, and how it went.

Five sessions of one server look identical by their key ("stdio"); what sets
them apart is the label given with ``--name``, the server's ``serverInfo``
(name, title, version), the client, when it started, how long it ran, how
much it carried, and how it ended (an exit code, a signal, a launch that never
started, still being recorded). ``SessionIdentity`` gathers those from the
records of a trace; ``title`` words them as one line for ``show``, ``check``,
``stats``, ``ls``, the UI and the report alike.

Every string here came from a trace and is hostile: it is kept bounded, and
the callers escape it for their medium (``terminal_safe``, ``textContent``).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any
from urllib.parse import urlsplit

#: Longest name, title or version kept from traffic.
TEXT_LIMIT = 120
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"


def short(value: Any, limit: int = TEXT_LIMIT) -> str | None:
    """A non-empty string from a trace, cut to ``limit`` characters; anything else is None."""
    if not isinstance(value, str) or not value:
        return None
    return value if len(value) <= limit else value[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class Origin:
    """What a trace header says about the sessions written after it."""

    #: The ``--name`` label (or, in traces older than the ``name`` field, a label
    #: that is not simply the command's file name).
    name: str | None = None
    #: Where the sessions came from when nothing better is known: the command's
    #: file name (stdio), the upstream's host (http), the recorder.
    fallback: str | None = None

    @classmethod
    def of(cls, header: dict[str, Any]) -> Origin:
        """The origin a header's ``meta`` gives."""
        meta = header.get("meta")
        meta = meta if isinstance(meta, dict) else {}
        name = short(meta.get("name"))
        label = short(meta.get("label"))
        command = meta.get("command")
        program = None
        if isinstance(command, list) and command and isinstance(command[0], str):
            program = short(PurePath(command[0]).name)
        if name is None and label is not None and label != program:
            # A stdio relay labels with --name or else the program's file name;
            # a label that differs from that file name was given by a person.
            name = label
        upstream = short(meta.get("upstream"), 1000)
        host = None
        if upstream is not None:
            try:
                host = short(urlsplit(upstream).netloc) or upstream
            except ValueError:
                host = short(upstream)
        # Not the "source" (the recorder, e.g. "mcpsniff http"): it names no server.
        fallback = program or label or host
        return cls(name, fallback)


@dataclass
class SessionIdentity:
    """One session's name, peers, times, counts and ending."""

    key: str
    origin: Origin = field(default_factory=Origin)
    transport: str | None = None
    server: str | None = None
    server_title: str | None = None
    server_version: str | None = None
    client: str | None = None
    client_version: str | None = None
    start: float | None = None
    last: float | None = None
    messages: int = 0
    findings: Counter[str] = field(default_factory=Counter)
    #: How it ended, in words ("exit 0", "killed by SIGKILL"); None while none is recorded.
    ending: str | None = None
    #: The launch failed: the server never started, so there is no session to speak of.
    failed: bool = False

    # ------------------------------------------------------------------ input

    def saw_time(self, t: float | None) -> None:
        """A record of this session at time ``t``."""
        if t is None:
            return
        if self.start is None or t < self.start:
            self.start = t
        if self.last is None or t > self.last:
            self.last = t

    def saw_event(self, name: str, data: dict[str, Any]) -> None:
        """A transport event of this session."""
        if name == "session-start":
            self.transport = short(data.get("transport"), 20) or self.transport
        elif name == "spawn-failed":
            self.failed = True
            error = short(data.get("error"))
            self.ending = f"failed to start: {error}" if error else "failed to start"
        elif name == "exit":
            status, returncode = data.get("status"), data.get("returncode")
            signal = short(data.get("signal"), 20)
            forwarded = data.get("forwarded_signals")
            if type(returncode) is int and returncode < 0:
                self.ending = f"killed by {signal or 'a signal'}"
            elif isinstance(forwarded, list) and forwarded and isinstance(forwarded[0], str):
                self.ending = f"exit {status} after {short(forwarded[0], 20)}"
            elif type(status) is int:
                self.ending = f"exit {status}"
            else:
                self.ending = "exited"
        elif name == "http-end" and data.get("outcome") == "proxy-stopped":
            self.ending = "proxy stopped"
        elif name == "session-end" and self.ending is None:
            self.ending = "ended"

    def saw_body(self, direction: str | None, body: Any) -> None:
        """A message body: ``initialize`` and ``server/discover`` name the peers."""
        if isinstance(body, list):
            for item in body[:64]:
                self.saw_body(direction, item)
            return
        if not isinstance(body, dict):
            return
        if direction == "s2c":
            # 2026-07-28's server/discover names the server in the result's _meta.
            info = _peer_info(body.get("result"), "serverInfo", SERVER_INFO_KEY)
            if info is not None:
                self.server = short(info.get("name"))
                self.server_title = short(info.get("title"))
                self.server_version = short(info.get("version"), 40)
        elif direction == "c2s":
            info = _peer_info(body.get("params"), "clientInfo", CLIENT_INFO_KEY)
            if info is not None:
                self.client = short(info.get("name"))
                self.client_version = short(info.get("version"), 40)

    @property
    def knows_peers(self) -> bool:
        """Both peers are named (no more bodies need reading)."""
        return self.server is not None and self.client is not None

    # ------------------------------------------------------------------ output

    @property
    def name(self) -> str:
        """The name a person knows the session by: ``--name``, else the server's own."""
        if self.origin.name is not None:
            return self.origin.name
        if self.server is not None:
            return self.server_title or self.server
        return self.origin.fallback or "?"

    @property
    def server_label(self) -> str | None:
        """The server as it names itself: ``name version``, with its title when it differs."""
        if self.server is None:
            return None
        text = self.server
        if self.server_title and self.server_title != self.server:
            text = f"{self.server_title} ({self.server})"
        return f"{text} {self.server_version}" if self.server_version else text

    @property
    def client_label(self) -> str | None:
        if self.client is None:
            return None
        return f"{self.client} {self.client_version}" if self.client_version else self.client

    @property
    def duration(self) -> float | None:
        if self.start is None or self.last is None:
            return None
        return max(0.0, self.last - self.start)

    def state(self, live: bool = False) -> str:
        """How the session ended, that it is still recorded (``live``), or that no end is known."""
        if self.ending is not None:
            return self.ending
        return "live" if live else "no end recorded"

    def title(self, live: bool = False, clock: bool = True, counts: bool = True) -> str:
        """The session as one line: name, server, client, start, duration, counts, ending.

        ``counts=False`` leaves out the messages and findings (``show`` prints them all,
        and a trace of frames alone has no message records to count).
        """
        server = self.server_label
        if self.origin.name is None and server is not None:
            parts = [server]  # the server names the session itself
        else:
            parts = [self.name]
            if server is not None:
                parts.append(f"server {server}")
        client = self.client_label
        if client is not None:
            parts.append(f"client {client}")
        if clock and self.start is not None:
            parts.append(time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.start)))
        if self.duration is not None:
            parts.append(duration_text(self.duration))
        if counts and not self.failed:
            parts.append(f"{self.messages:,} message{'s' if self.messages != 1 else ''}")
            found = ", ".join(
                f"{self.findings[s]} {s}{'s' if self.findings[s] != 1 and s != 'info' else ''}"
                for s in ("error", "warning", "info")
                if self.findings[s]
            )
            parts.append(found or "no findings")
        parts.append(self.state(live))
        return " · ".join(parts)

    def to_json(self, live: bool = False) -> dict[str, Any]:
        """The identity as plain values, for ``--format json`` and the web views."""
        return {
            "name": self.name,
            "label": self.origin.name,
            "server": self.server,
            "serverTitle": self.server_title,
            "serverVersion": self.server_version,
            "client": self.client,
            "clientVersion": self.client_version,
            "transport": self.transport,
            "start": self.start,
            "duration": self.duration,
            "messages": self.messages,
            "findings": {s: self.findings[s] for s in ("error", "warning", "info")},
            "ending": self.state(live),
            "failed": self.failed,
            "title": self.title(live),
        }


def _peer_info(holder: Any, key: str, meta_key: str) -> dict[str, Any] | None:
    """The Implementation a result or params names at ``key`` (else in ``_meta``), if named."""
    if not isinstance(holder, dict):
        return None
    info = holder.get(key)
    meta = holder.get("_meta")
    if not isinstance(info, dict) and isinstance(meta, dict):
        info = meta.get(meta_key)
    return info if isinstance(info, dict) and short(info.get("name")) else None


def duration_text(seconds: float, compact: bool = False) -> str:
    """A duration as a person reads it: ``850 ms``, ``3.0 s``, ``2m05s``, ``1h02m``.

    ``compact`` is for a narrow column: ``0.8s``, ``3.0s`` (no milliseconds, no space).
    """
    if seconds < 1 and not compact:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f}s" if compact else f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
