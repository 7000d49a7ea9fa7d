"""core/spec_links.py: every finding links a real page of its session's version."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from mcpsniff.core import catalog
from mcpsniff.core.rules import IMPLEMENTED
from mcpsniff.core.spec_links import (
    JSONRPC_SPEC,
    SPEC_SITE,
    _pages,
    plain_source,
    readable_source,
    spec_link,
    spec_quote,
)

REPO = Path(__file__).resolve().parents[2]
MIRROR = Path("/work/.mirror/modelcontextprotocol+modelcontextprotocol/repo")
_PLACEHOLDER = re.compile(r"<v>|\bS\d?/|…/|\.mdx|/\{")


def _page_and_anchor(link: str) -> tuple[str, str, str]:
    parts = urlsplit(link)
    path = parts.path.removeprefix("/specification/")
    version, _, page = path.partition("/")
    return version, page, parts.fragment


def test_every_rule_links_an_existing_page_and_section_in_every_version_it_applies_to() -> None:
    pages = _pages()
    for rule in IMPLEMENTED:
        for version in catalog.get(rule).versions:
            link = spec_link(rule, version)
            assert not _PLACEHOLDER.search(link), (rule, link)
            if link.startswith(JSONRPC_SPEC):
                assert catalog.get(rule).family in ("JR", "MSG", "MOD"), (rule, link)
                continue
            assert link.startswith(SPEC_SITE + "/"), (rule, link)
            linked, page, anchor = _page_and_anchor(link)
            index = pages[linked]
            # The site serves basic/index.mdx as basic/.
            found = page if page in index else f"{page}/index" if page else "index"
            assert found in index, (rule, version, link)
            if anchor:
                assert anchor in index[found], (rule, link)


def test_a_finding_links_the_page_of_its_session_version() -> None:
    # 2026-07-28 moved progress to basic/patterns/ and split the transports page.
    assert spec_link("PROG-MONOTONIC", "2025-11-25") == (
        f"{SPEC_SITE}/2025-11-25/basic/utilities/progress#progress-flow"
    )
    assert spec_link("PROG-MONOTONIC", "2026-07-28") == (
        f"{SPEC_SITE}/2026-07-28/basic/patterns/progress#progress-flow"
    )
    assert spec_link("STDIO-FRAMING", "2025-06-18") == (
        f"{SPEC_SITE}/2025-06-18/basic/transports#stdio"
    )
    assert (
        spec_link("STDIO-FRAMING", "2026-07-28") == f"{SPEC_SITE}/2026-07-28/basic/transports/stdio"
    )
    assert (
        spec_link("MSG-ID-TYPE", "2024-11-05") == f"{SPEC_SITE}/2024-11-05/basic/messages#requests"
    )
    assert spec_link("MSG-ID-TYPE", "2025-11-25") == f"{SPEC_SITE}/2025-11-25/basic#requests"
    assert spec_link("JR-RESP-REQUIRED", "2025-11-25") == f"{JSONRPC_SPEC}#response_object"


def test_a_rule_outside_the_session_version_links_the_newest_version_it_has() -> None:
    # Tasks (TASK-*) exist in 2025-11-25 only.
    assert spec_link("TASK-ID", "2024-11-05") == (
        f"{SPEC_SITE}/2025-11-25/basic/utilities/tasks#task-id-requirements"
    )
    assert spec_link("TASK-ID", None) == spec_link("TASK-ID", "2025-11-25")
    assert spec_link("TASK-ID", "1999-01-01") == spec_link("TASK-ID", "2025-11-25")
    assert spec_link("NO-SUCH-RULE") == f"{SPEC_SITE}/2026-07-28"


def test_no_source_or_link_a_user_reads_holds_a_placeholder() -> None:
    for rule in IMPLEMENTED:
        entry = catalog.get(rule)
        shown = plain_source(entry)
        assert not _PLACEHOLDER.search(shown), (rule, shown)
        assert not _PLACEHOLDER.search(spec_link(rule)), rule
    assert readable_source("`S/<v>/server/tools.mdx § Capabilities`") == (
        "`server/tools § Capabilities`"
    )
    assert readable_source("S5/changelog.mdx § Deprecated") == "changelog (2026-07-28) § Deprecated"


def test_spec_quote_is_the_first_quoted_sentence() -> None:
    quote = spec_quote('`§ stdio` ("Messages are delimited by newlines, and **MUST NOT** x")')
    assert quote == "\u201cMessages are delimited by newlines, and MUST NOT x\u201d"
    assert spec_quote("`§ Error Handling`") is None


@pytest.mark.skipif(not MIRROR.is_dir(), reason="specification repository not mirrored")
def test_spec_pages_json_is_up_to_date() -> None:
    spec = importlib.util.spec_from_file_location(
        "gen_spec_pages", REPO / "tools" / "gen_spec_pages.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    committed = json.loads((REPO / "mcpsniff" / "core" / "spec_pages.json").read_text())
    assert committed == module.build(str(MIRROR))
