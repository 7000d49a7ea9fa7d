"""core/session/base.py: a session's output, and how rules add to it."""

from __future__ import annotations

from mcpsniff.core.model import FindingRecord
from tests.conftest import Conversation


def test_findings_have_the_required_fields(convo: Conversation) -> None:
    convo.client(b"Loading model...\n")
    for finding in convo.findings:
        assert isinstance(finding, FindingRecord)
        assert finding.severity in ("error", "warning", "info")
        assert finding.message and finding.seq and finding.session == "test"
