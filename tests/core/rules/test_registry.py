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


def test_every_rule_module_declares_its_rules_through_the_registry() -> None:
    """No module reports an id that no registration declares (the session has none)."""
    from mcpsniff.core.rules import MODULES, registry

    declared = set(registry.rule_ids())
    for module in MODULES:
        assert set(getattr(module, "RULES", ())) <= declared, module.__name__
    registered_modules = {entry.fn.__module__ for entry in registry.REGISTERED}
    assert {m.__name__ for m in MODULES} <= registered_modules


def test_the_session_reports_nothing_itself() -> None:
    """Findings come from rule modules: session.py names no catalogue id."""
    import re
    from pathlib import Path

    import mcpsniff.core.session.session as session_module

    source = Path(session_module.__file__).read_text()
    assert re.findall(r'self\.report\(\s*"', source) == []


def test_frame_claims_stop_later_rules() -> None:
    """A line that parses alone inside a pretty-printed run is claimed by stdio, not JR-TOPLEVEL."""
    from mcpsniff.core.rules import registry

    chain = registry.handlers(registry.FRAME, "not-object")
    names = [fn.__module__.rsplit(".", 1)[1] + "." + fn.__name__ for fn in chain]
    assert names == ["stdio.continues_run", "jsonrpc.not_an_object"]
