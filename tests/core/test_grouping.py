"""core/grouping.py: repeats fold into one group, dependents sit under their root."""

from __future__ import annotations

from mcpsniff.core.grouping import group_findings
from mcpsniff.core.model import FindingRecord
from mcpsniff.terminal.render import Style, report_lines
from tests.conftest import Conversation, request, result


def finding(rule: str, seqs: list[int], **data: object) -> FindingRecord:
    return FindingRecord(rule, "error", f"{rule} at {seqs}", "s", seqs, dict(data))


def test_repeats_of_one_mistake_fold_with_count_and_span() -> None:
    items = [finding("JR-RESP-ID", [q, q + 1], cause="id-type") for q in range(5, 29, 2)]
    items.insert(3, finding("JR-RESP-ID", [40], cause="unknown-id"))
    groups = group_findings(items)
    assert [(g.first.rule, g.first.data["cause"], g.count) for g in groups] == [
        ("JR-RESP-ID", "id-type", 12),
        ("JR-RESP-ID", "unknown-id", 1),
    ]
    assert groups[0].span() == "seq 5..28"
    assert groups[0].first is items[0]


def test_dependents_attach_to_their_root_whatever_the_order() -> None:
    root = finding("JR-PARSE", [2, 3, 4], cause="pretty-printed")
    framing = finding("STDIO-FRAMING", [2, 3, 4], caused_by={"rule": "JR-PARSE", "seq": 2})
    clean = finding("STDIO-STDOUT-CLEAN", [2], caused_by={"rule": "JR-PARSE", "seq": 2})
    (group,) = group_findings([framing, root, clean])
    assert group.first is root and group.dependents == [framing, clean]


def test_a_dependent_whose_root_is_filtered_out_stands_alone() -> None:
    orphan = finding("STDIO-FRAMING", [9], caused_by={"rule": "JR-PARSE", "seq": 9})
    (group,) = group_findings([orphan])
    assert group.first is orphan and group.dependents == []


def test_malformed_caused_by_is_an_ordinary_finding() -> None:
    odd = finding("STDIO-FRAMING", [9], caused_by={"rule": 3, "seq": "x"})
    (group,) = group_findings([odd])
    assert group.first is odd


def test_text_report_of_a_server_that_echoes_every_id_as_a_string() -> None:
    convo = Conversation()
    convo.handshake()
    for i in range(1, 12):
        convo.client(request(i, "ping"))
        convo.server(result(str(i), {}))
    findings = convo.find("JR-RESP-ID")
    assert len(findings) == 11
    lines = [str(line) for line in report_lines({"s": findings}, Style(False))]
    first, last = findings[0].seq[0], findings[-1].seq[-1]
    assert any(f"JR-RESP-ID  11 times, seq {first}..{last}" in line for line in lines)
    assert sum("JR-RESP-ID" in line for line in lines) == 1
