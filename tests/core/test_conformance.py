"""The mapping from rules to the conformance suite's check ids (core/conformance.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcpsniff.core import conformance
from mcpsniff.core.rules import IMPLEMENTED

REPO = Path(__file__).resolve().parents[2]
SUITE_DIST = (
    REPO
    / ".peers"
    / "conformance-next"
    / "node_modules"
    / "@modelcontextprotocol"
    / "conformance"
    / "dist"
)


def test_every_mapped_rule_is_implemented() -> None:
    assert conformance.mapped_rules() <= set(IMPLEMENTED)
    assert len(conformance.mapped_rules()) >= 40


def test_a_rule_without_a_counterpart_maps_to_nothing() -> None:
    assert conformance.checks_for("JR-BATCH-EMPTY") == ()
    assert conformance.checks_for("NO-SUCH-RULE") == ()
    assert "sep-2164-no-empty-contents" in conformance.checks_for("MOD-RES-NOT-FOUND")


def test_every_check_id_is_one_the_suite_reports() -> None:
    """Each id is a literal in the suite's shipped code (the pinned release)."""
    bundles = sorted(SUITE_DIST.glob("**/*.js")) if SUITE_DIST.exists() else []
    if not bundles:
        pytest.skip("the conformance suite is not installed; run scripts/setup-peers.sh")
    assert conformance.suite_version() in (SUITE_DIST.parent / "package.json").read_text()
    code = "\n".join(path.read_text(errors="replace") for path in bundles)
    ids = {check for rule in conformance.mapped_rules() for check in conformance.checks_for(rule)}
    absent = sorted(i for i in ids if not any(f"{q}{i}{q}" in code for q in "'\"`"))
    assert absent == []


def test_rules_json_lists_the_checks() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mcpsniff", "rules", "--format", "json"],
        cwd=REPO,
        capture_output=True,
        check=True,
        timeout=60,
    )
    rules = {r["rule"]: r for r in map(json.loads, proc.stdout.splitlines())}
    assert rules["MOD-UNSUPPORTED-VERSION"]["conformance"] == [
        "sep-2575-server-unsupported-version-error",
        "sep-2575-http-server-unsupported-version-400",
        "sep-2575-client-retry-supported-version",
    ]
    assert rules["JR-BATCH-EMPTY"]["conformance"] == []
    assert all(isinstance(r["conformance"], list) for r in rules.values())
