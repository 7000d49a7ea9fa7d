"""Where a person reads the rule behind a finding: a link into the session's version.

The catalogue's *Source* cells are written for its authors: ``S/<v>/server/tools.mdx
§ Capabilities``, ``S5/changelog.mdx``, ``…/streamable-http.mdx``, or only ``§ Error
Handling`` under a section whose page the catalogue names once. A finding shows
the page itself instead, in the version the session spoke::

    https://modelcontextprotocol.io/specification/2025-11-25/server/tools#capabilities

Pages move between versions (2026-07-28 moved cancellation and progress to
``basic/patterns/`` and split the transports page in two), so a link is only
made to a page that ``spec_pages.json`` (``tools/gen_spec_pages.py``, from the
specification repository) lists for that version, and gets its ``#section`` only
when the page has that heading. A rule that does not apply to the session's
version links the newest version it applies to; rules citing only JSON-RPC 2.0
link that specification's section.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from mcpsniff.core import catalog
from mcpsniff.core.lazy_pattern import lazy
from mcpsniff.core.package_data import read_text

SPEC_SITE = "https://modelcontextprotocol.io/specification"
EXTENSIONS_SITE = "https://modelcontextprotocol.io/extensions"
JSONRPC_SPEC = "https://www.jsonrpc.org/specification"

#: JSON-RPC 2.0's numbered sections and the anchors of its page.
_JSONRPC_ANCHORS = {
    "2": "conventions",
    "3": "compatibility",
    "4": "request_object",
    "4.1": "notification",
    "4.2": "parameter_structures",
    "5": "response_object",
    "5.1": "error_object",
    "6": "batch",
    "7": "examples",
    "8": "extensions",
}

#: The page of each rule family when its Source names only a section, first
#: candidate that exists in the version (the catalogue's section headings).
_FAMILY_PAGES: dict[str, tuple[str, ...]] = {
    "MSG": ("basic/index",),
    "SCHEMA": ("basic/index",),
    "ICON": ("basic/index",),
    "LC": ("basic/lifecycle",),
    "CAP": ("basic/lifecycle",),
    "CANCEL": ("basic/utilities/cancellation", "basic/patterns/cancellation"),
    "PROG": ("basic/utilities/progress", "basic/patterns/progress"),
    "PING": ("basic/utilities/ping",),
    "LOG": ("server/utilities/logging",),
    "COMPL": ("server/utilities/completion",),
    "PAGE": ("server/utilities/pagination",),
    # The guard's rules: tools and their trust and safety.
    "GUARD": ("server/tools",),
    "TOOL": ("server/tools",),
    "RES": ("server/resources",),
    "PROMPT": ("server/prompts",),
    "SAMP": ("client/sampling",),
    "ROOTS": ("client/roots",),
    "ELIC": ("client/elicitation",),
    "TASK": ("basic/utilities/tasks",),
    "STDIO": ("basic/transports/stdio", "basic/transports"),
    "SSE": ("basic/transports", "basic/transports/streamable-http"),
    "HTTP": ("basic/transports/streamable-http", "basic/transports"),
    "AUTH": ("basic/authorization", "basic/authorization/index"),
    "MOD": ("changelog",),
}

# A spec file a Source cell names: S/<v>/a/b.mdx, S/2025-06-18/a.mdx, S5/a.mdx, …/a.mdx.
# A bare "basic/messages.mdx" (qualified by a V1 before it) counts as S/<v>/.
_FILE = re.compile(r"(?:S/(<v>|\d{4}-\d{2}-\d{2})/|S(5)/|(…)/|(?<=`))([\w/.-]+?)\.mdx")
# A section: "§ Data Types > Tool > Tool Names" up to a quote, bracket or backtick.
_SECTION = re.compile(r"§\s*([^`\"(\);]+)")
_JSONRPC = re.compile(r"JSON-RPC\s*§\s*(\d+(?:\.\d+)?)")


@functools.cache
def _pages() -> dict[str, dict[str, frozenset[str]]]:
    text = read_text("spec_pages.json")
    raw: dict[str, dict[str, list[str]]] = json.loads(text)
    return {group: {p: frozenset(a) for p, a in pages.items()} for group, pages in raw.items()}


def page_exists(version: str, page: str) -> bool:
    """Whether the specification of ``version`` has ``page`` (a path without ``.mdx``)."""
    return page in _pages().get(version, {})


def _slug(section: str) -> str:
    text = re.sub(r"[`*_\[\]()]", "", section).strip().lower()
    text = re.sub(r"[^\w\s-]", "", text)
    return re.sub(r"\s+", "-", text).strip("-")


def _url(version: str, page: str, anchor: str) -> str:
    # The site serves "basic/index.mdx" as ".../basic".
    path = page.removesuffix("/index") if page != "index" else ""
    return f"{SPEC_SITE}/{version}/{path}".rstrip("/") + anchor


def _anchor(version: str, page: str, section: str | None) -> str:
    """``#anchor`` for the deepest part of ``section`` the page has as a heading, or ''."""
    if not section:
        return ""
    anchors = _pages().get(version, {}).get(page, frozenset())
    parts = [p.strip() for p in section.split(">")]
    for part in reversed(parts):
        # "Sending Messages to the Server 4" names item 4 of that section.
        part = re.sub(r"\s+[\d,–-]+(?:\.\d+)?\s*$", "", part)
        slug = _slug(part)
        if slug in anchors:
            return "#" + slug
    return ""


def _references(source: str) -> list[tuple[str | None, str, str | None]]:
    """``(version or None for <v>, page, section)`` of every file the Source names."""
    found: list[tuple[str | None, str, str | None]] = []
    for match in _FILE.finditer(source):
        fixed, five, relative, path = match.groups()
        version = None if fixed == "<v>" else fixed
        if five:
            version = catalog.STATELESS_VERSIONS[-1]
        if relative:
            # "…/streamable-http.mdx": the 2026-07-28 transports pages.
            version, path = catalog.STATELESS_VERSIONS[-1], f"basic/transports/{path}"
        rest = source[match.end() :]
        section = _SECTION.match(rest.lstrip())
        found.append((version, path, section.group(1).strip() if section else None))
    return found


@functools.cache
def spec_link(rule_id: str, version: str | None = None) -> str:
    """The specification page (and section) of ``rule_id`` in ``version``.

    ``version`` is the session's; None, unknown, or one the rule does not apply
    to means the newest version the rule applies to. Unknown rule ids (from old
    traces) link the specification's front page.
    """
    try:
        entry = catalog.get(rule_id)
    except KeyError:
        return f"{SPEC_SITE}/{catalog.VERSIONS[-1]}"
    if version not in entry.versions:
        version = entry.versions[-1] if entry.versions else catalog.VERSIONS[-1]
    source = entry.source
    jsonrpc = _JSONRPC.match(source)
    if jsonrpc is not None and entry.family in ("JR",):
        anchor = _JSONRPC_ANCHORS.get(jsonrpc.group(1))
        return f"{JSONRPC_SPEC}#{anchor}" if anchor else JSONRPC_SPEC
    references = _references(source)
    # A file named for this version (or for every version), then the family's page.
    for named, page, section in references:
        if named in (None, version) and page_exists(version, page):
            return _url(version, page, _anchor(version, page, section))
    section_match = _SECTION.search(source)
    section = section_match.group(1).strip() if section_match else None
    for page in _FAMILY_PAGES.get(entry.family, ()):
        if page_exists(version, page):
            return _url(version, page, _anchor(version, page, section))
    # A file of another version only (a changelog): that version's page.
    for named, page, section in references:
        if named is not None and page_exists(named, page):
            return _url(named, page, _anchor(named, page, section))
    if jsonrpc is not None:
        anchor = _JSONRPC_ANCHORS.get(jsonrpc.group(1))
        return f"{JSONRPC_SPEC}#{anchor}" if anchor else JSONRPC_SPEC
    return f"{SPEC_SITE}/{version}"


def finding_link(rule_id: str, data: Any, version: str | None) -> str:
    """The link of one finding: its rule's page in the session's ``version``."""
    del data  # one page per rule today; kept for rules whose page depends on the finding
    return spec_link(rule_id, version)


_PLACEHOLDERS = (
    (lazy(r"\bS/<v>/([\w/.{},-]+?)\.mdx"), r"\1"),
    (lazy(r"\bS/(\d{4}-\d{2}-\d{2})/([\w/.{},-]+?)\.mdx"), r"\2 (\1)"),
    (lazy(r"\bS5/([\w/.{},-]+?)\.mdx"), r"\1 (2026-07-28)"),
    (lazy(r"…/([\w.-]+?)\.mdx"), r"basic/transports/\1 (2026-07-28)"),
    (lazy(r"([\w/{},-]+?)\.mdx"), r"\1"),
    (lazy(r"\bschema/<v>/schema\.ts"), "schema.ts"),
    (lazy(r"\bschema/(\d{4}-\d{2}-\d{2})/schema\.ts"), r"schema.ts (\1)"),
)


_ALTERNATIVES = lazy(r"([\w/-]*/)\{([\w,-]+)\}")


def readable_source(source: str) -> str:
    """A Source cell without the catalogue's shorthand (``S/<v>/``, ``S5/``, ``…/``, ``.mdx``)."""
    for pattern, replacement in _PLACEHOLDERS:
        source = pattern.sub(replacement, source)
    # "server/{tools,prompts,resources}": each page by its name.
    source = _ALTERNATIVES.sub(
        lambda m: ", ".join(m.group(1) + part for part in m.group(2).split(",")), source
    )
    return source.replace("<v>", "each version")


_QUOTE = lazy(r'"([^"]{12,})"')


def spec_quote(source: str) -> str | None:
    """The first sentence a Source cell quotes from the specification, in quotes, or None."""
    match = _QUOTE.search(source)
    if match is None:
        return None
    text = match.group(1).replace("**", "").replace("`", "").replace("\\", "")
    return f"\u201c{text.strip()}\u201d"


def session_version(analyzer: Any, session: str) -> str | None:
    """The protocol version in force in ``analyzer``'s session ``session`` (None: not known)."""
    found = analyzer.sessions.get(session)
    version = None if found is None else found.state.version
    return version if isinstance(version, str) else None


def plain_source(entry: catalog.CatalogEntry) -> str:
    """The entry's source for people: backticks and the catalogue's shorthand
    (``S/<v>/``, ``S5/``, ``…/``, ``.mdx``) removed."""
    return readable_source(entry.source).replace("`", "")
