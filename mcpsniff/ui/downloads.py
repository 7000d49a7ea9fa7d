"""One session of a trace as a file to download: a trace slice, a HAR, an HTML report.

The slice is the trace's header and the session's own records, byte for byte
as recorded (``check``, ``show``, ``replay`` read it as any trace); the HAR and
the report are made from the slice by the same code as ``mcpsniff export har``
and ``mcpsniff report``. A HAR is redacted, as ``export har`` redacts.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import orjson

from mcpsniff.export.har_file import HarStdioOnly, write_har
from mcpsniff.trace.codec import TraceError
from mcpsniff.trace.reader import TraceReader
from mcpsniff.ui.report import write_report

#: The formats a session downloads as: file extension and media type.
FORMATS = {
    "jsonl": ("jsonl", "application/x-ndjson"),
    "har": ("har", "application/json"),
    "html": ("html", "text/html"),
}
#: Longest line kept whole when deciding which session it belongs to.
_HEAD = 300
_SESSION = re.compile(rb'"session":("(?:[^"\\]|\\.)*")')


class DownloadError(Exception):
    """The session cannot be had in that format; the message says why, for the page."""


@dataclass(frozen=True, slots=True)
class Download:
    """A file for the browser to save."""

    body: bytes
    media_type: str
    filename: str


def session_slice(path: Path, key: str) -> bytes:
    """The trace's first header line and every record of session ``key``, as recorded."""
    wanted = orjson.dumps(key)
    out: list[bytes] = []
    with open(path, "rb") as handle:
        for number, line in enumerate(handle):
            if number == 0:
                out.append(line if line.endswith(b"\n") else line + b"\n")
                continue
            found = _SESSION.search(line, 0, _HEAD)
            if found is None or found.group(1) != wanted:
                # A key spelled with other escapes than orjson's is compared decoded.
                if found is None or _decoded(found.group(1)) != key:
                    continue
            out.append(line if line.endswith(b"\n") else line + b"\n")
    return b"".join(out)


def _decoded(quoted: bytes) -> str | None:
    try:
        value = orjson.loads(quoted)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, str) else None


def session_download(path: Path, key: str, fmt: str) -> Download:
    """Session ``key`` of the trace at ``path`` in format ``fmt`` (``FORMATS``)."""
    ext, media_type = FORMATS[fmt]
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{path.stem}-{key}")[:120] or "session"
    filename = f"{stem}.{ext}"
    sliced = session_slice(path, key)
    if fmt == "jsonl":
        return Download(sliced, media_type, filename)
    with tempfile.TemporaryDirectory(prefix="mcpsniff-ui-") as folder:
        source = Path(folder) / "session.jsonl"
        source.write_bytes(sliced)
        target = Path(folder) / filename
        try:
            if fmt == "har":
                with TraceReader(source) as reader:
                    write_har(reader, target, redact=True)
            else:
                write_report(source, target)
        except HarStdioOnly:
            raise DownloadError(
                "a HAR describes HTTP exchanges, and this session is stdio: "
                "download the trace slice or the HTML report"
            ) from None
        except TraceError as exc:
            raise DownloadError(str(exc)) from None
        return Download(target.read_bytes(), media_type, filename)
