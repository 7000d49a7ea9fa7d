"""The traces a ``mcpsniff ui`` serves: found in folders, followed as they grow.

The UI needs no connection to the relays: every ``mcpsniff stdio`` and
``mcpsniff http`` writes its trace file (by default into the state folder),
and the library polls the files it was given and the ``*.jsonl`` files of the
folders it was given, reading what was appended since the last poll. A
session recorded while the page is open thus appears, whatever its transport.
"""

from __future__ import annotations

import heapq
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpsniff.trace.codec import TraceError
from mcpsniff.ui.collector import collector_paused
from mcpsniff.ui.follow import READ_LIMIT, OffsetTail, file_size
from mcpsniff.ui.model import RowBudget, SessionModel, TraceModel, bounded

#: A session whose file was written this recently (seconds) and that has not ended is live.
LIVE_WINDOW = 120.0
#: Trace files followed at most (the newest, by modification time).
TRACE_LIMIT = 500


@dataclass
class FollowedTrace:
    """One trace file: its reader and its model."""

    tail: OffsetTail
    model: TraceModel
    error: str | None = None
    #: Records were read since the model last completed its views.
    pending: bool = False


@dataclass
class Library:
    """The traces under a set of files and folders, and their models."""

    roots: list[Path]
    traces: dict[Path, FollowedTrace] = field(default_factory=dict)
    #: Bumped whenever a session list or a session's rows change.
    version: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Rows all the followed traces may keep together.
    budget: RowBudget = field(default_factory=RowBudget)
    _next_id: int = 0

    def discover(self) -> list[Path]:
        """The trace files under the roots right now."""
        found: list[Path] = []
        for root in self.roots:
            if root.is_dir():
                try:
                    files = [
                        p
                        for p in root.glob("*.jsonl")
                        if not p.name.startswith(".") and p.is_file()
                    ]
                except OSError:
                    continue
                files.sort(key=_mtime, reverse=True)
                found.extend(files[:TRACE_LIMIT])
            elif root.is_file():
                found.append(root)
        return found[:TRACE_LIMIT]

    def poll(self, limit: int = READ_LIMIT) -> bool:
        """Read what every trace gained since the last poll; whether anything changed.

        Runs in a worker thread; request handlers read the models under ``lock``.
        """
        with collector_paused():
            return self._poll(limit)

    def _poll(self, limit: int) -> bool:
        changed = False
        found = self.discover()
        gone = set(self.traces) - set(found)
        if gone:
            # Deleted, or pushed out of the newest TRACE_LIMIT: forget it and its rows.
            with self.lock:
                for path in gone:
                    model = self.traces.pop(path).model
                    self.budget.left += sum(len(s.rows) for s in model.sessions.values())
            changed = True
        for path in found:
            followed = self.traces.get(path)
            if followed is None:
                with self.lock:
                    model = TraceModel(path, str(self._next_id), self.budget)
                    followed = FollowedTrace(OffsetTail(path), model)
                    self._next_id += 1
                    self.traces[path] = followed
            if followed.error is not None:
                continue
            size = file_size(path)
            if size <= followed.tail.consumed:
                if followed.pending:
                    # Quiet for a poll: the last frame's group is complete (a writer
                    # writes a frame with its messages and findings in one go).
                    with self.lock:
                        followed.model.flush()
                        followed.pending = False
                    changed = True
                continue
            try:
                items, _more = followed.tail.poll(limit)
            except TraceError as exc:
                with self.lock:
                    followed.error = str(exc)
                changed = True
                continue
            with self.lock:
                for offset, item in items:
                    followed.model.feed(offset, item)
                followed.pending = followed.pending or bool(items)
            changed = changed or bool(items)
        if changed:
            self.version += 1
        return changed

    def sessions(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Every session of every trace, newest first (the newest ``limit`` of them)."""
        now = time.time()
        with self.lock:
            found: list[tuple[SessionModel, bool, Path]] = []
            for path, followed in self.traces.items():
                if followed.error is not None:
                    continue
                # Still being recorded: not ended, and its file grew lately (an HTTP
                # session has no end event of its own; a killed relay writes none).
                recent = now - _mtime(path) < LIVE_WINDOW
                found.extend((s, recent, path) for s in followed.model.sessions.values())
            if limit is not None and len(found) > limit:
                found = heapq.nlargest(limit, found, key=lambda f: f[0].start or 0)
            out = []
            for session, recent, path in found:
                live = recent and not session.ended and session.identity.ending is None
                summary = session.summary(live)
                summary["live"] = live
                summary["file"] = bounded(path.name)
                summary["path"] = bounded(str(path), 1000)
                out.append(summary)
        out.sort(key=lambda s: s["start"] or 0, reverse=True)
        return out

    def session_count(self) -> int:
        """How many sessions the readable traces hold."""
        with self.lock:
            return sum(len(f.model.sessions) for f in self.traces.values() if f.error is None)

    def problems(self) -> list[dict[str, Any]]:
        """Files that are not readable traces, and records skipped in the others."""
        with self.lock:
            out = []
            for path, followed in self.traces.items():
                if followed.error is not None:
                    out.append({"file": bounded(str(path), 1000), "error": bounded(followed.error)})
                elif followed.tail.skipped:
                    out.append(
                        {
                            "file": bounded(str(path), 1000),
                            "skipped": followed.tail.skipped,
                            "notes": [bounded(n) for n in followed.tail.notes],
                        }
                    )
            return out

    def find(self, session_id: str) -> tuple[FollowedTrace, SessionModel] | None:
        """The trace and session named by a session id (``<trace>:<number>``)."""
        trace_id, _, number = session_id.partition(":")
        if not number.isdigit():
            return None
        with self.lock:
            for followed in self.traces.values():
                if followed.model.id == trace_id:
                    session = followed.model.session(int(number))
                    return (followed, session) if session is not None else None
        return None


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
