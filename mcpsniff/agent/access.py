"""What the MCP server may read: the state folder or the paths given at start, nothing else.

The server is read-only and path-confined: a trace named in a tool call must
resolve (symbolic links followed) to one of the files given, or to a file
inside one of the folders given; anything else is refused with a one-line
reason. It never writes, creates or deletes a file.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from mcpsniff.ui.library import Library
from mcpsniff.ui.model import SessionModel

#: Poll rounds per refresh: a large trace is read in pieces of ``READ_LIMIT`` bytes.
_REFRESH_ROUNDS = 64


class Refused(Exception):
    """A request names something the server may not read; the message is one line."""


@dataclass
class TraceAccess:
    """The traces under the roots given at start, followed as they grow."""

    roots: list[Path]
    library: Library = field(init=False)

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
