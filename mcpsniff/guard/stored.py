"""How an offer is stored in a lock file and in the history: a definition's fingerprint and body.

Both files are JSON written with ``ensure_ascii``: a zero-width or tag
character in a description shows as ``\\u200b`` in a code review instead of
hiding there too.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcpsniff.core.guard.diff import Listed
from mcpsniff.core.guard.fingerprint import Definition

_KINDS = ("tool", "prompt", "resource", "resource-template")


class StoredError(Exception):
    """A lock or history file cannot be read or written: a one-line reason."""


def stored_definitions(defs: Mapping[str, Definition]) -> dict[str, dict[str, Any]]:
    """``kind:name`` -> ``{"fingerprint", "definition"}``, sorted by key."""
    return {
        key: {"fingerprint": d.fingerprint, "definition": d.body} for key, d in sorted(defs.items())
    }


def listed_from_stored(where: str, raw: Any) -> dict[str, Listed]:
    """The stored definitions back as ``Listed``; ``StoredError`` naming ``where`` if malformed."""
    if type(raw) is not dict:
        raise StoredError(f"{where}: 'definitions' is not an object")
    found: dict[str, Listed] = {}
    for key, entry in raw.items():
        kind, _, name = str(key).partition(":")
        if kind not in _KINDS or not name:
            raise StoredError(f"{where}: {str(key)[:80]!r} is not KIND:NAME")
        if type(entry) is not dict or type(entry.get("fingerprint")) is not str:
            raise StoredError(f"{where}: {str(key)[:80]!r} has no fingerprint")
        body = entry.get("definition")
        found[key] = Listed(kind, name, entry["fingerprint"], body if type(body) is dict else None)
    return found


def listed_from_offer(defs: Mapping[str, Definition]) -> dict[str, Listed]:
    """A session's definitions as ``Listed``."""
    return {key: Listed(d.kind, d.name, d.fingerprint, d.body) for key, d in defs.items()}


def read_json(path: Path) -> Any:
    """The JSON in ``path``; ``StoredError`` with a one-line reason."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise StoredError(f"{path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise StoredError(f"{path}: not UTF-8 text") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise StoredError(f"{path}: not JSON ({str(exc)[:120]})") from None


def write_json(path: Path, value: Any, mode: int = 0o644) -> None:
    """Write ``value`` to ``path`` as stable, indented JSON, atomically (a rename)."""
    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=True) + "\n"
    folder = path.parent if str(path.parent) else Path(".")
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
            os.chmod(temporary, mode)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise StoredError(f"{path}: cannot write: {exc.strerror or exc}") from None
