"""``mcpsniff stdio`` whose analysis process is killed: at start, holding the trace's lock,
with the pipe to it full, and while the relay waits for it to finish the trace.

Whenever it dies, the relay must forward every byte, say once that it died,
exit when the client is done, and complete the trace (the salvage): frame
bytes plus the capture-gaps equal what was forwarded, and the session ends.
The moment that once hung the relay forever in CI is the second: the
analysis process killed between its ``flock`` of the trace and the unlock.
It is caught on purpose, not left to luck: the test watches ``/proc/locks``,
stops the process while it holds the lock, checks that it still does once
stopped, then kills it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from mcpsniff.core.model import C2S, S2C, Record
from tests.relay.stdio_support import (
    TIMEOUT,
    Relay,
    analysis_process_of,
    events,
    peer,
    read_trace,
    relay,
    stream,
    wait_until,
)

LOCKS = Path("/proc/locks")
#: A line big enough that writing its frame record keeps the trace locked a while.
BIG = b'{"jsonrpc":"2.0","id":"big","method":"ping","params":{"pad":"%s"}}\n' % (b"x" * (4 << 20))
#: Big lines sent, at most, before the analysis process is caught holding the lock.
ATTEMPTS = 60


def line(number: int) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % number


def flock_holders(path: Path) -> set[int]:
    """The processes ``/proc/locks`` says hold an ``flock`` on the file at ``path``.

    A lock lists the process that took it, even once that process is dead
    and the lock lives on with the open file description it belongs to.
    """
    info = os.stat(path)
    inode = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    holders = set()
    for entry in LOCKS.read_text().splitlines():
        fields = entry.split()
        # "1: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE 0 EOF"; a waiter has "->" after "1:".
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == inode:
            holders.add(int(fields[4]))
    return holders


def stop(pid: int) -> None:
    """SIGSTOP ``pid`` and wait until it has stopped (a signal is delivered asynchronously)."""
    os.kill(pid, signal.SIGSTOP)

    def stopped() -> bool:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state in ("T", "t")

    wait_until(stopped, f"process {pid} to stop")


def analysis_of(r: Relay) -> int:
    """The relay's analysis process, once it has one (it forks before spawning the server)."""
    found: list[int] = []

    def forked() -> bool:
        with contextlib.suppress(AssertionError, OSError):
            found.append(analysis_process_of(r.proc.pid))
        return bool(found)

    wait_until(forked, "the analysis process")
    return found[0]


def kill_at_start(r: Relay, trace: Path, sent: bytearray) -> None:
    """Before the first byte of traffic reaches it."""
    os.kill(analysis_of(r), signal.SIGKILL)


def kill_when_it_holds_the_lock(
    analysis: int, trace: Path, send: Callable[[], None], size: int
) -> int:
    """Send big messages (``send``: one, of ``size`` bytes) until ``analysis`` is caught
    holding the trace's lock, then stop it there and kill it; the number of messages sent.

    Writing a big message's records keeps the lock a while. A sender thread
    each, so that a full pipe cannot block the watch.
    """
    start = trace.stat().st_size
    for count in range(1, ATTEMPTS + 1):
        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        # Watched until it has written at least this message's bytes: it runs
        # behind the traffic (at idle priority; on a busy machine, far behind).
        written = start + count * size
        deadline = time.monotonic() + TIMEOUT
        while sender.is_alive() or trace.stat().st_size < written:
            if analysis in flock_holders(trace):
                stop(analysis)
                # Stopped while it holds the lock: it dies holding it.
                if analysis in flock_holders(trace):
                    os.kill(analysis, signal.SIGKILL)
                    sender.join(TIMEOUT)
                    return count
                os.kill(analysis, signal.SIGCONT)
            assert time.monotonic() < deadline, "the analysis process recorded nothing"
            # A pause, so as not to keep an idle-priority process off the CPU.
            time.sleep(0.0005)
        sender.join(TIMEOUT)
    raise AssertionError(f"the analysis process never held the trace's lock in {ATTEMPTS} messages")


def kill_holding_the_trace_lock(r: Relay, trace: Path, sent: bytearray) -> None:
    """Between its ``flock`` of the trace and the unlock (the race CI once lost)."""
    count = kill_when_it_holds_the_lock(analysis_of(r), trace, lambda: r.send(BIG), len(BIG))
    sent += BIG * count


def kill_with_the_pipe_full(r: Relay, trace: Path, sent: bytearray) -> None:
    """While the relay has more for it than its pipe holds (a backlog waits to be written)."""
    analysis = analysis_of(r)
    stop(analysis)
    # Both directions of three 4 MiB lines: far more than the 1 MiB pipe.
    for _ in range(3):
        writer = threading.Thread(target=r.send, args=(BIG,), daemon=True)
        writer.start()
        sent += BIG
        r.wait_stdout(bytes(sent))
        writer.join(TIMEOUT)
    os.kill(analysis, signal.SIGKILL)


def kill_while_it_finishes(r: Relay, trace: Path, sent: bytearray) -> None:
    """After the client is done: the relay is ending the capture and waits for the trace."""
    analysis = analysis_of(r)
    stop(analysis)
    writer = threading.Thread(target=r.send, args=(BIG,), daemon=True)
    writer.start()
    sent += BIG
    r.wait_stdout(bytes(sent))
    writer.join(TIMEOUT)
    r.close_stdin()
    # The server exits at EOF, and the relay then waits for the analysis
    # process (stopped) to finish the trace. Not timed: a kill a little
    # earlier or later is a death at another moment, with the same duties.
    wait_until(lambda: server_gone(r), "the server to exit")
    os.kill(analysis, signal.SIGKILL)


def server_gone(r: Relay) -> bool:
    """Whether the relay has no child left but its (stopped) analysis process."""
    children = Path(f"/proc/{r.proc.pid}/task/{r.proc.pid}/children").read_text().split()
    return len(children) <= 1


MOMENTS: dict[str, Callable[[Relay, Path, bytearray], None]] = {
    "at start": kill_at_start,
    "holding the trace lock": kill_holding_the_trace_lock,
    "with the pipe full": kill_with_the_pipe_full,
    "while it finishes": kill_while_it_finishes,
}


def gaps(records: list[Record], direction: str) -> int:
    """Bytes of ``direction`` the trace's capture-gaps account for."""
    return sum(
        e.data["lost_bytes"]
        for e in events(records, "capture-gap")
        if e.data.get("direction") == direction
    )


@pytest.mark.skipif(not LOCKS.exists(), reason="needs Linux's /proc/locks")
@pytest.mark.parametrize("moment", list(MOMENTS))
def test_a_killed_analysis_process_never_keeps_the_relay_from_exiting(
    tmp_path: Path, moment: str
) -> None:
    trace = tmp_path / "t.jsonl"
    sent = bytearray()
    with relay(peer("echo"), "--trace", str(trace)) as r:
        if moment != "at start":
            r.send(line(0))
            sent += line(0)
            r.wait_stdout(bytes(sent))
        MOMENTS[moment](r, trace, sent)
        if moment != "while it finishes":
            # Forwarding goes on after the death.
            for number in range(1, 20):
                r.send(line(number))
                sent += line(number)
            r.wait_stdout(bytes(sent))
        # The relay exits once the client is done, whenever the analysis died.
        assert r.finish() == 0
    assert r.stdout.data == bytes(sent)
    # No lock outlives the analysis process (the relay kept none of the trace open).
    assert not flock_holders(trace)
    deaths = [
        text
        for text in r.stderr_lines()
        if "analysis process is gone" in text or "analysis process was killed by SIGKILL" in text
    ]
    assert len(deaths) == 1, r.stderr_lines()
    # Completed by the salvage: every forwarded byte is a frame or in a gap.
    records = read_trace(trace)
    for direction in (C2S, S2C):
        assert len(stream(records, direction)) + gaps(records, direction) == len(sent)
    assert stream(records, C2S) == bytes(sent)[: len(stream(records, C2S))]
    (end,) = events(records, "session-end")
    assert end.data["salvaged"] is True and "SIGKILL" in end.data["reason"]
