"""Writing a HAR file from a trace, entry by entry (memory: the open exchanges only)."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from mcpsniff.export.har import HarBuilder, har_document_head
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.redact_trace import redact_record


class HarStdioOnly(Exception):
    """The trace holds stdio sessions only: HAR describes HTTP exchanges, nothing else."""


@dataclass(slots=True)
class HarResult:
    """What was written."""

    entries: int
    stdio_sessions: int


def _dump(obj: Any) -> str:
    # ensure_ascii: whatever a peer put in a header stays a valid JSON escape.
    return json.dumps(obj, ensure_ascii=True)


def write_har(reader: TraceReader, output: Path | None, *, redact: bool = True) -> HarResult:
    """Write the HAR of ``reader``'s trace to ``output`` (stdout when None).

    With ``redact`` (the default), credentials in headers, URLs and bodies are
    replaced as ``mcpsniff redact`` replaces them, even in a trace recorded
    with ``--no-redact``: HAR files are made to be attached to tickets, and a
    HAR full of session tokens is a classic way for them to leak.

    Nothing is written, and :class:`HarStdioOnly` is raised, when the trace has
    stdio sessions and no HTTP exchange. A file is written next to ``output``
    and renamed into place when complete, so a failure leaves no half file.
    """
    meta = reader.header.get("meta")
    upstream = meta.get("upstream") if isinstance(meta, dict) else None
    builder = HarBuilder(upstream if isinstance(upstream, str) else None)
    stream: IO[str] | None = None
    temporary: Path | None = None
    written = 0

    def open_stream() -> IO[str]:
        nonlocal temporary, output
        if output is None:
            return sys.stdout
        # A symlink is written at its target (the link stays a link); a device
        # or FIFO (``-o /dev/stdout``, ``-o /dev/null``, a named pipe) is
        # written through: renaming a finished file onto it would replace the
        # node itself, and as root ``-o /dev/null`` would leave a regular file
        # at /dev/null for every process on the machine.
        output = output.resolve()
        with contextlib.suppress(OSError):
            if not stat.S_ISREG(os.stat(output).st_mode):
                return open(output, "w", encoding="utf-8")
        temporary = output.with_name(f".{output.name}.{os.getpid()}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        return os.fdopen(fd, "w", encoding="utf-8")

    def write_entries(entries: list[dict[str, Any]]) -> None:
        nonlocal stream, written
        for entry in entries:
            if stream is None:
                stream = open_stream()
                head = _dump(har_document_head("recorded by mcpsniff"))
                stream.write('{"log": ' + head[:-1] + ', "entries": [\n')
            stream.write((",\n" if written else "") + _dump(entry))
            written += 1

    try:
        for record in reader.records():
            builder.feed(redact_record(record)[0] if redact else record)
            write_entries(builder.take())
        write_entries(builder.finish())
        stdio = len(builder.stdio_sessions - builder.http_sessions)
        if stream is None:
            if stdio:
                raise HarStdioOnly(
                    f"{reader.path} holds {stdio} stdio session(s) and no HTTP exchange: HAR "
                    "describes HTTP requests and responses only (try mcpsniff show or "
                    "mcpsniff export otlp)"
                )
            stream = open_stream()
            head = _dump(har_document_head("recorded by mcpsniff"))
            stream.write('{"log": ' + head[:-1] + ', "entries": [\n')
        stream.write("\n]}}\n")
        stream.flush()
        if temporary is not None and output is not None:
            stream.close()
            os.replace(temporary, output)
            temporary = None
        elif output is not None:
            stream.close()  # a device or FIFO: its reader sees the end
        return HarResult(written, stdio)
    finally:
        if temporary is not None:
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
            with contextlib.suppress(OSError):
                temporary.unlink()
