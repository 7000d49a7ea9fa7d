"""Tests for the rule catalogue (``mcpsniff.core.catalog``) and its generator."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from mcpsniff.core import catalog, explain
from mcpsniff.core.catalog import (
    HANDSHAKE_VERSIONS,
    STATELESS_VERSIONS,
    VERSIONS,
    CatalogEntry,
    all_entries,
    applies_to,
    get,
    severity_for,
)
from mcpsniff.core.spec_links import plain_source

REPO_ROOT = Path(__file__).resolve().parents[2]
GENERATOR = REPO_ROOT / "tools" / "gen_catalog.py"
CATALOG_JSON = REPO_ROOT / "mcpsniff" / "core" / "catalog.json"
RULES_MD_CANDIDATES = (
    Path("/work/shared/reference/mcp-rules.md"),
    REPO_ROOT.parent / "shared" / "reference" / "mcp-rules.md",
)


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_catalog", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)  # dataclasses look the module up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    return _load_generator()


@pytest.fixture(scope="module")
def rules_md() -> str:
    for path in RULES_MD_CANDIDATES:
        if path.is_file():
            return path.read_text(encoding="utf-8")
    pytest.skip("mcp-rules.md not available (shared/reference)")


# --- catalog.py ------------------------------------------------------------


def test_version_constants() -> None:
    assert VERSIONS == ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
    assert VERSIONS[:4] == HANDSHAKE_VERSIONS
    assert STATELESS_VERSIONS == ("2026-07-28",)


ADDED_JSON = REPO_ROOT / "mcpsniff" / "core" / "catalog_added.json"


GUARD_JSON = REPO_ROOT / "mcpsniff" / "core" / "catalog_guard.json"
RESILIENCE_JSON = REPO_ROOT / "mcpsniff" / "core" / "catalog_resilience.json"


def _added() -> dict[str, dict[str, object]]:
    return json.loads(ADDED_JSON.read_text(encoding="utf-8"))


def _guard() -> dict[str, dict[str, object]]:
    return json.loads(GUARD_JSON.read_text(encoding="utf-8"))


def _resilience() -> dict[str, dict[str, object]]:
    return json.loads(RESILIENCE_JSON.read_text(encoding="utf-8"))


def test_count_and_order() -> None:
    """The reference catalogue's 297 rules, then the ones this repository adds, then the guard's."""
    entries = all_entries()
    added = list(_added())
    guard = list(_guard())
    resilience = list(_resilience())
    assert len(entries) == 297 + len(added) + len(guard) + len(resilience)
    assert len({e.id for e in entries}) == len(entries)
    assert entries[0].id == "JR-PARSE"
    assert entries[296].id == "MOD-DEPRECATED"
    assert [e.id for e in entries[297 : 297 + len(added)]] == added
    after_added = 297 + len(added)
    assert [e.id for e in entries[after_added : after_added + len(guard)]] == guard
    assert [e.id for e in entries[after_added + len(guard) :]] == resilience
    assert all(isinstance(e, CatalogEntry) for e in entries)


def test_added_rules_are_whole_entries() -> None:
    """catalog_added.json: the catalogue's fields, known versions, a real source."""
    for rule_id, data in _added().items():
        entry = get(rule_id)
        assert set(data) == {"sev", "versions", "check", "source", "section"}, rule_id
        assert entry.versions and set(entry.versions) <= set(VERSIONS), rule_id
        assert entry.check.startswith("[") and entry.source, rule_id
        assert "<v>" not in entry.source and "S5/" not in entry.source, rule_id
        assert entry.section == "16. Extensions (EXT-*)", rule_id
    assert get("EXT-TASKS-NEGOTIATED").default_severity == "error"
    assert get("EXT-APPS-NEGOTIATED").default_severity == "warning"


def test_resilience_rules_are_whole_entries() -> None:
    """catalog_resilience.json: whole entries, warnings (SHOULD) or notes (INFO), in their own
    section: how a peer copes with mcpsniff's own doing is never an error."""
    for rule_id, data in _resilience().items():
        entry = get(rule_id)
        assert set(data) == {"sev", "versions", "check", "source", "section"}, rule_id
        assert rule_id.startswith("RESIL-") and entry.check.startswith("["), rule_id
        assert entry.default_severity in ("warning", "info"), rule_id
        assert entry.section == "18. Resilience under injected faults (RESIL-*)", rule_id


def test_all_entries_returns_a_copy() -> None:
    entries = all_entries()
    entries.clear()
    assert len(all_entries()) == 297 + len(_added()) + len(_guard()) + len(_resilience())


def test_guard_rules_are_whole_entries_of_every_version() -> None:
    """catalog_guard.json: not protocol rules, so every version has them."""
    for rule_id, data in _guard().items():
        entry = get(rule_id)
        assert rule_id.startswith("GUARD-"), rule_id
        assert set(data) == {"sev", "versions", "check", "source", "section"}, rule_id
        assert entry.versions == VERSIONS, rule_id
        assert entry.check.startswith("[") and entry.source, rule_id
        assert entry.section == "17. Guard (GUARD-*)", rule_id
    assert get("GUARD-PIN").default_severity == "error"
    assert get("GUARD-HIDDEN-DEFINITION").default_severity == "warning"


def test_jr_parse() -> None:
    entry = get("JR-PARSE")
    assert entry.sev == "MUST"
    assert entry.versions == VERSIONS
    assert entry.section.startswith("1.")
    assert entry.section == "1. JSON-RPC 2.0 base rules (JR-*)"
    assert entry.default_severity == "error"
    assert entry.family == "JR"


def test_version_ranges() -> None:
    assert get("MSG-ID-REUSE").versions == HANDSHAKE_VERSIONS
    assert get("MSG-ID-INFLIGHT").versions == ("2026-07-28",)
    assert get("JR-BATCH-EMPTY").versions == ("2025-03-26",)
    assert get("CAP-COMPLETIONS").versions == ("2025-03-26", "2025-06-18", "2025-11-25")
    assert get("MSG-META-KEYS").versions == ("2025-06-18", "2025-11-25", "2026-07-28")
    assert get("AUTH-STATUS-CODES").versions == ("2025-11-25", "2026-07-28")
    # "V3-V5 (V1-V2 `audience`/`priority` only)" (en dashes) -> the main range
    assert get("RES-ANNOTATIONS").versions == ("2025-06-18", "2025-11-25", "2026-07-28")
    assert all(set(e.versions) <= set(VERSIONS) and e.versions for e in all_entries())


def test_sections() -> None:
    assert get("CANCEL-SHAPE").section == "5.1 Cancellation (CANCEL-*)"
    assert get("LC-INIT-FIRST").section == "3. Lifecycle (LC-*)"
    assert get("AUTH-401").section == "9.4 HTTP authorization wire rules (AUTH-*)"
    assert get("MOD-CACHE").section.startswith("11. ")


def test_verbatim_cells() -> None:
    assert get("MSG-PARAMS-OBJECT").sev == "MUST(schema)"
    assert get("CAP-TOOLS").sev == "SHOULD→MUST"
    assert get("CANCEL-HTTP-DISCONNECT").sev == "SHOULD / SHOULD NOT"
    assert get("TOOL-ARGS-SCHEMA").sev == "HEUR (derived SHOULD)"
    assert "`code:-32700`" in get("JR-PARSE").check


def test_escaped_pipe() -> None:
    source = get("MSG-ID-TYPE").source
    assert "RequestId = string | number" in source
    assert "\\|" not in source


def test_empty_cells() -> None:
    entry = get("TOOL-LIST-CHANGED")
    assert entry.sev == "see CAP-LISTCHANGED-SERVER"
    assert entry.check == ""
    assert entry.source == ""
    assert entry.is_cross_reference
    assert entry.default_severity == "info"


@pytest.mark.parametrize(
    ("rule_id", "expected"),
    [
        ("JR-PARSE", "error"),
        ("MSG-ID-NOT-NULL", "error"),  # MUST NOT
        ("MSG-PARAMS-OBJECT", "error"),  # MUST(schema)
        ("JR-ERROR-MSG-SHORT", "warning"),  # SHOULD
        ("JR-ID-NULL", "warning"),  # SHOULD NOT
        ("HTTP-SESSION-ASSIGN", "warning"),  # MAY / HEUR
        ("TOOL-ARGS-SCHEMA", "info"),  # HEUR (derived SHOULD)
        ("MSG-BATCH-V1", "info"),  # HEUR (SHOULD NOT)
        ("JR-BATCH-ORDER", "info"),  # INFO
        ("CAP-TOOLS", "error"),  # SHOULD→MUST: strongest
        ("LC-VERSION-CLIENT", "error"),  # MUST / SHOULD
        ("CANCEL-HTTP-DISCONNECT", "warning"),  # SHOULD / SHOULD NOT
        ("CANCEL-NO-RESPONSE", "warning"),  # SHOULD NOT / INFO
        ("PAGE-END", "error"),  # INFO / MUST
        ("ICON-SAFE-SCHEME", "error"),  # MUST (client) / HEUR (server)
        ("CAP-TASKS", "info"),  # see TASK-*
    ],
)
def test_default_severity(rule_id: str, expected: str) -> None:
    assert get(rule_id).default_severity == expected


def test_severity_for_should_to_must() -> None:
    assert severity_for("CAP-TOOLS", "2024-11-05") == "warning"
    assert severity_for("CAP-TOOLS", "2025-03-26") == "warning"
    assert severity_for("CAP-TOOLS", "2025-06-18") == "error"
    assert severity_for("CAP-TOOLS", "2025-11-25") == "error"
    assert severity_for("CAP-TOOLS", None) == "error"
    assert severity_for("CAP-RES-UPDATED", "2025-03-26") == "warning"
    assert severity_for("CAP-RES-UPDATED", "2025-06-18") == "error"
    assert severity_for("LC-OPERATION-NEGOTIATED", "2024-11-05") == "warning"
    assert severity_for("LC-OPERATION-NEGOTIATED", "2025-03-26") == "warning"
    assert severity_for("LC-OPERATION-NEGOTIATED", "2025-06-18") == "error"
    assert severity_for("LC-OPERATION-NEGOTIATED", "2025-11-25") == "error"
    assert severity_for("LC-OPERATION-NEGOTIATED", None) == "error"


def test_severity_for_version_qualified_parts() -> None:
    # "SHOULD (V4+) / HEUR (V1-V3)"
    assert severity_for("TOOL-NAME-UNIQUE", "2025-06-18") == "info"
    assert severity_for("TOOL-NAME-UNIQUE", "2025-11-25") == "warning"
    assert severity_for("TOOL-NAME-UNIQUE", "2026-07-28") == "warning"
    assert get("TOOL-NAME-UNIQUE").default_severity == "warning"


def test_severity_for_plain_rules_ignores_version() -> None:
    for version in (*VERSIONS, None, "1999-01-01"):
        assert severity_for("JR-PARSE", version) == "error"
        assert severity_for("TOOL-ARGS-SCHEMA", version) == "info"
    # an unrecognised version string falls back to the default
    assert severity_for("CAP-TOOLS", "1999-01-01") == "error"


def test_applies_to() -> None:
    assert applies_to("MSG-ID-REUSE", "2025-11-25")
    assert not applies_to("MSG-ID-REUSE", "2026-07-28")
    assert applies_to("MSG-ID-INFLIGHT", "2026-07-28")
    assert not applies_to("MSG-ID-INFLIGHT", "2024-11-05")
    assert applies_to("MSG-ID-INFLIGHT", None)
    assert applies_to("JR-BATCH-EMPTY", "2025-03-26")
    assert not applies_to("JR-BATCH-EMPTY", "2025-06-18")
    assert applies_to("JR-BATCH-EMPTY", "1999-01-01")  # unknown version string


def test_unknown_id() -> None:
    with pytest.raises(KeyError, match="NOPE-RULE"):
        get("NOPE-RULE")
    with pytest.raises(KeyError, match="did you mean JR-PARSE"):
        get("JR-PARS")
    with pytest.raises(KeyError):
        severity_for("NOPE-RULE", None)
    with pytest.raises(KeyError):
        applies_to("NOPE-RULE", None)


def test_plain_source() -> None:
    text = plain_source(get("MSG-ID-TYPE"))
    assert "`" not in text
    assert "schema.ts (RequestId = string | number)" in text
    assert "<v>" not in text and ".mdx" not in text


def test_entries_are_frozen() -> None:
    entry = get("JR-PARSE")
    with pytest.raises(AttributeError):
        entry.sev = "SHOULD"  # type: ignore[misc]
    assert get("JR-PARSE") is entry  # loaded once


def test_module_exports() -> None:
    assert catalog.get is get


# --- tools/gen_catalog.py --------------------------------------------------


def test_split_row_escaped_pipe(gen: ModuleType) -> None:
    cells = gen.split_row(r"| A | `x \| y` | b\c |")
    assert cells == ["A", "`x | y`", "b\\c"]
    assert gen.split_row("| A | | |") == ["A", "", ""]
    assert gen.split_row("not a row") is None


def test_parse_versions(gen: ModuleType) -> None:
    legend = dict(zip(("V1", "V2", "V3", "V4", "V5"), VERSIONS, strict=True))
    assert gen.parse_versions("all", legend) == VERSIONS
    assert gen.parse_versions("V1\u2013V4", legend) == VERSIONS[:4]
    assert gen.parse_versions("V4\u2013V5", legend) == VERSIONS[3:]
    assert gen.parse_versions("V1-V4", legend) == VERSIONS[:4]
    assert gen.parse_versions("V2", legend) == ("2025-03-26",)
    assert gen.parse_versions("V3+", legend) == VERSIONS[2:]
    assert (
        gen.parse_versions("V3\u2013V5 (V1\u2013V2 `audience`/`priority` only)", legend)
        == VERSIONS[2:]
    )
    with pytest.raises(gen.CatalogError):
        gen.parse_versions("V9", legend)
    with pytest.raises(gen.CatalogError):
        gen.parse_versions("sometimes", legend)


def test_section_title(gen: ModuleType) -> None:
    heading = "5.1 Cancellation (CANCEL-*) — file `S/<v>/basic/utilities/cancellation.mdx`"
    assert gen.section_title(heading) == "5.1 Cancellation (CANCEL-*)"
    assert gen.section_title("1. JSON-RPC 2.0 base rules (JR-*)") == (
        "1. JSON-RPC 2.0 base rules (JR-*)"
    )


def test_catalog_json_is_up_to_date(gen: ModuleType, rules_md: str) -> None:
    expected = gen.render(gen.build_catalog(rules_md))
    actual = CATALOG_JSON.read_text(encoding="utf-8")
    assert actual == expected, (
        "mcpsniff/core/catalog.json is stale; regenerate with "
        "`python tools/gen_catalog.py <mcp-rules.md> mcpsniff/core/catalog.json`"
    )


def test_counts_match_catalogue(gen: ModuleType, rules_md: str) -> None:
    rules = gen.parse_rules(rules_md)
    assert len(rules) == 297
    assert gen.verify_counts(rules_md, rules) == []
    assert json.loads(CATALOG_JSON.read_text(encoding="utf-8")).keys() == {r.id for r in rules}


def test_description_is_a_plain_paragraph_and_empty_for_unknown_ids() -> None:
    from mcpsniff.core import catalog as cat
    from mcpsniff.core.explain import WRITTEN
    from mcpsniff.core.rules import IMPLEMENTED

    assert explain.description("JR-RESP-ID") == WRITTEN["JR-RESP-ID"]
    assert "echo the id exactly" in explain.description("JR-RESP-ID")
    assert explain.description("NO-SUCH-RULE") == ""
    assert set(WRITTEN) <= set(IMPLEMENTED)
    for rule in IMPLEMENTED:
        text = explain.description(rule)
        assert text and "`" not in text and text.endswith("."), rule
    # built from the catalogue row (a rule described nowhere else): who is at fault,
    # and where the spec says so
    from mcpsniff.core.explain import built_description

    built = built_description(cat.get("PING-EMPTY-RESULT"))
    assert "the receiver is the one to fix" in built and "**" not in built
    assert '§ Behavior Requirements 1 ("The receiver MUST respond promptly' in built


_SHORTHAND = (
    "⇒",
    "[Snd]",
    "[Rcv]",
    "[C]",
    "[S]",
    "[Req]",
    "[Any]",
    "S/<v>",
    "serverCaps",
    "clientCaps",
)


def test_every_description_is_plain_sentences_a_server_author_reads() -> None:
    """Capital first, period last, none of the catalogue's shorthand, no placeholder."""
    import re

    from mcpsniff.core import catalog as cat
    from mcpsniff.core.explain import built_description
    from mcpsniff.core.rules import IMPLEMENTED

    for rule in IMPLEMENTED:
        text = explain.description(rule)
        # A sentence: capital first (or a version: "2026-07-28 removed ..."), period last.
        assert (text[:1].isupper() or text[:1].isdigit()) and text.endswith("."), (rule, text)
        assert not any(mark in text for mark in _SHORTHAND), (rule, text)
        assert not re.search(r"(?<![-\w])V[1-5](?![-\w])", text), (rule, text)
    # "Prompts/list, prompts/get only with serverCaps.prompts" was the jargon before.
    assert explain.description("CAP-PROMPTS").startswith("The client called prompts/list")
    # Every catalogue row, even one no description covers yet, builds a clean paragraph.
    for entry in cat.all_entries():
        text = built_description(entry)
        assert (text[:1].isupper() or text[:1].isdigit()) and text.endswith("."), entry.id
        assert "⇒" not in text and "S/<v>" not in text, (entry.id, text)
        assert not re.search(r"\[(?:C|S|Snd|Rcv|Req|Any)\]", text), (entry.id, text)


def test_a_built_description_spells_capability_shorthand_out() -> None:
    from mcpsniff.core import catalog as cat
    from mcpsniff.core.explain import built_description

    text = built_description(cat.get("CAP-PROMPTS"))
    assert "serverCaps" not in text and "the server capability prompts" in text
