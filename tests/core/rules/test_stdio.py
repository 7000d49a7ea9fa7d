"""rules/stdio.py: one root JR-PARSE finding per cause, dependents linked to it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcpsniff.core.rules import stdio
from tests.core.rules.dsl import Proof, assert_cause, assert_proof, c, end, play, req, res, s

PING = req(1, "ping")
PRETTY_REPLY = (json.dumps(res(1, {}), indent=2) + "\n").encode()
ONE_LINE_REPLY = (json.dumps(res(1, {})) + "\n").encode()


def pretty(value: Any) -> bytes:
    return (json.dumps(value, indent=2) + "\n").encode()


PROOFS = [
    Proof(
        "JR-PARSE", fire=[c(b'{"jsonrpc": "2.0", "id": 1, "method": "ping",}\n')], miss=[c(PING)]
    ),
    Proof(
        "STDIO-STDOUT-CLEAN",
        fire=[c(PING), s(b"Loading model...\n")],
        miss=[c(PING), s(ONE_LINE_REPLY)],
    ),
    Proof("STDIO-STDIN-CLEAN", fire=[c(b"hello server\n")], miss=[c(PING)]),
    Proof("STDIO-FRAMING", fire=[c(PING), s(PRETTY_REPLY)], miss=[c(PING), s(ONE_LINE_REPLY)]),
    Proof(
        "STDIO-UTF8",
        fire=[c(b'{"jsonrpc": "2.0", "method": "notifications/x\xff\xfe"}\n')],
        miss=[c('{"jsonrpc": "2.0", "method": "notifications/x\u00e9"}\n'.encode())],
    ),
]


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


def test_every_stdio_rule_is_proven() -> None:
    assert sorted(p.rule for p in PROOFS) == sorted(stdio.RULES)


def test_a_pretty_printed_reply_is_one_root_finding_with_its_line_count() -> None:
    reply = pretty(res(1, {"tools": [{"name": "a", "inputSchema": {"type": "object"}}]}))
    lines = reply.count(b"\n")
    convo = play(Proof("-", [], []), [c(req(1, "tools/list")), s(reply), end()])
    assert sorted(convo.rules()) == ["JR-PARSE", "STDIO-FRAMING", "STDIO-STDOUT-CLEAN"]
    (root,) = convo.find("JR-PARSE")
    assert root.data["lines"] == lines and root.data["complete"] is True
    assert root.data["answers"] == 4 and root.data["request_method"] == "tools/list"
    assert "its reply to tools/list (id 1, seq 4)" in root.message
    assert len(root.seq) == lines
    for dependent in (*convo.find("STDIO-FRAMING"), *convo.find("STDIO-STDOUT-CLEAN")):
        assert dependent.data["caused_by"] == {"rule": "JR-PARSE", "seq": root.seq[0]}
    # The request was answered, unreadably: not "never answered".
    assert convo.find("JR-RESP-REQUIRED") == []


def test_every_line_still_has_its_frame_and_message_record() -> None:
    convo = play(Proof("-", [], []), [c(PING), s(PRETTY_REPLY)])
    unparseable = [m for m in convo.messages if m.kind == "unparseable"]
    assert len(unparseable) == PRETTY_REPLY.count(b"\n")


def test_an_unclosed_run_is_reported_when_the_next_message_comes() -> None:
    head = b'{\n  "jsonrpc": "2.0",\n  "id": 1,\n'
    convo = play(Proof("-", [], []), [c(PING), s(head), s(ONE_LINE_REPLY)])
    (root,) = convo.find("JR-PARSE")
    assert root.data["lines"] == 3 and root.data["complete"] is False
    assert "never closed" in root.message
    # the one-line reply that followed answered the request normally
    assert [m.answers for m in convo.messages if m.kind == "response" and m.id == 1] == [4]


def test_an_unclosed_run_is_reported_at_session_end() -> None:
    convo = play(Proof("-", [], []), [c(PING), s(b'{\n  "jsonrpc": "2.0",\n'), end()])
    (root,) = convo.find("JR-PARSE")
    assert root.data["lines"] == 2
    assert len(convo.find("JR-RESP-REQUIRED")) == 1


def test_a_line_that_parses_alone_inside_a_run_stays_in_it() -> None:
    # `  "b"` and `  2` are valid JSON on their own, but inside the run they are lines of it.
    text = (
        b'{\n  "jsonrpc": "2.0",\n  "method": "notifications/x",\n'
        b'  "params": {\n  "a": [\n  "b",\n  2\n  ]\n  }\n}\n'
    )
    convo = play(Proof("-", [], []), [c(text)])
    assert sorted(convo.rules()) == ["JR-PARSE", "STDIO-FRAMING", "STDIO-STDIN-CLEAN"]
    (root,) = convo.find("JR-PARSE")
    assert root.data["complete"] is True and root.data["method"] == "notifications/x"


def test_two_pretty_printed_messages_are_two_runs() -> None:
    convo = play(
        Proof("-", [], []),
        [c(req(1, "ping")), c(req(2, "ping")), s(pretty(res(1, {}))), s(pretty(res(2, {})))],
    )
    assert [f.data["answers"] for f in convo.find("JR-PARSE")] == [4, 5]


def test_a_run_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stdio, "MAX_RUN_BYTES", 64)
    monkeypatch.setattr(stdio, "MAX_RUN_SEQS", 5)
    value = res(1, {"items": list(range(40))})
    convo = play(Proof("-", [], []), [c(PING), s(pretty(value)), end()])
    (root,) = convo.find("JR-PARSE")
    assert root.data["lines"] == pretty(value).count(b"\n")
    assert len(root.seq) == 5 and root.data["complete"] is False


# --------------------------------------------------------------------------- causes


@pytest.mark.parametrize(
    ("line", "cause", "dependent"),
    [
        (b'{"jsonrpc": "2.0", "id": 1, "result": {"v": NaN}}\n', "nan-infinity", None),
        (b'{"jsonrpc": "2.0", "id": 1, "result": {"v": -Infinity}}\n', "nan-infinity", None),
        (b'{"jsonrpc": "2.0", "id": 1, // one\n', "comment", None),
        (b'{"jsonrpc": "2.0", "id": 1, "result": {"t": "a\tb"}}\n', "control-character", None),
        (
            '{"jsonrpc":"2.0","id":1,"result":{}}\n'.encode("utf-16-le"),
            "utf16-no-bom",
            "STDIO-UTF8",
        ),
        (
            b'{"jsonrpc": "2.0", "id": 1, "result": {"t": "\xed\xa0\x80"}}\n',
            "lone-surrogate",
            "STDIO-UTF8",
        ),
    ],
)
def test_each_parse_cause_is_named_with_its_stdio_rule(
    line: bytes, cause: str, dependent: str | None
) -> None:
    convo = play(Proof("-", [], []), [c(PING), s(line)])
    (root,) = convo.find("JR-PARSE")
    assert root.data["cause"] == cause
    expected = {"JR-PARSE", "STDIO-STDOUT-CLEAN"} | ({dependent} if dependent else set())
    assert set(convo.rules()) == expected
    for rule in expected - {"JR-PARSE"}:
        assert convo.find(rule)[0].data["caused_by"] == {"rule": "JR-PARSE", "seq": root.seq[0]}


def test_a_message_split_by_a_raw_newline_in_a_string_is_one_finding() -> None:
    first = b'{"jsonrpc": "2.0", "id": 1, "result": {"t": "line one\n'
    second = b'line two"}}\n'
    convo = play(Proof("-", [], []), [c(PING), s(first + second), end()])
    assert sorted(convo.rules()) == ["JR-PARSE", "STDIO-FRAMING", "STDIO-STDOUT-CLEAN"]
    (root,) = convo.find("JR-PARSE")
    assert root.data["cause"] == "split-string" and root.data["lines"] == 2
    assert root.data["complete"] is True and root.data["answers"] == 4


def test_a_line_cut_inside_a_string_with_nothing_after_is_truncated() -> None:
    cut = b'{"jsonrpc": "2.0", "id": 1, "result": {"t": "line one\n'
    convo = play(Proof("-", [], []), [c(PING), s(cut), s(ONE_LINE_REPLY)])
    (root,) = convo.find("JR-PARSE")
    assert root.data["cause"] == "truncated" and "cut off" in root.message
    assert "STDIO-FRAMING" not in convo.rules()


def test_an_integer_id_that_lost_precision_is_its_own_cause() -> None:
    big = 2**53 + 1
    convo = play(
        Proof("-", [], []),
        [c(req(big, "ping")), s(b'{"jsonrpc":"2.0","id":9007199254740992,"result":{}}\n'), end()],
    )
    (finding,) = convo.find("JR-RESP-ID")
    assert finding.data["cause"] == "id-precision"
    assert finding.data["request_id"] == big and finding.data["response_id"] == 2**53
    assert convo.find("JR-RESP-REQUIRED") == []


def test_an_unreadable_one_line_reply_is_linked_to_its_request() -> None:
    bad_reply = b'{"jsonrpc": "2.0", "id": 1, "result": {"v": NaN}}\n'
    convo = play(Proof("-", [], []), [c(PING), s(bad_reply), end()])
    (root,) = convo.find("JR-PARSE")
    assert root.data["answers"] == 4 and root.data["request_method"] == "ping"
    assert "its reply to ping, id 1, seq 4" in root.message
    assert convo.find("JR-RESP-REQUIRED") == []


def test_an_unreadable_frame_naming_no_pending_id_stays_unlinked() -> None:
    stray = b'{"jsonrpc": "2.0", "id": 7, "result": {"v": NaN}}\n'
    convo = play(Proof("-", [], []), [c(PING), s(stray), end()])
    (root,) = convo.find("JR-PARSE")
    assert "answers" not in root.data
    assert len(convo.find("JR-RESP-REQUIRED")) == 1


#: Causes the descriptions name beyond the one each proof fires: (proof, message fragment).
CAUSES = [
    (Proof("JR-PARSE", fire=[c(PING), c(b"\n")], miss=[c(PING)]), "sent an empty line"),
]


@pytest.mark.parametrize(("p", "fragment"), CAUSES, ids=[f for _, f in CAUSES])
def test_each_cause_the_description_names_fires(p: Proof, fragment: str) -> None:
    assert_cause(p, fragment)
