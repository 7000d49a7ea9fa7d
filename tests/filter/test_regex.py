"""The ``~`` operator runs in linear time: no pattern and no traffic can make a filter hang.

Python's ``re`` took forever on ``(.|.)*z`` against a 60-character method name
while holding the interpreter lock; these patterns are the classic
catastrophic-backtracking set, run against the texts that trigger them.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpsniff.filter import FilterError, compile_filter, load_views
from mcpsniff.filter.regex import compile_search
from tests.support import method_trace

REPO = Path(__file__).resolve().parents[2]
#: Patterns that backtrack exponentially (or polynomially) in Python's ``re``.
BACKTRACKING = [
    "(.|.)*z",
    "(a+)+z",
    "(a|aa)+z",
    "(a|a?)+z",
    "(.*a){20}z",
    "^(a+)+$z",
    "(x+x+)+y",
    "(\\w+\\s?)+z",
    "(a*)*c",
    "([a-z]+)*[0-9]z",
]
#: A method name of 60 characters: enough for ``(.|.)*z`` to run for ever in ``re``.
LONG_NAME = "a" * 60


@pytest.mark.parametrize("pattern", BACKTRACKING)
def test_backtracking_patterns_finish_at_once(pattern: str) -> None:
    search = compile_search(pattern, pattern, 0)
    started = time.monotonic()
    for text in (LONG_NAME, "a" * 100_000, "x" * 100_000, "ab" * 50_000 + "!"):
        assert not search(text)
    assert time.monotonic() - started < 2.0


def test_matching_is_case_insensitive_and_finds_what_re_finds() -> None:
    assert compile_search("^tools/", "", 0)("TOOLS/call")
    assert compile_search("(a+)+z", "", 0)("xaaaaZ")
    assert not compile_search("^fs_", "", 0)("tools_fs_read")
    # A lone surrogate (a JSON string may hold one) is searched, not an exception.
    assert compile_search("a.b", "", 0)("a\ud800b")


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("(?u)(?a)x", "invalid perl operator"),
        ("(a)\\1", "invalid escape sequence"),
        ("(?=x)", "invalid perl operator"),
        ("x{1001}", "invalid repetition size"),
        ("[z", "missing ]"),
    ],
)
def test_patterns_re2_refuses_are_one_line_errors_with_a_caret(pattern: str, reason: str) -> None:
    expression = f'method ~ "{pattern}"'
    with pytest.raises(FilterError) as caught:
        compile_filter(expression)
    error = caught.value
    assert reason in error.message and "\n" not in str(error)
    # The caret points into the pattern, never before it.
    assert expression.index(pattern) <= error.position < len(expression)


def test_a_huge_repetition_count_is_no_traceback() -> None:
    # re raised OverflowError here; RE2 reads it as a literal (it cannot count that far).
    flt = compile_filter('method ~ "x{99999999999}"')
    assert flt.expression.startswith("method")


_ATOMS = st.sampled_from(["a", ".", "a?", "a*", "a+", "\\w", "[ab]", "(a|aa)", "(.|.)", "x"])


@st.composite
def _patterns(draw: st.DrawFn) -> str:
    """Nested groups of quantified atoms: the shapes that make a backtracking engine explode."""
    pattern = "".join(draw(st.lists(_ATOMS, min_size=1, max_size=4)))
    for _ in range(draw(st.integers(0, 3))):
        pattern = f"({pattern}){draw(st.sampled_from(['*', '+', '{1,20}', '?']))}"
    return pattern + draw(st.sampled_from(["z", "$", "!", ""]))


@settings(max_examples=200, deadline=2000)
@given(pattern=_patterns(), size=st.integers(1, 20_000))
def test_fuzzed_backtracking_patterns_stay_linear(pattern: str, size: int) -> None:
    expression = f'method ~ "{pattern}"'
    try:
        search = compile_search(pattern, expression, 10)
    except FilterError as exc:
        assert exc.position >= 10
        return
    started = time.monotonic()
    search("a" * size)
    search("ab" * (size // 2))
    assert time.monotonic() - started < 1.0


def test_a_filter_over_a_trace_with_a_long_method_is_quick(tmp_path: Path) -> None:
    trace = method_trace(tmp_path, LONG_NAME)
    flt = compile_filter('method ~ "(.|.)*z" or method ~ "(a|aa)+$"')
    started = time.monotonic()
    kept = [view.seq for view in load_views(trace) if flt.matches(view)]
    assert kept == [1, 2]  # the request, and its response (which carries its method)
    assert time.monotonic() - started < 5.0


@pytest.mark.parametrize(
    "command",
    [["show"], ["check"], ["stats"], ["report", "--output", "{out}"]],
)
def test_commands_with_a_backtracking_filter_finish(tmp_path: Path, command: list[str]) -> None:
    trace = method_trace(tmp_path, LONG_NAME + "b" * 30)
    args = [part.replace("{out}", str(tmp_path / "r.html")) for part in command]
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "mcpsniff", *args, str(trace), "--filter", 'method ~ "(.|.)*z"'],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("command", ["show", "check", "stats", "report"])
@pytest.mark.parametrize("pattern", ["(?u)(?a)x", "x{1001}", "(?<=a)b"])
def test_commands_print_a_bad_pattern_as_one_line_and_a_caret(
    tmp_path: Path, command: str, pattern: str
) -> None:
    trace = method_trace(tmp_path, "ping")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpsniff",
            command,
            str(trace),
            "--filter",
            f"method ~ '{pattern}'",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert lines[0].startswith(f"mcpsniff {command}: --filter: bad regular expression")
    assert lines[2].strip() == "^" and len(lines) == 3, done.stderr
