"""core/session/base.py: a session's output, and how rules add to it."""

from __future__ import annotations

from mcpsniff.core.model import C2S, EventRecord, FindingRecord, MessageRecord
from tests.conftest import Conversation


def test_findings_have_the_required_fields(convo: Conversation) -> None:
    convo.client(b"Loading model...\n")
    for finding in convo.findings:
        assert isinstance(finding, FindingRecord)
        assert finding.severity in ("error", "warning", "info")
        assert finding.message and finding.seq and finding.session == "test"


def test_a_record_emitted_by_a_rule_that_is_not_a_message_counts_as_notable() -> None:
    from mcpsniff.core.session import Session

    session = Session("s")
    session.output = []
    session.emit(EventRecord(1, 0.0, "s", "something", {}))
    assert session.notable == 1
    session.emit(MessageRecord(2, "s", C2S, "request"))
    assert session.notable == 1
