"""The SARIF export's rule objects: the level a rule is listed with is what its findings carry."""

from __future__ import annotations

from pathlib import Path

from mcpsniff.core import catalog
from mcpsniff.core.model import FindingRecord
from mcpsniff.core.rules.severities import severities
from mcpsniff.export.sarif import sarif_log


def _rules(*findings: FindingRecord) -> dict[str, dict]:
    log = sarif_log(findings, Path("trace.jsonl"), {})
    return {rule["id"]: rule for rule in log["runs"][0]["tool"]["driver"]["rules"]}


def test_default_level_is_the_strongest_severity_the_findings_carry() -> None:
    # LOG-NO-SECRETS rests on a MUST NOT (the catalogue's error) but every
    # finding is a warning; GUARD-HIDDEN-RESULT's are warnings or info.
    assert catalog.get("LOG-NO-SECRETS").default_severity == "error"
    assert severities("LOG-NO-SECRETS") == ("warning",)
    rules = _rules(
        FindingRecord("LOG-NO-SECRETS", "warning", "m", "s", [1]),
        FindingRecord("GUARD-HIDDEN-RESULT", "info", "m", "s", [2]),
        FindingRecord("JR-RESP-ID", "error", "m", "s", [3]),
    )
    assert rules["LOG-NO-SECRETS"]["defaultConfiguration"] == {"level": "warning"}
    assert rules["GUARD-HIDDEN-RESULT"]["defaultConfiguration"] == {"level": "warning"}
    assert rules["JR-RESP-ID"]["defaultConfiguration"] == {"level": "error"}


def test_a_rule_with_several_severities_says_so_in_its_description() -> None:
    rules = _rules(
        FindingRecord("CANCEL-IN-PROGRESS", "info", "m", "s", [1]),
        FindingRecord("JR-PARSE", "info", "m", "s", [2]),
    )
    # One severity (info, where the catalogue says error): no sentence, note level.
    assert rules["CANCEL-IN-PROGRESS"]["defaultConfiguration"] == {"level": "note"}
    assert "reported as" not in rules["CANCEL-IN-PROGRESS"]["fullDescription"]["text"]
    parse = rules["JR-PARSE"]
    assert parse["defaultConfiguration"] == {"level": "error"}
    sentence = "Its findings are reported as error or info, depending on what the finding shows"
    assert sentence in parse["fullDescription"]["text"]
    assert parse["help"]["text"].startswith(parse["fullDescription"]["text"] + "\nSource: ")
