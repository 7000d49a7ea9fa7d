"""``check`` over several traces: one worker process a trace, reports in argument order.

Each trace is checked by ``run_check``, exactly as alone; only where its report
goes differs. With one job the reports go straight to the streams; with more,
each worker writes its trace's report (standard output) and warnings (standard
error) to two files, and they are copied to the streams in the order the traces
were named, each as soon as it and every trace before it are done. Either way
the bytes are the same: the output does not depend on ``--jobs``. The workers
take the traces largest first (``handout_order``), so that no large trace is
left to run alone at the end.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

from mcpsniff.check.run import CheckError, CheckOptions, run_check
from mcpsniff.core.escape import terminal_safe

#: How much of a worker's report file is copied to the stream at a time.
_COPY_CHUNK = 1 << 16


@dataclass(frozen=True)
class TraceVerdict:
    """One trace's outcome: its failing findings, or why it could not be read."""

    trace: Path
    failing: int = 0
    #: The one-line reason the trace could not be checked (exit status 2).
    error: str | None = None


def default_jobs() -> int:
    """The number of cores this process may run on (``check --jobs``'s default)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def check_traces(
    options: Sequence[CheckOptions],
    jobs: int,
    out: TextIO,
    err: TextIO,
) -> list[TraceVerdict]:
    """Check every trace of ``options`` with up to ``jobs`` processes; report to ``out``/``err``.

    The reports come in the order of ``options``, byte for byte what one
    process writes (``check_to_streams``), whatever ``jobs`` is.
    """
    if jobs <= 1 or len(options) <= 1:
        return [check_to_streams(one, out, err) for one in options]
    return list(_check_in_workers(options, jobs, out, err))


def check_to_streams(options: CheckOptions, out: TextIO, err: TextIO) -> TraceVerdict:
    """Check one trace of several: its header line (text), report, warnings, or its error."""
    if options.fmt == "text":
        out.write(f"trace {terminal_safe(str(options.trace))}\n")

    def say(line: str) -> None:
        out.write(line + "\n")

    def warn(text: str) -> None:
        err.write(f"mcpsniff check: warning: {text}\n")

    try:
        failing = run_check(options, out, say, warn)
    except CheckError as exc:
        err.write(f"mcpsniff check: {terminal_safe(str(exc))}\n")
        return TraceVerdict(options.trace, error=str(exc))
    return TraceVerdict(options.trace, failing)


def _check_in_workers(
    options: Sequence[CheckOptions], jobs: int, out: TextIO, err: TextIO
) -> Iterator[TraceVerdict]:
    # Imported here: one process checking one trace needs neither
    # (docs/performance.md, "Start-up").
    import tempfile

    from mcpsniff.check.forked import can_fork, run_forked

    if not can_fork():
        yield from (check_to_streams(one, out, err) for one in options)
        return
    encoding = getattr(out, "encoding", None) or "utf-8"
    with tempfile.TemporaryDirectory(prefix="mcpsniff-check-") as folder:

        def files(number: int) -> tuple[Path, Path]:
            return Path(folder, f"{number}.out"), Path(folder, f"{number}.err")

        def work(number: int) -> tuple[int, str | None]:
            verdict = _check_to_files(options[number], *files(number), encoding)
            return verdict.failing, _portable(verdict.error)

        done: dict[int, tuple[int, str | None] | None] = {}
        following = 0  # the first trace not reported yet
        for number, result in run_forked(handout_order(options), jobs, work):
            done[number] = None if result is None else (result[0], _unportable(result[1]))
            # Each trace as soon as it and every trace before it are done.
            while following in done:
                yield _report(options[following], done.pop(following), files(following), out, err)
                following += 1


def _portable(error: str | None) -> str | None:
    """``error`` as text JSON can carry: a path that is no UTF-8 holds lone surrogates.

    Each character's UTF-8 bytes (lone surrogates as ``surrogatepass`` writes
    them) as one Latin-1 character each, which ``_unportable`` reverses exactly.
    """
    return None if error is None else error.encode("utf-8", "surrogatepass").decode("latin-1")


def _unportable(error: str | None) -> str | None:
    """The error text ``_portable`` carried."""
    return None if error is None else error.encode("latin-1").decode("utf-8", "surrogatepass")


def _report(
    one: CheckOptions,
    result: tuple[int, str | None] | None,
    files: tuple[Path, Path],
    out: TextIO,
    err: TextIO,
) -> TraceVerdict:
    """A worker's trace, reported: its files copied to the streams, or that its worker died."""
    if result is None:
        # Its worker died (killed, out of memory): this trace has no verdict.
        reason = f"{one.trace}: the process checking it died"
        err.write(f"mcpsniff check: {terminal_safe(reason)}\n")
        return TraceVerdict(one.trace, error=reason)
    encoding = getattr(out, "encoding", None) or "utf-8"
    for path, stream in zip(files, (out, err), strict=True):
        _copy(path, stream, encoding)
        path.unlink()
    return TraceVerdict(one.trace, result[0], result[1])


def handout_order(options: Sequence[CheckOptions]) -> list[int]:
    """The order the traces go to the workers: the largest first, ties in argument order.

    The last trace handed out decides when the run ends: a large one started
    last would keep one core busy while the others idle. A trace that cannot
    be sized (missing, a pipe) counts as empty: its error or its size shows
    once a worker reads it.
    """
    sizes = []
    for one in options:
        try:
            status = one.trace.stat()
        except OSError:
            sizes.append(0)
            continue
        sizes.append(status.st_size if stat.S_ISREG(status.st_mode) else 0)
    return sorted(range(len(options)), key=lambda number: -sizes[number])


def _check_to_files(
    options: CheckOptions, out_path: Path, err_path: Path, encoding: str
) -> TraceVerdict:
    """In a worker: ``check_to_streams`` into two files (text as the parent's stdout encodes it)."""
    # backslashreplace: what ``tolerate_surrogates`` makes of a lone surrogate on stdout.
    with (
        open(out_path, "w", encoding=encoding, errors="backslashreplace") as out,
        open(err_path, "w", encoding=encoding, errors="backslashreplace") as err,
    ):
        return check_to_streams(options, out, err)


def _copy(path: Path, stream: TextIO, encoding: str) -> None:
    import shutil

    with open(path, encoding=encoding, errors="surrogateescape") as source:
        shutil.copyfileobj(source, stream, _COPY_CHUNK)
    stream.flush()


def labelled(options: CheckOptions, several: bool) -> CheckOptions:
    """``options`` with the trace named in each JSON finding when several traces are checked."""
    return replace(options, trace_label=str(options.trace)) if several else options


__all__ = [
    "TraceVerdict",
    "check_to_streams",
    "check_traces",
    "default_jobs",
    "handout_order",
    "labelled",
]
