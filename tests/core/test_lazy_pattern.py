"""Patterns compiled at first use: the same answers as ``re.compile``'s, none compiled at import."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpsniff.core.lazy_pattern import _LazyPattern, lazy

ROOT = Path(__file__).resolve().parents[2]
#: The modules whose patterns wait for their first use.
LAZY_MODULES = (
    "mcpsniff.core.guard.hidden",
    "mcpsniff.core.diagnosis",
    "mcpsniff.core.secret_values",
    "mcpsniff.core.trace_context",
)


def test_nothing_is_compiled_until_first_use() -> None:
    pattern = lazy(r"(?P<word>[a-z]+)-(\d+)", re.IGNORECASE)
    assert "search" not in vars(pattern)
    assert pattern.pattern == r"(?P<word>[a-z]+)-(\d+)"
    assert "search" in vars(pattern)  # compiled once, kept


@pytest.mark.parametrize("source", ["(?P<word>[a-z]+)-(\\d+)", b"(?P<word>[a-z]+)-(\\d+)"])
def test_every_method_and_attribute_answers_as_the_compiled_pattern(source: Any) -> None:
    text = "Ab-12 cd-3 x" if isinstance(source, str) else b"Ab-12 cd-3 x"
    compiled = re.compile(source, re.IGNORECASE)
    pattern = lazy(source, re.IGNORECASE)
    assert pattern.search(text).group("word") == compiled.search(text).group("word")  # type: ignore[union-attr]
    assert pattern.match(text).span() == compiled.match(text).span()  # type: ignore[union-attr]
    assert pattern.fullmatch(text) is None
    assert [m.span() for m in pattern.finditer(text)] == [m.span() for m in compiled.finditer(text)]
    assert pattern.findall(text) == compiled.findall(text)
    empty = text[:0]
    assert pattern.sub(empty, text) == compiled.sub(empty, text)
    assert pattern.subn(empty, text, count=1) == compiled.subn(empty, text, count=1)
    assert pattern.split(text) == compiled.split(text)
    assert (pattern.flags, pattern.groups, pattern.groupindex) == (
        compiled.flags,
        compiled.groups,
        compiled.groupindex,
    )


def test_what_a_pattern_has_not_is_an_attribute_error() -> None:
    pattern = lazy("a")
    with pytest.raises(AttributeError):
        pattern.nothing  # type: ignore[attr-defined]  # noqa: B018
    assert "search" not in vars(pattern)  # asking for nonsense compiles nothing
    assert repr(pattern) == "lazy('a', 0)"


def test_a_bad_pattern_fails_at_its_first_use() -> None:
    pattern = lazy("(")
    with pytest.raises(re.error):
        pattern.search("x")


def _lazy_patterns(value: Any, depth: int = 0) -> list[_LazyPattern]:
    """The stand-ins in a module global: itself, in tuples, or in a dataclass's fields."""
    if isinstance(value, _LazyPattern):
        return [value]
    if depth > 2:
        return []
    if isinstance(value, tuple | list):
        return [p for item in value for p in _lazy_patterns(item, depth + 1)]
    if hasattr(value, "__dataclass_fields__") and not isinstance(value, type):
        return [
            p for name in value.__dataclass_fields__ for p in _lazy_patterns(getattr(value, name))
        ]
    return []


@pytest.mark.parametrize("module", LAZY_MODULES)
def test_every_pattern_of_the_lazy_modules_compiles(module: str) -> None:
    import importlib

    namespace = vars(importlib.import_module(module))
    found = [p for value in namespace.values() for p in _lazy_patterns(value)]
    assert len(found) >= 5
    for pattern in found:
        source, flags = pattern._source
        assert pattern.pattern == source
        assert pattern.flags == re.compile(source, flags).flags


def _check_in_fresh_interpreter(code: str, trace: Path) -> subprocess.CompletedProcess[str]:
    """Run ``code`` (which runs the CLI) as ``check --format json TRACE`` in a new interpreter."""
    return subprocess.run(
        [sys.executable, "-c", code, "check", "--format", "json", str(trace)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        check=False,
    )


def test_checking_a_clean_recording_compiles_none_of_the_hidden_instruction_patterns() -> None:
    code = (
        "import sys\n"
        "from mcpsniff.cli import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "except SystemExit:\n"
        "    pass\n"
        "from mcpsniff.core.lazy_pattern import _LazyPattern\n"
        "from mcpsniff.core.guard import hidden\n"
        "found = [v for v in vars(hidden).values() if isinstance(v, _LazyPattern)]\n"
        "found += [p for _, p, _ in hidden._INSTRUCTIONS]\n"
        "print(len(found), sum('search' in vars(p) for p in found), file=sys.stderr)\n"
    )
    trace = ROOT / "recordings" / "clean-2026-07-28.jsonl"
    done = _check_in_fresh_interpreter(code, trace)
    assert done.returncode == 0, done.stderr
    total, compiled = map(int, done.stderr.split())
    assert total >= 20 and compiled == 0


#: Patterns a check of a clean trace never uses, by module, each left to its
#: first use: check's start-up compiles none of them (docs/performance.md, "Start-up").
START_UP_PATTERNS = {
    "mcpsniff.cli.guard_options": ("_DURATION",),
    "mcpsniff.core.escape": ("_UNSAFE",),
    "mcpsniff.core.explain": ("_BLAME_RE", "_MARK_RE", "_VCODE_RE"),
    "mcpsniff.core.grouping": ("_VARIABLE",),
    "mcpsniff.core.guard.diff": ("_WORD",),
    "mcpsniff.core.mcp_headers": ("_TOKEN", "_FIELD_VALUE", "_SAFE"),
    "mcpsniff.core.redact": ("_NUMBER_AT", "_VALUE_RUN", "_PROTECTED_BEFORE", "_ARRAY_TOKEN"),
    "mcpsniff.core.rules.client_features": ("_LINK",),
    "mcpsniff.core.rules.content": ("_ISO8601",),
    "mcpsniff.core.rules.jsonrpc": ("_META_KEY",),
    "mcpsniff.core.rules.stdio": ("_REPLY_ID",),
    "mcpsniff.core.rules.tasks": ("_ISO8601",),
    "mcpsniff.core.rules.utilities_2026": ("_EXPRESSION",),
    "mcpsniff.core.secret_names": ("_WORD",),
    "mcpsniff.core.spec_links": ("_PLACEHOLDERS", "_ALTERNATIVES", "_QUOTE"),
    "mcpsniff.core.state": ("_RUN_SUFFIX",),
    "mcpsniff.terminal.safe_output": ("_SURROGATE",),
}


@pytest.mark.parametrize("module", sorted(START_UP_PATTERNS))
def test_every_pattern_left_to_its_first_use_compiles(module: str) -> None:
    import importlib

    namespace = vars(importlib.import_module(module))
    for name in START_UP_PATTERNS[module]:
        found = _lazy_patterns(namespace[name])
        assert found, name
        for pattern in found:
            source, flags = pattern._source
            assert pattern.pattern == source
            assert pattern.flags == re.compile(source, flags).flags


def test_check_start_up_compiles_none_of_the_patterns_left_to_their_first_use(
    tmp_path: Path,
) -> None:
    code = (
        "import importlib, sys\n"
        "from mcpsniff.cli import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "except SystemExit:\n"
        "    pass\n"
        "from mcpsniff.core.lazy_pattern import _LazyPattern\n"
        f"wanted = {START_UP_PATTERNS!r}\n"
        "for module, names in wanted.items():\n"
        "    namespace = vars(importlib.import_module(module))\n"
        "    for name in names:\n"
        "        value = namespace[name]\n"
        "        for p in (value if isinstance(value, tuple) else [(value, None)]):\n"
        "            state = 'compiled' if 'search' in vars(p[0]) else 'waiting'\n"
        "            kind = 'lazy' if isinstance(p[0], _LazyPattern) else 'compiled at import'\n"
        "            print(module, name, kind, state, file=sys.stderr)\n"
    )
    trace = tmp_path / "header.jsonl"
    with (ROOT / "recordings" / "clean-2026-07-28.jsonl").open(encoding="utf-8") as recording:
        trace.write_text(recording.readline(), encoding="utf-8")
    done = _check_in_fresh_interpreter(code, trace)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 32, done.stderr
    assert [line for line in lines if not line.endswith(" lazy waiting")] == []
