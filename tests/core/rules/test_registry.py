"""Every implemented rule has a firing proof and a near miss under tests/core/rules/.

Each ``test_<module>.py`` here exports ``PROOFS`` (``dsl.Proof``). This test
collects them all and compares them with the analyzer's ``IMPLEMENTED`` ids.
Rules still without a proof are listed in ``NOT_YET_PROVEN``; the list must
be exact, so adding a proof forces its rule off the list, and a new rule
without a proof fails here.
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


def test_every_rule_without_a_proof_is_listed() -> None:
    proven = {p.rule for p in all_proofs()}
    assert sorted(set(IMPLEMENTED) - proven) == sorted(NOT_YET_PROVEN)


#: Rules whose proof pair is still to be written (issue 14). Shrinks, never grows.
NOT_YET_PROVEN = (
    "HTTP-POST-ACCEPT",
    "HTTP-GET-ACCEPT",
    "HTTP-GET-REPLY",
    "HTTP-202",
    "HTTP-REQ-CONTENT-TYPE",
    "HTTP-SESSION-CHARS",
    "HTTP-SESSION-ECHO",
    "HTTP-SESSION-404",
    "HTTP-PROTO-HEADER",
    "HTTP-PROTO-HEADER-VALUE",
    "HTTP-EVENT-ID-UNIQUE",
    "SSE-ENDPOINT-EVENT",
    "MOD-HTTP-STD-HEADERS",
    "MOD-HTTP-PROTO-HEADER",
)
