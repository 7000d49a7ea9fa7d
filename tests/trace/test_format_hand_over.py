"""``TraceWriter.hand_over``: a relay lets go of the trace its forked analysis process writes.

An ``flock`` belongs to the open file description, which a fork shares: the
lock of a fork killed while it held it lasts as long as any process keeps
that description open. These tests fork real processes and take real locks.
"""

from __future__ import annotations

import errno
import fcntl
import os
import signal
from pathlib import Path

import pytest

from mcpsniff.core.model import EventRecord
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.writer import TraceWriter


def _event(seq: int) -> EventRecord:
    return EventRecord(seq, 1.0 + seq, "stdio", "note", {"n": seq})


def _locked_elsewhere(path: Path) -> bool:
    """Whether another open file description holds an ``flock`` on ``path``."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _fork(child: object) -> int:
    """Fork; the child runs ``child()`` and exits 0 (70 should it raise). Its wait status."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        status = 70
        try:
            child()  # type: ignore[operator]
            status = 0
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    return status


def test_the_lock_of_a_fork_killed_holding_it_goes_once_the_parent_hands_over(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path, meta={"source": "test"})

    def lock_and_die() -> None:
        fcntl.flock(writer._stream.fileno(), fcntl.LOCK_EX)
        os.kill(os.getpid(), signal.SIGKILL)

    status = _fork(lock_and_die)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    # The dead fork's lock lives on with the description the parent still has open...
    assert _locked_elsewhere(path)
    writer.hand_over()
    # ...and goes with it.
    assert not _locked_elsewhere(path)


def test_what_is_buffered_is_the_forks_to_write_and_written_once(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path, meta={"source": "test"})
    writer.write(_event(1))  # buffered in both processes after the fork

    def finish() -> None:
        writer.write(_event(2))
        writer.close()

    assert _fork(finish) == 0
    writer.hand_over()
    # Later writes here go nowhere: the file is the fork's.
    writer.write(_event(3))
    writer.flush()
    writer.close()
    with TraceReader(path) as reader:
        assert [r.seq for r in reader.records()] == [1, 2]
    assert writer.failed is not None and writer.failed.errno == errno.EBADF


def test_hand_over_closes_this_process_copy(tmp_path: Path) -> None:
    writer = TraceWriter.create(tmp_path / "t.jsonl", meta={"source": "test"})
    fd = writer._stream.fileno()
    writer.hand_over()
    with pytest.raises(OSError) as caught:
        os.fstat(fd)
    assert caught.value.errno == errno.EBADF
