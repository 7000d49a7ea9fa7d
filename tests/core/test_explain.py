"""core/explain.py: the --explain lines and the sentence on a rule's several severities."""

from __future__ import annotations

from mcpsniff.core import catalog
from mcpsniff.core.explain import explain_lines, explanation, severity_note


def test_explain_lines_head_with_the_strongest_severity_the_findings_carry() -> None:
    # ELIC-NO-SENSITIVE: the catalogue's keyword is a MUST NOT (error); the rule
    # reports a name-based guess, always as a warning.
    assert catalog.get("ELIC-NO-SENSITIVE").default_severity == "error"
    lines = explain_lines(["ELIC-NO-SENSITIVE", "JR-RESP-ID"])
    heads = [line for line in lines if not line.startswith(" ")]
    assert heads == ["ELIC-NO-SENSITIVE (warning)", "JR-RESP-ID (error)"]


def test_several_severities_are_named_after_the_paragraph() -> None:
    lines = explain_lines(["GUARD-HIDDEN-DEFINITION"], width=1000)
    assert lines[0] == "GUARD-HIDDEN-DEFINITION (warning)"
    assert lines[1] == "    " + explanation("GUARD-HIDDEN-DEFINITION") + " " + (
        "Its findings are reported as warning or info, depending on what the finding shows; "
        "warning is the level it is listed with."
    )


def test_severity_note() -> None:
    assert severity_note("LOG-NO-SECRETS") == ""  # one severity
    assert "error or warning" in severity_note("HTTP-POST-ACCEPT")
    # Not an override: the catalogue's keyword differs between versions.
    assert severity_note("CAP-TOOLS") == (
        "Its findings are reported as error or warning, depending on the protocol version in "
        "force; error is the level it is listed with."
    )
