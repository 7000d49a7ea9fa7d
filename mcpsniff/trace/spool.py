"""A trace given as a pipe (``show <(zcat t.jsonl.gz)``, ``/dev/stdin``), made readable twice.

``show`` and ``stats`` read a trace in more than one pass (the header, then an
index of findings, then the records). A pipe can be read once only: the
second pass found it empty, so ``show`` printed nothing and ``stats`` counted
0 messages, both with exit 0, a silent wrong answer. A trace that is not a
regular file is therefore first copied, whole, into a private temporary file.

The copy starts only once the first line has proved to be a trace header
within ``HEADER_LIMIT`` bytes, so ``/dev/zero`` or ``/dev/urandom`` given by
mistake is refused at once instead of filling the disk.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from mcpsniff.trace.codec import FORMAT_NAME, TraceError
from mcpsniff.trace.reader import HEADER_LIMIT


def is_stream(path: Path) -> bool:
    """Whether ``path`` exists and is a pipe, socket or device rather than a file."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


@contextlib.contextmanager
def rereadable(path: Path) -> Iterator[Path]:
    """``path`` itself when it is a file; else a private copy of the stream, removed after.

    Raises ``TraceError`` when the stream does not start with a trace header.
    """
    if not is_stream(path):
        yield path
        return
    try:
        source = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise TraceError(f"{path}: cannot open: {exc.strerror or exc}") from None
    with source:
        first = source.readline(HEADER_LIMIT)
        if not first.endswith(b"\n") or FORMAT_NAME.encode() not in first:
            raise TraceError(f"{path}: not an mcpsniff trace (no {FORMAT_NAME} header)")
        # Imported here: ``check`` asks ``is_stream`` of every trace, and these
        # two (with the compressors shutil loads) are a pipe's only.
        import shutil
        import tempfile

        # mkstemp: mode 0600, like every trace file (docs/architecture.md, invariant 5).
        fd, name = tempfile.mkstemp(prefix="mcpsniff-", suffix=".jsonl")
        copy = Path(name)
        try:
            with os.fdopen(fd, "wb") as target:
                target.write(first)
                shutil.copyfileobj(source, target, 1 << 20)
            yield copy
        finally:
            with contextlib.suppress(OSError):
                copy.unlink()
