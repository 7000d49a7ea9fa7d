"""Tasks handed out to forked worker processes, one at a time, results back as they finish.

``check`` over several traces forks its workers from the process that has
already imported everything a check needs, so a worker starts at once and
shares those pages with it. The parent hands each worker the next task
(a number) on the worker's own pipe when the worker reports the last one
done on its own result pipe: a slow task never holds up the others, and the
tasks go out in the order given (``many.handout_order``: largest first).

This is all ``check`` needs of a process pool, and all it pays for: no
``multiprocessing`` or ``concurrent.futures`` import (together about 60
million instructions, paid before the first fork, by the one process every
other waits for: docs/performance.md, "Start-up"), no manager thread, no
pickling. A worker that dies (killed, out of memory) closes its result pipe:
its task is reported as died, and a new worker takes its place for the rest.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

#: A task's result: any JSON value (``None`` is kept for "the worker died").
Result = Any
#: Longest result line a worker sends (a verdict is a few hundred bytes).
MAX_RESULT = 1 << 20
_INDEX_BYTES = 4


@dataclass
class _Worker:
    pid: int
    task_fd: int
    result_fd: int
    #: The task it is working on (None: idle, or told to stop).
    task: int | None = None
    buffered: bytearray = field(default_factory=bytearray)


def can_fork() -> bool:
    """Whether this system can fork workers (not Windows)."""
    return hasattr(os, "fork")


def run_forked(
    tasks: Sequence[int], workers: int, work: Callable[[int], Result]
) -> Iterator[tuple[int, Result]]:
    """``(task, work(task))`` for each task, as workers finish them; ``(task, None)``: it died.

    ``work`` runs in forked workers (at most ``workers``, taking ``tasks`` in
    order); its result must be JSON (orjson). A worker that fails, is killed
    or sends more than ``MAX_RESULT`` bytes leaves its task with ``None``,
    and a new worker is forked for the tasks left (each death ends a task,
    so there are at most as many forks as tasks).
    """
    queue = list(reversed(tasks))
    # What this process holds now (mcpsniff's modules, mostly) is moved out of
    # the cyclic collector's reach before the fork: a worker's collections then
    # do not write to (and so copy) the pages it shares with this process.
    gc.freeze()
    running: dict[int, _Worker] = {}
    try:
        for _ in range(min(workers, len(tasks))):
            worker = _fork(work, running)
            running[worker.result_fd] = worker
            _hand_out(worker, queue)
        yield from _collect(running, queue, work)
    finally:
        for worker in running.values():
            # Left early (the reader of the report went away): stop them.
            _kill(worker)
        for worker in list(running.values()):
            _reap(worker, running)


def _fork(work: Callable[[int], Result], running: dict[int, _Worker]) -> _Worker:
    task_read, task_write = os.pipe()
    result_read, result_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker
        code = 70
        try:
            # Only its own two ends: another worker's, held here, would keep
            # that worker's pipes from closing when it exits.
            for other in running.values():
                os.close(other.task_fd)
                os.close(other.result_fd)
            os.close(task_write)
            os.close(result_read)
            _serve(task_read, result_write, work)
            code = 0
        finally:
            os._exit(code)  # never back into the parent's code, nor its exit handlers
    os.close(task_read)
    os.close(result_write)
    return _Worker(pid, task_write, result_read)


def _serve(task_fd: int, result_fd: int, work: Callable[[int], Result]) -> None:
    """In a worker: do each task the parent sends until it closes the pipe."""
    while True:
        data = _read_exactly(task_fd, _INDEX_BYTES)
        if data is None:
            return
        task = int.from_bytes(data, "little")
        line = orjson.dumps([task, work(task)]) + b"\n"
        view = memoryview(line)
        while view:
            view = view[os.write(result_fd, view) :]


def _read_exactly(fd: int, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _hand_out(worker: _Worker, queue: list[int]) -> None:
    """The next task to ``worker``, or, when none is left, the end of its pipe."""
    if queue and worker.task_fd >= 0:
        worker.task = queue.pop()
        try:
            os.write(worker.task_fd, worker.task.to_bytes(_INDEX_BYTES, "little"))
            return
        except BrokenPipeError:  # it died: its result pipe tells
            return
    worker.task = None
    if worker.task_fd >= 0:
        os.close(worker.task_fd)
        worker.task_fd = -1


def _collect(
    running: dict[int, _Worker], queue: list[int], work: Callable[[int], Result]
) -> Iterator[tuple[int, Result]]:
    import select

    # poll, not select: a descriptor numbered past FD_SETSIZE (1024) is fine.
    poller = select.poll()
    watched: set[int] = set()
    while running:
        for fd in running.keys() - watched:
            poller.register(fd, select.POLLIN)
            watched.add(fd)
        for fd, _ in poller.poll():
            worker = running.get(fd)
            if worker is None:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk or len(worker.buffered) + len(chunk) > MAX_RESULT:
                # It exited (or talks nonsense): its task has no result.
                task = worker.task
                poller.unregister(fd)  # before its number is closed and reused
                watched.discard(fd)
                _kill(worker)
                _reap(worker, running)
                if queue:
                    replacement = _fork(work, running)
                    running[replacement.result_fd] = replacement
                    _hand_out(replacement, queue)
                if task is not None:
                    yield task, None
                continue
            worker.buffered += chunk
            while (end := worker.buffered.find(b"\n")) >= 0:
                line = bytes(worker.buffered[:end])
                del worker.buffered[: end + 1]
                task, result = orjson.loads(line)
                # The next task first: the worker goes on while the caller copies.
                _hand_out(worker, queue)
                yield task, result


def _kill(worker: _Worker) -> None:
    with contextlib.suppress(ProcessLookupError):  # reaped already
        os.kill(worker.pid, signal.SIGKILL)


def _reap(worker: _Worker, running: dict[int, _Worker]) -> None:
    """Close a worker's pipes and wait for it (a worker told to stop exits by itself)."""
    running.pop(worker.result_fd, None)
    if worker.task_fd >= 0:
        os.close(worker.task_fd)
        worker.task_fd = -1
    os.close(worker.result_fd)
    os.waitpid(worker.pid, 0)


__all__ = ["MAX_RESULT", "can_fork", "run_forked"]
