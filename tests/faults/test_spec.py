"""faults/spec.py: every action and modifier parsed, every mistake refused with its place."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpsniff.faults.spec import (
    MAX_SPEC_CHARS,
    FaultSpecError,
    load_faults,
    parse_fault,
    read_fault_file,
)


def test_actions_and_arguments() -> None:
    assert parse_fault("delay 300ms").delay_ms == (300.0, 300.0)
    assert parse_fault("delay 100ms..2s").delay_ms == (100.0, 2000.0)
    error = parse_fault('error -32020 "missing header"')
    assert (error.action, error.code, error.message) == ("error", -32020, "missing header")
    assert parse_fault("error -32603").message == "injected by mcpsniff"
    assert parse_fault('tool-error "disk full"').message == "disk full"
    assert parse_fault("corrupt pretty").corruption == "pretty"
    assert parse_fault("status 503").code == 503
    for action in ("drop", "duplicate", "reorder", "disconnect", "kill"):
        assert parse_fault(action).action == action


def test_filter_and_modifiers() -> None:
    fault = parse_fault(
        'drop when tool == "echo" and direction == s2c prob 0.25 seed 9 times 2 after 1'
    )
    assert fault.when is not None and fault.when.expression == 'tool == "echo" and direction == s2c'
    assert (fault.prob, fault.seed, fault.times, fault.after) == (0.25, 9, 2, 1)
    # Modifiers without a filter, in any order.
    bare = parse_fault("duplicate after 3 times 1")
    assert bare.when is None and (bare.times, bare.after) == (1, 3)
    # A quoted "when" is text of the filter, not the keyword.
    assert parse_fault('drop when "when" ').when is not None


@pytest.mark.parametrize(
    ("spec", "message", "column"),
    [
        ("", "empty fault specification", 1),
        ("explode", "unknown fault action 'explode'", 1),
        ("delay", "delay takes one duration, or MIN..MAX", 6),
        ("delay 2s..1s", "the delay range must go from low to high", 7),
        ("delay 5x", "bad duration '5x'", 7),
        ("delay 2h", "a delay is at most one hour", 7),
        ("error", "error takes a JSON-RPC error code", 6),
        ("error x", "error takes a whole number first", 7),
        ("error -1 two words", "quote a message of several words", 14),
        ("status 42", "an HTTP status is from 100 to 599", 8),
        ("corrupt", "corrupt takes one of truncate", 8),
        ("drop now", "drop takes no argument", 6),
        ("drop when", "a filter must follow when", 10),
        ("drop when method ==", "expected a value after '=='", 20),
        ("drop when method == x prob 1.5", "prob takes a number from 0 to 1", 28),
        ("drop times 0", "times takes a whole number of at least 1", 12),
        ("drop times 1 times 2", "times given twice", 6),
        ("drop seed 3", "seed only makes sense with prob", 6),
        ('error -1 "open', "unterminated string", 10),
    ],
)
def test_mistakes_are_refused_with_their_place(spec: str, message: str, column: int) -> None:
    with pytest.raises(FaultSpecError) as caught:
        parse_fault(spec)
    assert caught.value.message.startswith(message), caught.value.message
    assert str(caught.value).endswith(f"(at column {column})")
    caret = caught.value.caret().split("\n")
    assert caret[1] == " " * (column - 1) + "^"


def test_hostile_specs_are_refused_in_one_line() -> None:
    for spec in (
        "drop when " + "a or " * MAX_SPEC_CHARS,
        "drop when " + "(" * 500 + "method" + ")" * 500,
        "drop when method == \x1b[31mred",
        "delay 1ms\x00",
    ):
        with pytest.raises(FaultSpecError) as caught:
            parse_fault(spec)
        assert "\n" not in str(caught.value)
        assert len(str(caught.value)) < 200


def test_a_faults_file_with_comments(tmp_path: Path) -> None:
    path = tmp_path / "faults.txt"
    path.write_text("# a slow tool\ndelay 300ms when tool == echo\n\n  drop times 1  # inline\n")
    with pytest.raises(FaultSpecError):
        # "#" inside a line is not a comment: "# inline" is not a modifier.
        load_faults([], [str(path)])
    path.write_text("# a slow tool\ndelay 300ms when tool == echo\n\n  drop times 1\n")
    assert read_fault_file(path) == ["delay 300ms when tool == echo", "drop times 1"]
    faults = load_faults(["kill"], [str(path)])
    assert [f.action for f in faults] == ["delay", "drop", "kill"]


def test_unreadable_faults_files(tmp_path: Path) -> None:
    with pytest.raises(FaultSpecError, match="cannot read"):
        read_fault_file(tmp_path / "absent")
    binary = tmp_path / "binary"
    binary.write_bytes(b"delay 1ms\n\xff\xfe")
    with pytest.raises(FaultSpecError, match="not UTF-8"):
        read_fault_file(binary)
