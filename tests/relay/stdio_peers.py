"""Small stdio children for the ``mcpsniff stdio`` tests, run as real processes.

``python stdio_peers.py MODE [ARGS...]``; every mode uses raw ``os.read`` and
``os.write`` so that no buffering layer changes chunking or bytes.

* ``echo [--stderr] [--exit N]``: copy stdin to stdout byte for byte (and to
  stderr too with ``--stderr``, like a server that logs what it receives);
  exit with status N at EOF.
* ``scripted OUT RECEIVED CHUNKS``: write the bytes of file OUT to stdout in
  chunks of the comma-separated sizes CHUNKS (cycled), while a thread copies
  stdin into file RECEIVED until EOF; exit 0 when both are done.
* ``eof``: a server that answers ``ping`` requests, ignores every other line,
  and at stdin EOF writes a last notification with no final newline.
* ``stderr-flood LINES``: write LINES log lines of 100 bytes to stderr, then
  ``ready`` on stdout, then wait for stdin EOF.
* ``exit N``: exit with status N at once (no reading).
* ``kill-self SIG``: print ``ready`` and kill itself with signal number SIG.
* ``env``: print the environment as JSON and ``sys.orig_argv[0]``.
* ``group DIR PIPES``: the process-group test. Spawns a grandchild that
  records (in DIR/grandchild-<NAME>) and otherwise *ignores* SIGINT, SIGTERM
  and SIGHUP, and writes its pid to DIR/grandchild-pid; records any of those
  signals it gets itself in DIR/child-<NAME>, then dies of it. With PIPES
  ``detach`` the grandchild holds none of the relay's pipes, with ``keep``
  it inherits its stdout and stderr.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def echo(args: list[str]) -> int:
    tee = "--stderr" in args
    status = int(args[args.index("--exit") + 1]) if "--exit" in args else 0
    while chunk := os.read(0, 1 << 16):
        write_all(1, chunk)
        if tee:
            write_all(2, chunk)
    return status


def scripted(args: list[str]) -> int:
    out_path, received_path, chunk_spec = args
    sizes = [max(1, int(n)) for n in chunk_spec.split(",")]
    received = bytearray()

    def drain() -> None:
        while chunk := os.read(0, 1 << 16):
            received.extend(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    data = Path(out_path).read_bytes()
    pos = 0
    i = 0
    while pos < len(data):
        size = sizes[i % len(sizes)]
        write_all(1, data[pos : pos + size])
        pos += size
        i += 1
    reader.join()
    Path(received_path).write_bytes(bytes(received))
    return 0


def eof_server() -> int:
    buffered = b""
    while chunk := os.read(0, 1 << 16):
        buffered += chunk
        *lines, buffered = buffered.split(b"\n")
        for line in lines:
            message = json.loads(line)
            if message.get("method") == "ping" and "id" in message:
                reply = {"jsonrpc": "2.0", "id": message["id"], "result": {}}
                write_all(1, json.dumps(reply).encode() + b"\n")
    # Written only after EOF, so only a relay that drains the child's stdout
    # after closing its stdin passes it on.
    last = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "bye"}}
    write_all(1, json.dumps(last).encode())
    return 0


def stderr_flood(args: list[str]) -> int:
    line = b"log line from the child, padded to one hundred bytes ".ljust(99, b".") + b"\n"
    lines = int(args[0])
    for start in range(0, lines, 1000):
        write_all(2, line * min(1000, lines - start))
    write_all(1, b"ready\n")
    while os.read(0, 1 << 16):
        pass
    return 0


def env_dump() -> int:
    report = {"env": dict(os.environ), "argv0": sys.orig_argv[0]}
    write_all(1, json.dumps(report).encode() + b"\n")
    return 0


GRANDCHILD = """
import os, signal, sys, time
folder = sys.argv[1]
def note(sig, frame):
    with open(os.path.join(folder, "grandchild-" + signal.Signals(sig).name), "w") as f:
        f.write(str(os.getpid()))
for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(sig, note)
with open(os.path.join(folder, "grandchild-pid.tmp"), "w") as f:
    f.write(str(os.getpid()))
os.rename(os.path.join(folder, "grandchild-pid.tmp"), os.path.join(folder, "grandchild-pid"))
while True:
    time.sleep(60)
"""


def group(args: list[str]) -> int:
    folder = Path(args[0])
    detach = args[1] == "detach"
    null = subprocess.DEVNULL if detach else None
    subprocess.Popen(
        [sys.executable, "-c", GRANDCHILD, str(folder)], stdin=null, stdout=null, stderr=null
    )

    def handler(sig: int, frame: object) -> None:
        (folder / f"child-{signal.Signals(sig).name}").write_text(str(os.getpid()))
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)

    for sig in SIGNALS:
        signal.signal(sig, handler)
    deadline = time.monotonic() + 60
    while not (folder / "grandchild-pid").exists():
        if time.monotonic() > deadline:
            return 1
        time.sleep(0.01)
    write_all(1, b"ready\n")
    while True:
        time.sleep(60)


def main(argv: list[str]) -> int:
    mode, args = argv[0], argv[1:]
    if mode == "echo":
        return echo(args)
    if mode == "scripted":
        return scripted(args)
    if mode == "eof":
        return eof_server()
    if mode == "stderr-flood":
        return stderr_flood(args)
    if mode == "exit":
        return int(args[0])
    if mode == "kill-self":
        write_all(1, b"ready\n")
        os.kill(os.getpid(), int(args[0]))
        time.sleep(60)
        return 1
    if mode == "env":
        return env_dump()
    if mode == "group":
        return group(args)
    raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
