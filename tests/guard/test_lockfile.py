"""The lock file: stable bytes, readable, validated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcpsniff.guard.lockfile import lock_data, read_lock, write_lock
from mcpsniff.guard.stored import StoredError
from tests.guard.offers import inventory, offer, tool


def test_written_lock_reads_back_and_is_stable(tmp_path: Path) -> None:
    path = tmp_path / "mcpsniff.lock"
    data = lock_data(inventory(offer("stdio:a", tool("b", "Zero\u200bwidth."), tool("a"))))
    write_lock(path, data)
    first = path.read_bytes()
    write_lock(
        path, lock_data(inventory(offer("stdio:a", tool("a"), tool("b", "Zero\u200bwidth."))))
    )
    assert path.read_bytes() == first  # listing order does not count
    text = first.decode()
    assert "\\u200b" in text and "\u200b" not in text  # visible in review
    assert text.index('"tool:a"') < text.index('"tool:b"')
    lock = read_lock(path)
    assert set(lock.servers["stdio:a"]) == {"tool:a", "tool:b"}


@pytest.mark.parametrize(
    "content, reason",
    [
        ("{", "not JSON"),
        ("[]", "not an mcpsniff lock file"),
        ('{"format": "mcpsniff-lock", "version": 9, "servers": {}}', "version 9"),
        ('{"format": "mcpsniff-lock", "version": 1, "servers": []}', "'servers'"),
        (
            '{"format": "mcpsniff-lock", "version": 1, "servers": {"a": {"definitions": '
            '{"nokind": {}}}}}',
            "KIND:NAME",
        ),
        (
            '{"format": "mcpsniff-lock", "version": 1, "servers": {"a": {"definitions": '
            '{"tool:x": {}}}}}',
            "no fingerprint",
        ),
    ],
)
def test_a_bad_lock_file_is_a_one_line_error(tmp_path: Path, content: str, reason: str) -> None:
    path = tmp_path / "bad.lock"
    path.write_text(content)
    with pytest.raises(StoredError) as caught:
        read_lock(path)
    assert reason in str(caught.value) and "\n" not in str(caught.value)


def test_missing_lock_file(tmp_path: Path) -> None:
    with pytest.raises(StoredError, match="No such file"):
        read_lock(tmp_path / "none.lock")
    assert json.loads(json.dumps(lock_data(inventory())))["servers"] == {}
