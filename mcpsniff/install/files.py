"""Reading, writing and backing up configuration files.

Before a configuration file is changed, a backup keeps a plain copy of it
(``NAME.orig``: ``cp`` puts it back) and, beside it, what ``uninstall`` needs
(``NAME.json``): its exact bytes, the bytes written in their place, and the
original text of each entry wrapped.
``uninstall`` restores those bytes when the file is still exactly what
``install`` wrote (newest backup first, so several installs unwind in turn);
when something else changed the file since, it removes only the wrapping.
Writes go to a temporary file in the same folder that then replaces the
original (through a symlink, to the file it points to), keeping its mode.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import orjson

from mcpsniff.terminal.safe_output import json_line
from mcpsniff.trace.paths import make_private_dirs, state_dir

BACKUP_SUFFIX = ".json"
#: The plain copy of the file as it was, beside its backup's metadata.
COPY_SUFFIX = ".orig"
RESTORED_SUFFIX = ".restored"


def backup_dir() -> Path:
    """Where install backups go (in the private state folder)."""
    return state_dir() / "install-backups"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class ChangedMeanwhile(OSError):
    """The file is no longer what was read: someone (the client) saved it meanwhile."""


def write_atomically(path: Path, data: bytes, expected: bytes | None = None) -> None:
    """Replace the file at ``path`` (or its symlink's target) with ``data``.

    With ``expected``, raise ``ChangedMeanwhile`` instead when the file no
    longer holds those bytes: a client that saved its configuration while we
    planned our edit must not lose its change.
    """
    target = path.resolve()
    try:
        mode = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o600
    temporary = target.with_name(f".{target.name}.mcpsniff-{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        if expected is not None and target.read_bytes() != expected:
            raise ChangedMeanwhile(f"{path} changed meanwhile")
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_backup(
    client: str, path: Path, original: bytes, written: bytes, entries: dict[str, Any]
) -> Path:
    """Record a change about to be made to ``path``; returns the backup's metadata file.

    Its plain copy is ``copy_of(backup)``, written first: a metadata file always
    has its copy.
    """
    folder = backup_dir()
    make_private_dirs(folder)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(1000):
        stem = f"{client}-{stamp}-{n}"
        copy = folder / f"{stem}{COPY_SUFFIX}"
        try:
            fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as handle:
            handle.write(original)
        document = {
            "client": client,
            "path": str(path.resolve()),
            "time": time.time(),
            "copy": copy.name,
            "original_b64": base64.b64encode(original).decode("ascii"),
            "written_sha256": digest(written),
            "entries": entries,
        }
        backup = folder / f"{stem}{BACKUP_SUFFIX}"
        try:
            fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(json_line(document).encode("utf-8"))
        except OSError:
            copy.unlink()
            raise
        return backup
    raise OSError(f"cannot name a backup in {folder}")


def copy_of(backup: Path) -> Path:
    """The plain copy of the file a backup's metadata (``write_backup``) was made for."""
    return backup.with_suffix(COPY_SUFFIX)


def drop_backup(backup: Path) -> None:
    """Remove a backup whose change was not made (it would only mislead ``uninstall``)."""
    for part in (backup, copy_of(backup)):
        with contextlib.suppress(FileNotFoundError):
            part.unlink()


def backups_for(path: Path) -> list[tuple[Path, dict[str, Any]]]:
    """The unrestored backups of ``path``, newest first."""
    folder = backup_dir()
    if not folder.is_dir():
        return []
    wanted = str(path.resolve())
    found = []
    for backup in folder.glob(f"*{BACKUP_SUFFIX}"):
        try:
            document = _loads(backup.read_bytes())
        except (OSError, ValueError):
            continue
        if isinstance(document, dict) and document.get("path") == wanted and _usable(document):
            found.append((backup, document))
    found.sort(key=lambda item: (item[1]["time"], item[0].name), reverse=True)
    return found


def _usable(document: dict[str, Any]) -> bool:
    """Whether a backup has the shape ``write_backup`` gives it (a damaged one is ignored).

    A backup file can be truncated by a full disk or edited by hand; trusting
    it would end uninstall in a traceback, or restore garbage. Without it,
    uninstall still removes the wrapping from the entries themselves.
    """
    entries = document.get("entries")
    original = document.get("original_b64")
    if (
        type(document.get("time")) not in (int, float)
        or not isinstance(document.get("written_sha256"), str)
        or not isinstance(original, str)
        or not isinstance(entries, dict)
        or not all(isinstance(v, dict) for v in entries.values())
    ):
        return False
    try:
        base64.b64decode(original, validate=True)
    except ValueError:
        return False
    return True


def _loads(data: bytes) -> Any:
    """A backup's JSON; the standard parser for what orjson refuses (a lone surrogate)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def original_bytes(document: dict[str, Any]) -> bytes:
    return base64.b64decode(document["original_b64"])


def mark_restored(backup: Path) -> None:
    """Keep a used backup, but never use it again."""
    backup.rename(backup.with_name(backup.name + RESTORED_SUFFIX))
