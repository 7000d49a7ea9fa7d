"""Every implemented rule has a firing proof and a near miss under tests/core/rules/.

Each ``test_<module>.py`` here exports ``PROOFS`` (``dsl.Proof``). This test
collects them all and compares them with the analyzer's ``IMPLEMENTED`` ids.
A new rule without a proof fails here.
"""

from __future__ import annotations

import importlib
import pkgutil

import tests.core.rules as proofs_package
from mcpsniff.core.rules import IMPLEMENTED
from tests.core.rules.dsl import Proof


def all_proofs() -> list[Proof]:
    """The PROOFS of every module of this package."""
    found: list[Proof] = []
    for info in pkgutil.iter_modules(proofs_package.__path__):
        if not info.name.startswith("test_"):
            continue
        module = importlib.import_module(f"{proofs_package.__name__}.{info.name}")
        found.extend(getattr(module, "PROOFS", []))
    return found


def test_proofs_name_implemented_rules_once() -> None:
    rules = [p.rule for p in all_proofs()]
    assert len(rules) == len(set(rules))
    assert set(rules) <= set(IMPLEMENTED)


def test_every_implemented_rule_has_its_proof() -> None:
    proven = {p.rule for p in all_proofs()}
    assert sorted(set(IMPLEMENTED) - proven) == []
