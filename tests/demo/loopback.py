"""Run the demo client's script against the demo server in-process.

Both peers are deterministic, so the bytes they exchange here are exactly the
bytes they exchange as real processes. The runner tests compare the recorded
trace with this reference to prove the relay forwards byte for byte.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from mcpsniff.demo import wire
from mcpsniff.demo.client import ClientOptions, Connection, run_session
from mcpsniff.demo.server import DemoServer, ServerOptions


@dataclass
class _ServerInput:
    """A writable stream for the client: collects bytes, hands each line to the server."""

    server: DemoServer | None = None
    written: bytearray = field(default_factory=bytearray)
    _pending: bytearray = field(default_factory=bytearray)

    def write(self, data: bytes) -> int:
        self.written += data
        self._pending += data
        while (nl := self._pending.find(b"\n")) >= 0:
            line = bytes(self._pending[: nl + 1])
            del self._pending[: nl + 1]
            assert self.server is not None
            self.server.handle_line(line)
        return len(data)

    def flush(self) -> None:
        pass


@dataclass
class Exchange:
    """The two byte streams of one session and the client's verdict."""

    c2s: bytes
    s2c: bytes
    version: str


def loopback_session(
    server_options: ServerOptions | None = None, client_options: ClientOptions | None = None
) -> Exchange:
    """Run one client session against an in-process server; return the bytes on the wire."""
    read_fd, write_fd = os.pipe()
    to_client = open(write_fd, "wb", buffering=0)  # noqa: SIM115 - closed below
    from_server = open(read_fd, "rb", buffering=0)  # noqa: SIM115 - closed below
    s2c = bytearray()

    def emit(message: object) -> None:
        line = wire.encode(message)
        s2c.extend(line)
        to_client.write(line)

    options = server_options or ServerOptions()
    if options.banner:
        emit_raw = b"Loading model...\n"
        s2c.extend(emit_raw)
        to_client.write(emit_raw)
    sink = _ServerInput()
    sink.server = DemoServer(emit, options, sleep=lambda _seconds: None)
    conn = Connection(sink, from_server, timeout=5.0)  # type: ignore[arg-type]
    conn.start()
    try:
        version = run_session(conn, client_options or ClientOptions())
    finally:
        to_client.close()  # EOF stops the client's reader thread
        # Close the read end only once the reader has stopped. Closed under
        # it, its descriptor number is reused by the caller's next pipe (the
        # stdin of the client process the tests start next), and the stale
        # reader swallows the input meant for that process.
        if not conn.join(timeout=30.0):
            raise RuntimeError("the loopback client's reader did not stop at EOF")
        from_server.close()
    return Exchange(bytes(sink.written), bytes(s2c), version)
