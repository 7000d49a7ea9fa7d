"""``report --format mermaid``: Mermaid text that a hostile string cannot break."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.ui.mermaid import mermaid_text, session_diagram
from mcpsniff.ui.report import load_model
from tests.ui.support import GALLERY, batch_trace


def test_arrows_batches_latency_and_findings() -> None:
    (session,) = load_model(GALLERY / "out-of-order-batch.jsonl").sessions.values()
    text, left_out = session_diagram(session)
    lines = text.splitlines()
    assert left_out == 0
    assert lines[0] == "sequenceDiagram"
    assert "    C->>S: initialize id=0" in lines
    assert "    S-->>C: initialize id=0 (12.5 ms)" in lines
    assert "    C-)S: notifications/initialized" in lines
    assert lines.count("    rect rgba(128, 128, 128, 0.12)") == 2
    assert lines.count("    end") == 2
    start = lines.index("    S->>C: batch of 3")
    assert lines[start + 1] == "    S-->>C: tools/call add id=3 (12.5 ms)"

    (polluted,) = load_model(GALLERY / "stdout-pollution.jsonl").sessions.values()
    text, _ = session_diagram(polluted)
    assert "    S-xC: unparseable\n    Note right of S: error JR-PARSE\n" in text


def test_a_window_of_sequence_numbers() -> None:
    (session,) = load_model(GALLERY / "clean-2025-11-25.jsonl").sessions.values()
    messages = [r for r in session.all_rows() if r["kind"] != "event"]
    first, last = messages[2]["seq"], messages[4]["seq"]
    text, left_out = session_diagram(session, first, last)
    arrows = [line for line in text.splitlines() if ":" in line and "Note" not in line]
    assert len(arrows) == 5 - 2 + 0  # three messages, plus the two participant lines
    assert left_out == len(messages) - 3
    assert "Note over C,S: … 2 earlier messages" in text
    assert f"Note over C,S: … {len(messages) - 5} more messages" in text


def test_hostile_text_becomes_entity_codes() -> None:
    hostile = "a;b#c<script>x</script>\n  C->>S: forged%%{init}"
    text = mermaid_text(hostile, 500)
    assert "\n" not in text and "<" not in text and ">" not in text and ":" not in text
    assert text.startswith("a#59;b#35;c#60;script#62;")


def test_cli_writes_mermaid_to_stdout_or_a_file(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(
        main, ["report", str(GALLERY / "stdout-pollution.jsonl"), "--format", "mermaid"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("sequenceDiagram\n")
    out = tmp_path / "d.mmd"
    result = runner.invoke(
        main,
        ["report", str(GALLERY / "stdout-pollution.jsonl"), "--format", "mermaid", "-o", str(out)],
    )
    assert result.exit_code == 0
    assert out.read_text().startswith("sequenceDiagram\n")
    missing = runner.invoke(main, ["report", str(tmp_path / "nope.jsonl")])
    assert missing.exit_code == 2
    assert missing.output == f"mcpsniff report: {tmp_path / 'nope.jsonl'}: no such file\n"


def test_report_never_overwrites_its_trace(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_bytes((GALLERY / "stdout-pollution.jsonl").read_bytes())
    result = CliRunner().invoke(main, ["report", str(trace), "-o", str(trace)])
    assert result.exit_code == 2 and "is the trace itself" in result.output
    assert trace.read_bytes() == (GALLERY / "stdout-pollution.jsonl").read_bytes()
    bad = CliRunner().invoke(main, ["report", str(trace), "--filter", "latency > fast"])
    assert bad.exit_code == 2 and "bad duration" in bad.output


# The diagram draws a batch's elements whatever the version (see test_model.py).


def test_the_mermaid_diagram_draws_the_elements(tmp_path: Path) -> None:
    path = batch_trace(tmp_path / "t.jsonl", "2025-06-18")
    result = CliRunner().invoke(main, ["report", str(path), "--format", "mermaid"])
    assert result.exit_code == 0, result.output
    assert "batch of 2" in result.output
    assert "tools/list id=2" in result.output
