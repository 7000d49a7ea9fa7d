"""Where traces go, and opening one for a new session: create it, or append to it.

A client such as Claude Desktop restarts its MCP servers all the time, each
time running the same ``mcpsniff stdio --trace PATH -- ...`` line. So an
existing trace is not an error: ``open_trace_file`` appends a new session to
it, after checking that it really is an mcpsniff trace of the format this
version writes. It never truncates and never writes to any other file. A
``--trace`` value may also be a pattern (``{name}``, ``{pid}``, ``{time}``),
or a directory, meaning a new file in it, so that one configuration line can
give one file per launch.

The state folder (``$XDG_STATE_HOME/mcpsniff``, by default
``~/.local/state/mcpsniff``) and any parent it has to create are made 0700
whatever the umask: traces hold what a user's tools read and wrote.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpsniff.trace.codec import (
    FORMAT_NAME,
    FORMAT_VERSION,
    FRAME_PREFIX,
    exact_loads,
    glued_record,
)
from mcpsniff.trace.reader import HEADER_LIMIT
from mcpsniff.trace.writer import TraceWriter

#: The longest header line an appender reads (a header holds the server's argv).
_HEADER_LIMIT = HEADER_LIMIT
#: How far back from the end an appender looks for the last sequence number.
_TAIL_LIMIT = 64 << 20
_TAIL_CHUNK = 1 << 20
#: How long an appender waits for a concurrently created file's header.
_HEADER_WAIT = 2.0
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_PLACEHOLDERS = ("name", "pid", "time")
_SEQ = re.compile(rb'"seq":(\d+)')
_EVENT_PREFIX = b'{"type":"event"'
#: A frame or event starting after a line's first byte: maybe glued after a torn write.
_GLUED_START = re.compile(rb'\{"type":"(?:frame|event)"')
#: Sequence numbers are 64-bit (trace.validate): a larger one read back is no offset.
_SEQ_LIMIT = 1 << 63


class TraceOpenError(Exception):
    """The trace cannot be opened for writing; the message is one line for the user."""


def state_dir() -> Path:
    """mcpsniff's per-user state folder (not created)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "mcpsniff"


def traces_dir() -> Path:
    """Where traces go by default (not created)."""
    return state_dir() / "traces"


def make_private_dirs(path: Path) -> None:
    """Create ``path`` and its missing parents, each one mode 0700 whatever the umask.

    ``Path.mkdir(parents=True, mode=0o700)`` applies the mode to the last
    component only and the umask to every parent; folders that already exist
    are left as the user made them.
    """
    missing: list[Path] = []
    current = path
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            continue  # another relay made it first
        # mkdir's mode passes through the umask; say exactly what we mean.
        os.chmod(folder, 0o700)


def safe_name(label: str) -> str:
    """``label`` as a file-name part: letters, digits, ``-``, ``_`` and ``.`` only."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in label)[:60].strip(".") or (
        "session"
    )


def default_file_name(label: str, now: float | None = None, pid: int | None = None) -> str:
    """``<label>-<YYYYmmdd-HHMMSS>-<pid>.jsonl``."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return f"{safe_name(label)}-{stamp}-{os.getpid() if pid is None else pid}.jsonl"


def expand_pattern(
    pattern: str, name: str, now: float | None = None, pid: int | None = None
) -> str:
    """``pattern`` with ``{name}``, ``{pid}`` and ``{time}`` filled in (``{{``/``}}`` are braces).

    Raises ``TraceOpenError`` for an unknown placeholder.
    """
    values = {
        "name": safe_name(name),
        "pid": str(os.getpid() if pid is None else pid),
        "time": time.strftime("%Y%m%d-%H%M%S", time.localtime(now)),
    }
    escaped = pattern.replace("{{", "\0").replace("}}", "\1")

    def fill(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise TraceOpenError(
                f"--trace {pattern!r}: unknown placeholder {{{key}}} "
                f"(use {', '.join('{' + k + '}' for k in _PLACEHOLDERS)})"
            )
        return values[key]

    return _PLACEHOLDER.sub(fill, escaped).replace("\0", "{").replace("\1", "}")


def resolve_trace_path(
    trace: str | os.PathLike[str] | None,
    name: str,
    now: float | None = None,
    pid: int | None = None,
) -> Path:
    """The file a relay should record to, for a ``--trace`` value (``None``: the default).

    A pattern is expanded; an existing directory, or a value ending with a
    slash, means a new file in that directory.
    """
    if trace is None:
        return traces_dir() / default_file_name(name, now, pid)
    text = os.fspath(trace)
    expanded = expand_pattern(text, name, now, pid)
    path = Path(expanded).expanduser()
    if expanded.endswith(os.sep) or path.is_dir():
        return path / default_file_name(name, now, pid)
    return path


@dataclass
class OpenedTrace:
    """A trace opened for a new session: its writer, and whether it was appended to."""

    writer: TraceWriter
    path: Path
    appended: bool
    #: A warning for the user (e.g. a torn trace that was not appended to), or ``None``.
    note: str | None = None


def open_trace_file(
    trace: str | os.PathLike[str] | None,
    *,
    name: str,
    meta: dict[str, Any],
    created: float | None = None,
) -> OpenedTrace:
    """Open the trace for ``--trace`` (``None``: a new file in the state folder).

    Creates the file with its header, or appends a new session to an existing
    mcpsniff trace. Raises ``TraceOpenError`` with a one-line reason.
    """
    created = time.time() if created is None else created
    path = resolve_trace_path(trace, name, created)
    try:
        if trace is None or path.parent.is_relative_to(state_dir()):
            # Our own folder; a folder the user named must exist (a typo stays visible).
            make_private_dirs(path.parent)
        writer = _create(path, meta, created)
        if writer is not None:
            return OpenedTrace(writer, path, appended=False)
        try:
            writer = _append(path, meta, created)
            return OpenedTrace(writer, path, appended=True)
        except _NotAppendable as exc:
            sibling = path.with_name(default_file_name(path.stem, created))
            writer = _create(sibling, meta, created)
            if writer is None:
                raise TraceOpenError(f"trace file {sibling} already exists") from None
            writer.note = f"{path}: {exc}; recording to {sibling} instead"
            return OpenedTrace(writer, sibling, appended=False, note=writer.note)
    except TraceOpenError:
        raise
    except OSError as exc:
        raise TraceOpenError(f"cannot write trace {path}: {exc.strerror or exc}") from None


def _create(path: Path, meta: dict[str, Any], created: float) -> TraceWriter | None:
    """A new trace at ``path`` with its header, or ``None`` when ``path`` exists.

    The header is written to a private temporary file that is then linked to
    ``path``: the link fails if ``path`` exists, and a concurrent appender
    never sees the file without its header.
    """
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:
        return _create_in_place(path, meta, created)
    writer = TraceWriter.from_fd(fd, path)
    try:
        writer.write_header(meta, created)
        writer.flush()
        if writer.failed is not None:
            raise writer.failed
        os.link(temporary, path)
    except FileExistsError:
        writer.close()
        return None
    except OSError as exc:
        writer.close()
        if isinstance(exc, PermissionError) or exc.errno in _NO_LINKS:
            return _create_in_place(path, meta, created)
        raise
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
    return writer


#: errno values of file systems without hard links.
_NO_LINKS = {errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK}


def _create_in_place(path: Path, meta: dict[str, Any], created: float) -> TraceWriter | None:
    """Create ``path`` directly (no hard links here), or ``None`` when it exists."""
    try:
        return TraceWriter.create(path, meta=meta, created=created)
    except FileExistsError:
        return None


class _NotAppendable(Exception):
    """An mcpsniff trace that this version cannot append to (another format version, torn)."""


def _append(path: Path, meta: dict[str, Any], created: float) -> TraceWriter:
    """A writer appending a new session to the existing trace ``path``."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND)
    except IsADirectoryError:
        raise TraceOpenError(f"{path} is a directory") from None
    except OSError as exc:
        raise TraceOpenError(f"cannot open trace {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise TraceOpenError(f"{path} exists and is not a regular file; choose another --trace")
        _check_header(fd, path)
        offset = _last_seq(fd)
    except BaseException:
        os.close(fd)
        raise
    suffix = f"@{os.getpid()}.{int(created)}"
    writer = TraceWriter.from_fd(fd, path, session_suffix=suffix, seq_offset=offset)
    # The appended session starts with its own header line: readers skip it,
    # and it keeps this launch's provenance (command, label) with it.
    writer.write_header({**meta, "session_suffix": suffix, "seq_offset": offset}, created)
    writer.flush()
    if writer.failed is not None:
        failed = writer.failed
        writer.close()
        raise failed
    return writer


def _check_header(fd: int, path: Path) -> None:
    """Raise unless ``fd`` holds an mcpsniff trace this version may append to."""
    deadline = time.monotonic() + _HEADER_WAIT
    while True:
        first = os.pread(fd, _HEADER_LIMIT, 0)
        if first or time.monotonic() > deadline:
            break
        if time.time() - os.fstat(fd).st_mtime > _HEADER_WAIT:
            break  # an old empty file, not one another relay is creating
        # Another relay created it a moment ago without hard links: its header is coming.
        time.sleep(0.05)
    line, newline, _ = first.partition(b"\n")
    not_trace = TraceOpenError(
        f"{path} exists and is not an mcpsniff trace; it was left untouched "
        "(choose another --trace)"
    )
    if not newline:
        raise not_trace
    try:
        obj = exact_loads(line)
    except ValueError:
        raise not_trace from None
    if not isinstance(obj, dict) or obj.get("format") != FORMAT_NAME:
        raise not_trace
    if obj.get("version") != FORMAT_VERSION or type(obj.get("version")) is not int:
        raise _NotAppendable(
            f"it is a trace of format version {obj.get('version')!r}, "
            f"this mcpsniff appends to version {FORMAT_VERSION} only"
        )
    size = os.fstat(fd).st_size
    if os.pread(fd, 1, size - 1) != b"\n":
        raise _NotAppendable("its last line is incomplete (a crash cut it off)")


def _last_seq(fd: int) -> int:
    """The highest sequence number in the last frames and events of the file (0 if none)."""
    size = os.fstat(fd).st_size
    end = size
    carry = b""
    while end > 0 and size - end < _TAIL_LIMIT:
        start = max(0, end - _TAIL_CHUNK)
        chunk = os.pread(fd, end - start, start) + carry
        lines = chunk.split(b"\n")
        # The first piece may be the end of a line that starts further back.
        carry = lines[0] if start > 0 else b""
        best = 0
        for line in lines[1 if start > 0 else 0 :]:
            if line.startswith((FRAME_PREFIX, _EVENT_PREFIX)):
                match = _SEQ.search(line, 0, 200)
                if match is not None:
                    best = max(best, int(match.group(1)))
            if _GLUED_START.search(line, 1) is not None:
                # Another writer's record glued after a torn one: its seq counts
                # too, or the appended run would reuse it. (None for an intact
                # line: a nested record start does not parse to the line's end.)
                glued = glued_record(line)
                seq = glued[0].get("seq") if glued is not None else None
                if type(seq) is int and 0 <= seq < _SEQ_LIMIT:
                    best = max(best, seq)
        if best:
            return best
        end = start
    return 0
