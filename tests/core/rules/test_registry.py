"""Every implemented rule has a firing proof and a near miss under tests/core/rules/.

Each ``test_<module>.py`` here exports ``PROOFS`` (``dsl.Proof``). This test
collects them all and compares them with the analyzer's ``IMPLEMENTED`` ids.
A new rule without a proof fails here.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path
from typing import Any

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


def _session_modules() -> list[Path]:
    import mcpsniff.core.session as session_package

    return sorted(Path(session_package.__file__).parent.glob("*.py"))


def test_the_session_reports_nothing_itself() -> None:
    """Findings come from rule modules: no module of core/session/ names a catalogue id."""
    modules = _session_modules()
    assert len(modules) >= 7
    for module in modules:
        source = module.read_text()
        assert re.findall(r'(self|session)\.report\(\s*"', source) == [], module.name


def test_the_session_imports_no_rule_module_but_the_registry() -> None:
    """Rules reach the session through the registry only (no cycle session <-> rules)."""
    for module in _session_modules():
        tree = ast.parse(module.read_text())
        imported: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "mcpsniff.core.rules":
                imported.update(f"{node.module}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
        rules = {name for name in imported if name.startswith("mcpsniff.core.rules")}
        assert rules <= {"mcpsniff.core.rules.registry"}, module.name


def test_frame_claims_stop_later_rules() -> None:
    """A line that parses alone inside a pretty-printed run is claimed by stdio, not JR-TOPLEVEL."""
    from mcpsniff.core.rules import registry

    chain = registry.handlers(registry.FRAME, "not-object")
    names = [fn.__module__.rsplit(".", 1)[1] + "." + fn.__name__ for fn in chain]
    assert names == ["stdio.continues_run", "jsonrpc.not_an_object"]


def test_every_reported_rule_is_in_the_catalogue_and_registry() -> None:
    import re
    from pathlib import Path

    from mcpsniff.core import catalog
    from mcpsniff.core.rules import IMPLEMENTED

    root = Path(__file__).resolve().parents[3] / "mcpsniff" / "core"
    source = "\n".join(p.read_text() for p in root.rglob("*.py"))
    assert "def report(" in source  # the sources were found
    used = set(
        re.findall(
            r'"((?:JR|MSG|LC|CAP|MOD|TOOL|RES|PROMPT|LOG|COMPL|PAGE|PING|ROOTS|'
            r'SAMP|ELIC|CANCEL|PROG|STDIO|HTTP|SSE)-[A-Z0-9-]+)"',
            source,
        )
    )
    assert used <= set(IMPLEMENTED) | {"MOD-STDIO-PROBE"}
    for rule in IMPLEMENTED:
        catalog.get(rule)
    families = ("JR-", "MSG-", "LC-", "CAP-")
    assert len(IMPLEMENTED) >= 80
    assert len([r for r in IMPLEMENTED if r.startswith(families)]) >= 50


def _verdicts(proofs: list[Proof]) -> list[list[tuple[str, str, list[int]]]]:
    from tests.core.rules.dsl import play

    found = []
    for proof in proofs:
        for steps, near in ((proof.fire, False), (proof.miss, True)):
            convo = play(proof, steps, near=near)
            found.append([(f.rule, f.message, f.seq) for f in convo.findings])
    return found


def test_modern_rules_are_silent_in_legacy_sessions(monkeypatch: Any) -> None:
    """Leaving the ``modern`` rules out of legacy sessions changes no verdict.

    Every proof is played twice: with the legacy dispatch tables, and with every
    rule in every table; the findings are the same, message for message.
    """
    from mcpsniff.core.rules import registry

    modern = [entry for entry in registry.REGISTERED if entry.modern]
    assert len(modern) >= 10
    proofs = all_proofs()
    skipping = _verdicts(proofs)
    assert _verdicts_with_every_entry(monkeypatch, proofs, modern=False) == skipping


def _verdicts_with_every_entry(monkeypatch: Any, proofs: Any, **changes: Any) -> Any:
    """``_verdicts(proofs)`` with ``changes`` made to every rule; the registry then restored."""
    import dataclasses

    from mcpsniff.core.rules import registry

    everything = [dataclasses.replace(entry, **changes) for entry in registry.REGISTERED]
    monkeypatch.setattr(registry, "REGISTERED", everything)
    registry.clear_tables()
    try:
        return _verdicts(proofs)
    finally:
        monkeypatch.undo()
        registry.clear_tables()


def test_armed_rules_change_no_verdict(monkeypatch: Any) -> None:
    """Leaving the ``armed_by`` rules out until armed changes no verdict.

    Every proof is played twice: as the session dispatches, and with every
    armed rule in every table from the first message; the same findings.
    """
    from mcpsniff.core.rules import registry

    armed = [entry for entry in registry.REGISTERED if entry.armed_by is not None]
    assert [entry.fn.__name__ for entry in armed] == ["retry"]
    proofs = all_proofs()
    gated = _verdicts(proofs)
    assert _verdicts_with_every_entry(monkeypatch, proofs, armed_by=None) == gated


def test_an_unarmed_session_leaves_armed_rules_out() -> None:
    from mcpsniff.core.rules import registry
    from mcpsniff.core.rules.negotiation import retry
    from mcpsniff.core.session import dispatch

    for legacy in (False, True):
        assert retry not in registry.handlers(registry.REQUEST, "tools/list", legacy=legacy)
        assert retry not in dispatch.REQUEST_HANDLERS["tools/list"]
        for keys in (frozenset({"version_retries"}), frozenset({"version_retries", "other"})):
            found = registry.handlers(registry.REQUEST, "tools/list", legacy=legacy, armed=keys)
            assert retry in found
        other = registry.handlers(
            registry.REQUEST, "tools/list", legacy=legacy, armed=frozenset({"other"})
        )
        assert retry not in other


def test_only_request_rules_can_be_armed() -> None:
    import pytest

    from mcpsniff.core.rules import registry

    with pytest.raises(ValueError, match="only a REQUEST rule"):
        registry.rule("MOD-UNSUPPORTED-VERSION", on=registry.RESPONSE, armed_by="x")


def test_a_legacy_session_reads_the_legacy_tables() -> None:
    from mcpsniff.core.rules import registry
    from mcpsniff.core.rules.removed import request as removed_request

    assert removed_request in registry.handlers(registry.REQUEST, "tools/call")
    assert removed_request not in registry.handlers(registry.REQUEST, "tools/call", legacy=True)


def test_legacy_tables_hold_a_result_rule_without_its_stateless_guard() -> None:
    """``legacy_fn`` stands in the legacy tables only, in the rule's place: the wrapped rule."""
    from mcpsniff.core.rules import methods, registry

    swapped = [entry for entry in registry.REGISTERED if entry.legacy_fn is not None]
    assert {entry.legacy_fn for entry in swapped} >= {
        methods._resources_read,
        methods._prompts_get_result,
        methods._next_cursor,
    }
    for entry in swapped:
        assert entry.fn.__wrapped__ is entry.legacy_fn  # type: ignore[attr-defined]
        for key in entry.methods or ():
            modern = registry.handlers(entry.on, key)
            legacy = registry.handlers(entry.on, key, legacy=True)
            assert entry.fn in modern and entry.legacy_fn not in modern
            assert entry.legacy_fn in legacy and entry.fn not in legacy


def test_a_legacy_session_keeps_the_result_rules_findings() -> None:
    """The same input_required-free result, judged through either table: the same finding."""
    from tests.conftest import Conversation, request, result

    for version in ("2025-11-25", "2025-06-18"):
        convo = Conversation()
        convo.handshake(version)
        assert convo.session.state.legacy
        convo.client(request(5, "resources/read", {"uri": "file:///a"}))
        convo.server(result(5, {"contents": "nope"}))
        assert len(convo.find("RES-READ-SHAPE")) == 1
