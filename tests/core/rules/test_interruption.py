"""rules/interruption.py: a request in flight when the session was stopped is not unanswered."""

from __future__ import annotations

from typing import Any

from mcpsniff.core.model import EventRecord
from tests.core.rules.dsl import Proof, c, end, play, req, res, s

CALL = req(1, "tools/call", {"name": "slow", "arguments": {}})


def event(name: str, **data: Any) -> tuple[str, Any]:
    return ("event", (name, data))


def _unanswered(steps: list[tuple[str, Any]]) -> list[tuple[str, str, str]]:
    convo = play(Proof("JR-RESP-REQUIRED", fire=steps, miss=[]), steps)
    return [
        (f.severity, str(f.data.get("cause")), f.message) for f in convo.find("JR-RESP-REQUIRED")
    ]


def test_a_forwarded_ctrl_c_makes_the_request_in_flight_info_with_the_reason() -> None:
    ((severity, cause, message),) = _unanswered([c(CALL), event("signal", signal="SIGINT"), end()])
    assert (severity, cause) == ("info", "interrupted")
    assert "request 1 (tools/call, seq" in message
    assert "still in flight" in message and "forwarded SIGINT (Ctrl-C)" in message


def test_a_server_killed_by_a_signal_is_interrupted() -> None:
    steps = [c(CALL), event("exit", returncode=-9, status=137, signal="SIGKILL"), end()]
    ((severity, cause, message),) = _unanswered(steps)
    assert (severity, cause) == ("info", "interrupted")
    assert message.endswith("the server was killed by SIGKILL")


def test_a_stopped_http_proxy_is_interrupted() -> None:
    steps = [c(CALL), event("http-end", exchange=3, outcome="proxy-stopped"), end()]
    ((severity, _, message),) = _unanswered(steps)
    assert severity == "info" and "mcpsniff http was stopped" in message


def test_a_trace_without_session_end_leaves_requests_in_flight() -> None:
    steps = [c(CALL), ("event", ("session-end", {"synthetic": True, "reason": "x"}))]
    ((severity, cause, message),) = _unanswered(steps)
    assert (severity, cause) == ("info", "in-flight")
    assert "the trace has no session-end" in message


def test_near_miss_a_server_that_exits_by_itself_leaves_the_request_unanswered() -> None:
    """A crash (exit status 1) is the server's failure to answer: still an error."""
    steps = [c(CALL), event("exit", returncode=1, status=1), end()]
    ((severity, cause, message),) = _unanswered(steps)
    assert (severity, cause) == ("error", "None")
    assert "was never answered" in message


def test_near_miss_an_answered_request_is_not_reported_after_a_signal() -> None:
    assert (
        _unanswered([c(CALL), s(res(1, {"content": []})), event("signal", signal="SIGINT"), end()])
        == []
    )


def test_a_signal_after_the_end_changes_nothing() -> None:
    convo = play(Proof("JR-RESP-REQUIRED", fire=[], miss=[]), [c(CALL), end()])
    (finding,) = convo.find("JR-RESP-REQUIRED")
    assert finding.severity == "error"
    late = convo.session.apply_event(
        EventRecord(99, 2000.0, "test", "signal", {"signal": "SIGINT"})
    )
    assert [type(r) for r in late] == [EventRecord]


def test_hostile_event_fields_give_a_plain_reason() -> None:
    steps = [c(CALL), event("signal", signal=["x"]), end()]
    ((severity, _, message),) = _unanswered(steps)
    assert severity == "info" and message.endswith("mcpsniff forwarded a signal to the server")
    steps = [c(CALL), event("exit", returncode="-9", signal=None), end()]
    assert _unanswered(steps)[0][0] == "error"


def test_near_miss_a_salvaged_end_is_no_interruption() -> None:
    """The relay completed a trace whose analysis died: it kept forwarding, so a request
    no capture gap can answer is still unanswered."""
    salvaged = {"reason": "the analysis process was killed; the relay ended the session"}
    steps = [c(CALL), ("event", ("session-end", {**salvaged, "salvaged": True}))]
    ((severity, _, message),) = _unanswered(steps)
    assert severity == "error" and "was never answered" in message
