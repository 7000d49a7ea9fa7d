"""Which checks of the official MCP conformance suite each rule covers.

The suite (``@modelcontextprotocol/conformance``) grades an implementation by
running scenarios against it; mcpsniff judges recorded traffic. Where both test
the same spec statement, ``conformance.json`` (next to this module) names the
suite's check ids under the rule, so that a failed check can be looked up in
``mcpsniff rules --format json`` and a finding traced to the suite's verdict.
"""

from __future__ import annotations

import json
from functools import cache

from mcpsniff.core.package_data import read_text

#: The suite release whose check ids the mapping uses.
SUITE = "@modelcontextprotocol/conformance"


@cache
def _mapping() -> dict[str, tuple[str, ...]]:
    text = read_text("conformance.json")
    rules: dict[str, list[str]] = json.loads(text)["rules"]
    return {rule: tuple(checks) for rule, checks in rules.items()}


def suite_version() -> str:
    """The suite release the check ids come from."""
    text = read_text("conformance.json")
    return str(json.loads(text)["version"])


def checks_for(rule_id: str) -> tuple[str, ...]:
    """The conformance check ids ``rule_id`` covers (empty when the suite has none)."""
    return _mapping().get(rule_id, ())


def mapped_rules() -> frozenset[str]:
    """Every rule id the mapping names."""
    return frozenset(_mapping())
