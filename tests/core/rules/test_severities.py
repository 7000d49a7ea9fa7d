"""The severities ``mcpsniff rules`` lists are the ones the findings carry.

Two checks that can fail: the table against the sources (every
``Session.report`` call's ``severity=``, or the catalogue's where it has
none), and against what the firing and near-miss scripts of every rule emit.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import orjson
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core import catalog
from mcpsniff.core.rules import IMPLEMENTED
from mcpsniff.core.rules.severities import OVERRIDES, severities
from tests.core.rules.dsl import play
from tests.core.rules.test_registry import all_proofs

CORE = Path(__file__).resolve().parents[3] / "mcpsniff" / "core"


def _catalogue(rule_id: str) -> set[str]:
    entry = catalog.get(rule_id)
    return {entry.default_severity, *(entry.severity_for(v) for v in entry.versions)}


def _literals(node: ast.expr) -> list[object] | None:
    """The values a literal or a conditional of literals can take; None for anything else."""
    if isinstance(node, ast.Constant):
        return [node.value]
    if isinstance(node, ast.IfExp):
        body, orelse = _literals(node.body), _literals(node.orelse)
        return None if body is None or orelse is None else body + orelse
    return None


def _report_sites() -> tuple[dict[str, set[str]], set[str]]:
    """Per rule id named literally in a ``.report(`` call: the severities its calls give.

    And the rules whose ``severity=`` is computed (not a literal).
    """
    carried: dict[str, set[str]] = defaultdict(set)
    computed: set[str] = set()
    for path in sorted(CORE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "report"
                and node.args
            ):
                continue
            ids = _literals(node.args[0])
            if ids is None:
                continue  # an id from a table: the catalogue's severity (no keyword)
            given = [k.value for k in node.keywords if k.arg == "severity"]
            for rule_id in map(str, ids):
                values = [None] if not given else _literals(given[0])
                if values is None:
                    computed.add(rule_id)
                    continue
                for value in values:
                    carried[rule_id] |= _catalogue(rule_id) if value is None else {str(value)}
    return carried, computed


def test_the_overrides_are_the_sources_severities() -> None:
    carried, computed = _report_sites()
    assert len(carried) > 150
    explicit = {
        rule_id for rule_id, found in carried.items() if found != _catalogue(rule_id)
    } | computed
    # Every rule reporting a severity other than the catalogue's is in the table...
    assert sorted(explicit - set(OVERRIDES)) == []
    for rule_id, found in carried.items():
        if rule_id in computed:
            assert found <= set(OVERRIDES[rule_id]), rule_id
        else:
            # ... with exactly what its calls give.
            assert set(severities(rule_id)) == found, rule_id
    assert computed == {"GUARD-HIDDEN-DEFINITION", "GUARD-HIDDEN-RESULT"}


def test_every_override_names_a_rule_in_order() -> None:
    for rule_id, listed in OVERRIDES.items():
        assert rule_id in IMPLEMENTED
        assert listed and len(set(listed)) == len(listed)
        assert list(listed) == sorted(listed, key=("error", "warning", "info").index)


def test_every_proof_emits_only_listed_severities() -> None:
    """Each rule's firing and near-miss scripts: every finding's severity is listed."""
    emitted: dict[str, set[str]] = defaultdict(set)
    for proof in all_proofs():
        for steps, near in ((proof.fire, False), (proof.miss, True)):
            for finding in play(proof, steps, near=near).findings:
                emitted[finding.rule].add(finding.severity)
    assert set(IMPLEMENTED) <= set(emitted)
    wrong = {
        rule: (sorted(found), severities(rule))
        for rule, found in emitted.items()
        if not found <= set(severities(rule))
    }
    assert wrong == {}
    # The rules that led to this table: the catalogue's keyword says otherwise.
    assert emitted["PING-PROMPT"] == {"info"} and severities("PING-PROMPT") == ("info",)
    assert severities("LOG-NO-SECRETS") == ("warning",)
    assert catalog.get("LOG-NO-SECRETS").default_severity == "error"


def test_a_version_dependent_rule_lists_each_version_severity() -> None:
    entry = catalog.get("CAP-ROOTS-LISTCHANGED")
    assert {entry.severity_for(v) for v in entry.versions} == {"error", "warning"}
    assert severities("CAP-ROOTS-LISTCHANGED") == ("error", "warning")
    assert severities("JR-RESP-ID") == ("error",)


def test_the_rules_listing_carries_them() -> None:
    output = CliRunner().invoke(main, ["rules", "--format", "json"]).output
    rows = {row["rule"]: row for row in map(orjson.loads, output.splitlines())}
    assert rows["PING-PROMPT"]["severity"] == "info"
    assert rows["PING-PROMPT"]["severities"] == ["info"]
    assert rows["JR-PARSE"]["severities"] == ["error", "info"]
    assert rows["JR-PARSE"]["severity"] == "error"
    for rule_id, row in rows.items():
        assert row["severities"] == list(severities(rule_id))
        assert row["severity"] == row["severities"][0]
    text = CliRunner().invoke(main, ["rules"]).output
    assert any(line.split()[:2] == ["JR-PARSE", "error/info"] for line in text.splitlines())
