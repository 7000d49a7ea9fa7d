"""W3C Trace Context Level 1 checks on ``params._meta.traceparent``."""

from __future__ import annotations

import pytest

from mcpsniff.core.trace_context import extract, parse

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"
GOOD = f"00-{TRACE}-{PARENT}-01"


def test_valid_traceparent_gives_its_fields() -> None:
    ctx = parse(GOOD, "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
    assert ctx.valid and ctx.problem is None
    assert (ctx.version, ctx.trace_id, ctx.parent_id, ctx.flags) == ("00", TRACE, PARENT, 1)
    assert ctx.sampled and ctx.short_id == "4bf92f35"
    assert ctx.tracestate == "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
    assert ctx.tracestate_problem is None
    assert ctx.as_json() == {
        "traceparent": GOOD,
        "valid": True,
        "version": "00",
        "trace_id": TRACE,
        "parent_id": PARENT,
        "flags": "01",
        "sampled": True,
        "tracestate": "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
    }


def test_unsampled_and_future_versions() -> None:
    assert parse(f"00-{TRACE}-{PARENT}-00").sampled is False
    # A later version may add fields after a dash (W3C §3.2.4).
    later = parse(f"cc-{TRACE}-{PARENT}-09-what-the-future-brings")
    assert later.valid and later.version == "cc" and later.flags == 9
    assert parse(f"cc-{TRACE}-{PARENT}-01").valid


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (f"ff-{TRACE}-{PARENT}-01", "version ff is forbidden"),
        (f"0g-{TRACE}-{PARENT}-01", "version is not 2 lowercase hex digits"),
        (f"00-{TRACE.upper()}-{PARENT}-01", "trace-id has uppercase hex digits"),
        (f"00-{'0' * 32}-{PARENT}-01", "trace-id is all zeros"),
        (f"00-{TRACE}-{'0' * 16}-01", "parent-id is all zeros"),
        (f"00-{TRACE}-{PARENT.upper()}-01", "parent-id has uppercase hex digits"),
        (f"00-{TRACE}-{PARENT}-0x", "trace-flags is not 2 lowercase hex digits"),
        (f"00-{TRACE}-{PARENT}-01-extra", "version 00 has exactly 4 fields"),
        (f"cc-{TRACE}-{PARENT}-01extra", "needs a '-' before its next field"),
        (f"00-{TRACE}-{PARENT}", "shorter than the 55"),
        (f"00-{TRACE[:-1]}-{PARENT}-011", "trace-id is not 32 lowercase hex digits"),
        (f" 00-{TRACE}-{PARENT}-01", "version is not 2 lowercase hex digits"),
        (f"00_{TRACE}_{PARENT}_01", "not 4 fields"),
        ("", "version is not 2"),
    ],
)
def test_invalid_traceparents_say_why(value: str, problem: str) -> None:
    ctx = parse(value, "rojo=1")
    assert not ctx.valid
    assert ctx.problem is not None and problem in ctx.problem
    assert ctx.trace_id is None and ctx.parent_id is None
    assert ctx.as_json()["valid"] is False


@pytest.mark.parametrize(
    ("value", "problem"),
    [(None, "null"), (12, "a number"), (["x"], "an array"), ({"a": 1}, "an object")],
)
def test_non_string_traceparent(value: object, problem: str) -> None:
    ctx = parse(value)
    assert not ctx.valid and ctx.problem == f"traceparent is {problem}, not a string"


@pytest.mark.parametrize(
    ("state", "problem"),
    [
        ("Rojo=1", "lowercase key"),
        ("rojo", "not key=value"),
        ("rojo=a=b", "not printable ASCII"),
        ("rojo=1,rojo=2", "appears twice"),
        (",".join(f"k{i}=v" for i in range(33)), "33 list-members"),
        ("k=" + "v" * 600, "at most 512"),
        (7, "not a string"),
    ],
)
def test_tracestate_problems_do_not_invalidate_the_traceparent(state: object, problem: str) -> None:
    ctx = parse(GOOD, state)
    assert ctx.valid
    assert ctx.tracestate_problem is not None and problem in ctx.tracestate_problem


def test_tracestate_accepts_tenant_keys_and_empty_members() -> None:
    ctx = parse(GOOD, "fw529a3039@dt=d4cda95b652f4a1592b449d5929fda1b, ,rojo=00f067aa0ba902b7")
    assert ctx.tracestate_problem is None


def test_extract_reads_params_meta_only() -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "m", "params": {"_meta": {"traceparent": GOOD}}}
    ctx = extract(message)
    assert ctx is not None and ctx.trace_id == TRACE
    assert extract({"jsonrpc": "2.0", "id": 1, "result": {"_meta": {"traceparent": GOOD}}}) is None
    assert extract({"params": {"_meta": {"tracestate": "a=b"}}}) is None
    assert extract({"params": {"_meta": "x"}}) is None
    assert extract({"params": []}) is None
    assert extract([message]) is None
    assert extract(None) is None


def test_hostile_value_is_bounded() -> None:
    ctx = parse("00-" + "a" * 10_000_000)
    assert not ctx.valid and len(ctx.text) == 512


def test_slim_keeps_ids_and_problem_only() -> None:
    from mcpsniff.core.trace_context import slim

    ctx = slim(parse(GOOD, "rojo=" + "x" * 200))
    assert (ctx.trace_id, ctx.parent_id, ctx.flags, ctx.text, ctx.tracestate) == (
        TRACE,
        PARENT,
        1,
        "",
        None,
    )
    bad = slim(parse("z" * 500))
    assert bad.problem == "version is not 2 lowercase hex digits" and bad.text == ""


# --------------------------------------------------------------------------- W3C Baggage


@pytest.mark.parametrize(
    "value",
    [
        "userId=alice,serverNode=DF%2028,isProduction=false",
        "key1 = value1 , key2=v;prop;prop2=x",
        "k=",
    ],
)
def test_valid_baggage(value: str) -> None:
    from mcpsniff.core.trace_context import baggage_problem

    assert baggage_problem(value) is None


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("", "not key=value"),
        ("user name=alice", "token key"),
        ("k=a b", "does not allow"),
        ("k=é", "does not allow"),
        ("k=v;bad prop", "property"),
        (",".join(f"k{i}=v" for i in range(65)), "65 list-members"),
        ("k=" + "v" * 9000, "8192 bytes"),
        (["k=v"], "not a string"),
    ],
)
def test_invalid_baggage(value: object, words: str) -> None:
    from mcpsniff.core.trace_context import baggage_problem

    assert words in (baggage_problem(value) or "")
