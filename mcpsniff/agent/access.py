"""What the MCP server may read: the state folder or the paths given at start, nothing else.

The server is read-only and path-confined: a trace named in a tool call must
resolve (symbolic links followed) to one of the files given, or to a file
inside one of the folders given; anything else is refused with a one-line
reason. It never writes, creates or deletes a file.
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpsniff.ui.library import Library
from mcpsniff.ui.model import SessionModel

#: Poll rounds per refresh: a large trace is read in pieces of ``READ_LIMIT`` bytes.
_REFRESH_ROUNDS = 64


class ResultCache:
    """The last few results of whole-trace reads, least recently used out.

    Few, because one result may hold a search's every match; the server answers
    one call at a time (stdio reads one line at a time, HTTP runs on one worker).
    """

    def __init__(self, size: int = 8) -> None:
        self._items: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._size = size

    def get(self, key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
        """The value remembered for ``key``, or ``make()``'s, remembered."""
        if key in self._items:
            self._items.move_to_end(key)
            return self._items[key]
        value = self._items[key] = make()
        while len(self._items) > self._size:
            self._items.popitem(last=False)
        return value


class Refused(Exception):
    """A request names something the server may not read; the message is one line."""


@dataclass
class TraceAccess:
    """The traces under the roots given at start, followed as they grow."""

    roots: list[Path]
    library: Library = field(init=False)
    #: Results of whole-trace reads (search, stats), per trace size: paging through a
    #: search reads the trace once, as the UI's queries do.
    cache: ResultCache = field(init=False, default_factory=lambda: ResultCache())

    def __post_init__(self) -> None:
        self.roots = [Path(os.path.realpath(root)) for root in self.roots]
        self.library = Library(list(self.roots))

    def refresh(self) -> None:
        """Read what the traces gained since the last call (bounded rounds)."""
        for _ in range(_REFRESH_ROUNDS):
            if not self.library.poll():
                # A quiet poll completes the last frame's rows; one more settles them.
                self.library.poll()
                return

    def confined(self, name: str) -> Path:
        """The trace file ``name`` names, if it is one of the roots or inside one.

        Raises ``Refused`` for anything else (another folder, ``..``, a link out).
        """
        if not isinstance(name, str) or not name or "\x00" in name:
            raise Refused("a trace path must be a non-empty string")
        path = Path(os.path.realpath(name))
        for root in self.roots:
            if path == root or (root.is_dir() and path.is_relative_to(root)):
                if not path.is_file():
                    raise Refused(f"{name}: no such trace file")
                return path
        raise Refused(
            f"{name}: outside the traces this server was started on "
            f"({', '.join(str(r) for r in self.roots)}); it reads nothing else"
        )

    def session(self, session_id: object) -> tuple[Path, SessionModel]:
        """The trace file and session a session id names. Raises ``Refused`` if none."""
        if not isinstance(session_id, str):
            raise Refused("a session id is a string such as '0:1' (see list_sessions)")
        found = self.library.find(session_id)
        if found is None:
            raise Refused(f"no session {session_id[:100]!r}; list_sessions gives the ids")
        followed, session = found
        return followed.tail.path, session

    def wait_for_growth(self, seconds: float) -> None:
        """Poll until a trace grows or ``seconds`` pass (``follow_session``'s wait)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.library.poll():
                self.library.poll()
                return
            time.sleep(0.2)
