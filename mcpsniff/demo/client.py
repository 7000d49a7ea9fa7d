"""A small MCP client on stdio: the near end of ``mcpsniff demo``.

Run it with ``python -m mcpsniff.demo.client``. Unlike an ordinary client it
does not spawn its server: it writes requests to its *own* stdout and reads
responses from its *own* stdin, because ``mcpsniff demo`` wires those to the
server's stdin and stdout and records everything in between.

The client walks through one scripted session (handshake, tools, progress,
resources, prompts, logging, ping), checks every answer, prints a one-line
summary to stderr and exits 0, closing stdout (which, relayed, tells the
server to shut down). On an error response, a wrong answer or a timeout it
exits 1 with the reason on stderr.

It is deliberately tolerant where real clients often are, so that the demo
runs to the end against a buggy server and mcpsniff gets to report the bug:
lines that are not JSON are skipped, and response ids are matched by their
text (``"1"`` answers ``1``). ``--skip-initialized`` reproduces a classic
client bug: never sending ``notifications/initialized``.
"""

from __future__ import annotations

import argparse
import contextlib
import queue
import sys
import threading
import time
from dataclasses import dataclass
from typing import IO, Any

from mcpsniff import __version__
from mcpsniff.demo import wire

#: The version the client asks for, and every version it can work with.
REQUESTED_VERSION = "2025-11-25"
SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

LOG_PREFIX = "demo client"
DEFAULT_TIMEOUT = 10.0
READ_CHUNK = 65536

Message = dict[str, Any]


class DemoClientError(Exception):
    """The session cannot go on: an error response, a wrong answer, EOF or a timeout."""


@dataclass(slots=True)
class ClientOptions:
    """Behaviour switches; the defaults give a conforming client."""

    skip_initialized: bool = False
    timeout: float = DEFAULT_TIMEOUT


class Connection:
    """One JSON-RPC connection over a pair of byte streams, driven synchronously.

    A reader thread turns ``inp`` into a queue of lines, so that waiting for
    a response can time out (a blocking ``readline`` cannot). ``inp`` should
    be unbuffered (``buffering=0``): each ``read`` returns what is
    available instead of waiting for a full chunk.

    End the input by closing its *write* end, never by closing ``inp``
    under the reader: call :meth:`join` first, and close ``inp`` after.
    """

    def __init__(self, out: IO[bytes], inp: IO[bytes], timeout: float = DEFAULT_TIMEOUT) -> None:
        self.out = out
        self.inp = inp
        self.timeout = timeout
        self.answered = 0
        self.notifications: list[Message] = []
        self.skipped_lines = 0
        self._next_id = 1
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._warned_id_type = False
        self._reader: threading.Thread | None = None

    def start(self) -> None:
        """Start reading ``inp`` in the background."""
        self._reader = threading.Thread(target=self._read, name="demo-client-reader", daemon=True)
        self._reader.start()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the reader to reach EOF and stop; True once it has stopped.

        Only then is it safe to close ``inp``. Closing it under a running
        reader races with the ``read`` it is about to make: the thread may
        already hold the descriptor's number, the close frees that number,
        the next ``open``/``pipe``/``socket`` in the process reuses it, and the
        reader then reads, and swallows, bytes meant for someone else.
        """
        if self._reader is not None:
            self._reader.join(timeout)
            return not self._reader.is_alive()
        return True

    def _read(self) -> None:
        # Chunks, split here, rather than iterating a buffered reader: a
        # daemon thread blocked inside BufferedReader holds its lock, and the
        # interpreter then aborts at exit trying to close stdin.
        buffer = bytearray()
        try:
            while chunk := self.inp.read(READ_CHUNK):
                buffer += chunk
                while (nl := buffer.find(b"\n")) >= 0:
                    self._lines.put(bytes(buffer[: nl + 1]))
                    del buffer[: nl + 1]
            if buffer:
                self._lines.put(bytes(buffer))
        except (OSError, ValueError):
            # The stream broke, or was closed under us: treat it as EOF. (Only
            # a safety net: see `join` for why inp must not be closed early.)
            pass
        finally:
            self._lines.put(None)  # EOF ends every wait at once

    def notify(self, method: str, params: Message | None = None) -> None:
        """Send a notification."""
        message: Message = {"jsonrpc": wire.JSONRPC, "method": method}
        if params is not None:
            message["params"] = params
        wire.send(self.out, message)

    def request(self, method: str, params: Message | None = None) -> Message:
        """Send a request and wait for its result; raise ``DemoClientError`` otherwise."""
        request_id = self._next_id
        self._next_id += 1
        message: Message = {"jsonrpc": wire.JSONRPC, "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        wire.send(self.out, message)
        response = self._wait_for(request_id, method)
        if "error" in response:
            error = response["error"]
            detail = (
                f"{error.get('code')} {error.get('message')}" if isinstance(error, dict) else error
            )
            raise DemoClientError(f"{method} failed: {detail}")
        result = response.get("result")
        if not isinstance(result, dict):
            raise DemoClientError(f"{method} returned a result that is not an object: {result!r}")
        self.answered += 1
        return result

    def _wait_for(self, request_id: int, method: str) -> Message:
        deadline = time.monotonic() + self.timeout
        while True:
            remaining = deadline - time.monotonic()
            try:
                line = self._lines.get(timeout=max(remaining, 0.0))
            except queue.Empty:
                raise DemoClientError(
                    f"timed out after {self.timeout:g} s waiting for the response to {method} "
                    f"(id {request_id})"
                ) from None
            if line is None:
                self._lines.put(None)  # keep EOF visible to any later wait
                raise DemoClientError(
                    f"the server closed the connection before answering {method} (id {request_id})"
                )
            for message in self._messages(line):
                if self._is_response_to(message, request_id):
                    return message

    def _messages(self, line: bytes) -> list[Message]:
        """The messages a line carries; anything unusable is noted and skipped."""
        if not line.strip():
            return []
        value = wire.decode(line)
        if value is wire.NOT_JSON:
            # A log line on the server's stdout: tolerate it so the session
            # can go on (mcpsniff reports it as STDIO-STDOUT-CLEAN).
            self.skipped_lines += 1
            wire.log(LOG_PREFIX, f"skipping a line that is not JSON: {wire.excerpt(line)!r}")
            return []
        items = value if isinstance(value, list) else [value]
        messages = [item for item in items if isinstance(item, dict)]
        for message in messages:
            if "method" in message:
                self._incoming(message)
        return [m for m in messages if "method" not in m]

    def _incoming(self, message: Message) -> None:
        """A notification or a request from the server."""
        if "id" not in message:
            self.notifications.append(message)
            return
        # Servers may ping clients at any time; nothing else is declared.
        if message.get("method") == "ping":
            reply: Message = {"jsonrpc": wire.JSONRPC, "id": message["id"], "result": {}}
        else:
            error = wire.error_object(-32601, "Method not found")
            reply = {"jsonrpc": wire.JSONRPC, "id": message["id"], "error": error}
        wire.send(self.out, reply)

    def _is_response_to(self, message: Message, request_id: int) -> bool:
        if "id" not in message:
            return False
        answer_id = message["id"]
        if answer_id == request_id and not isinstance(answer_id, bool):
            return True
        if str(answer_id) == str(request_id):
            # Lenient on purpose: the id came back with the wrong JSON type.
            if not self._warned_id_type:
                self._warned_id_type = True
                wire.log(
                    LOG_PREFIX,
                    f"the server echoed id {request_id} as {answer_id!r}; matching it anyway",
                )
            return True
        wire.log(LOG_PREFIX, f"ignoring a response with unexpected id {answer_id!r}")
        return False


# --------------------------------------------------------------------------- the script


def _expect(condition: bool, what: str) -> None:
    if not condition:
        raise DemoClientError(f"unexpected answer: {what}")


def run_session(conn: Connection, options: ClientOptions) -> str:
    """Walk through the demo session; return the negotiated protocol version."""
    init = conn.request(
        "initialize",
        {
            "protocolVersion": REQUESTED_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "mcpsniff-demo-client", "version": __version__},
        },
    )
    version = init.get("protocolVersion")
    # lifecycle § Version Negotiation: disconnect from a version we cannot speak.
    _expect(version in SUPPORTED_VERSIONS, f"server chose protocol version {version!r}")
    if not options.skip_initialized:
        conn.notify("notifications/initialized")

    tools = {t.get("name") for t in conn.request("tools/list").get("tools", [])}
    _expect({"add", "echo", "slow_count"} <= tools, f"tools/list lacks demo tools: {tools}")

    added = conn.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    _expect(added.get("isError") is not True, f"add failed: {added.get('content')}")
    if str(version) >= "2025-06-18":  # structured output exists from 2025-06-18 on
        _expect(added.get("structuredContent") == {"sum": 5}, f"add(2, 3) gave {added}")

    _count_with_progress(conn, 3)

    resources = conn.request("resources/list").get("resources", [])
    _expect(bool(resources), "resources/list is empty")
    uri = resources[0]["uri"]
    contents = conn.request("resources/read", {"uri": uri}).get("contents", [])
    _expect(
        bool(contents) and contents[0].get("uri") == uri, f"resources/read {uri} gave {contents}"
    )

    prompts = conn.request("prompts/list").get("prompts", [])
    _expect(bool(prompts), "prompts/list is empty")
    prompt = prompts[0]
    arguments = {
        a["name"]: "mcpsniff" for a in prompt.get("arguments", []) if a.get("required") is True
    }
    got = conn.request("prompts/get", {"name": prompt["name"], "arguments": arguments})
    _expect(bool(got.get("messages")), f"prompts/get {prompt['name']} has no messages")

    _expect(conn.request("logging/setLevel", {"level": "info"}) == {}, "setLevel result not {}")
    logs_before = _count(conn, "notifications/message")
    echoed = conn.request("tools/call", {"name": "echo", "arguments": {"text": "hello"}})
    _expect(echoed.get("content") == [{"type": "text", "text": "hello"}], f"echo gave {echoed}")
    _expect(_count(conn, "notifications/message") > logs_before, "no log message at level info")

    _expect(conn.request("ping") == {}, "ping result is not {}")
    return str(version)


def _count_with_progress(conn: Connection, n: int) -> None:
    token = f"count-{n}"
    before = len(conn.notifications)
    result = conn.request(
        "tools/call",
        {"name": "slow_count", "arguments": {"n": n}, "_meta": {"progressToken": token}},
    )
    _expect(result.get("isError") is not True, f"slow_count failed: {result.get('content')}")
    steps = [
        m.get("params", {})
        for m in conn.notifications[before:]
        if m.get("method") == "notifications/progress"
        and m.get("params", {}).get("progressToken") == token
    ]
    values = [s.get("progress") for s in steps]
    _expect(values == list(range(1, n + 1)), f"progress went {values}")
    _expect(all(s.get("total") == n for s in steps), "progress total is not n")


def _count(conn: Connection, method: str) -> int:
    return sum(1 for m in conn.notifications if m.get("method") == method)


# --------------------------------------------------------------------------- process


def parse_args(argv: list[str] | None) -> ClientOptions:
    """Turn command-line arguments into options."""
    parser = argparse.ArgumentParser(
        prog="python -m mcpsniff.demo.client",
        description="mcpsniff's demo MCP client: requests on stdout, responses on stdin.",
    )
    parser.add_argument(
        "--skip-initialized",
        action="store_true",
        help="never send notifications/initialized (a classic bug)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help=f"seconds to wait for each response (default {DEFAULT_TIMEOUT:g})",
    )
    args = parser.parse_args(argv)
    return ClientOptions(skip_initialized=args.skip_initialized, timeout=args.timeout)


def main(argv: list[str] | None = None) -> int:
    """Run the demo session over stdin/stdout; return the exit status."""
    options = parse_args(argv)
    # Unbuffered stdin: a read returns as soon as the relay delivers anything.
    stdin = open(sys.stdin.fileno(), "rb", buffering=0, closefd=False)  # noqa: SIM115
    conn = Connection(sys.stdout.buffer, stdin, options.timeout)
    conn.start()
    status = 0
    try:
        version = run_session(conn, options)
    except DemoClientError as exc:
        wire.log(LOG_PREFIX, f"error: {exc}")
        status = 1
    except BrokenPipeError:
        wire.log(LOG_PREFIX, "error: the server's stdin was closed")
        status = 1
    else:
        progress = _count(conn, "notifications/progress")
        logs = _count(conn, "notifications/message")
        wire.log(
            LOG_PREFIX,
            f"{conn.answered} requests answered, {len(conn.notifications)} notifications "
            f"({progress} progress, {logs} log), protocol {version}",
        )
    # Closing stdout is the stdio shutdown signal: the server sees EOF and exits.
    with contextlib.suppress(BrokenPipeError):
        sys.stdout.close()
    return status


if __name__ == "__main__":
    sys.exit(main())
