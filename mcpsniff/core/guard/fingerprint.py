"""Definition fingerprints: what a server offers, canonicalised so that only meaning counts.

A *definition* is one tool, prompt, resource or resource template as a list
result carries it. Its fingerprint is the SHA-256 of its canonical JSON (keys
sorted, no whitespace, RFC 8785's idea without its number rules: JSON numbers
from one server are compared with numbers from the same server), over the
members that change what the model is told or what a call does: everything
but presentation (``icons``) and the members a server may vary per listing
without meaning anything (none today). ``_meta`` counts: the MCP Apps
extension's ``ui`` resource and the tasks extension's ``execution`` change
behaviour through it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

#: The list methods and what kind of definition each lists, under which member,
#: keyed by which member.
LISTS: dict[str, tuple[str, str, str]] = {
    "tools/list": ("tool", "tools", "name"),
    "prompts/list": ("prompt", "prompts", "name"),
    "resources/list": ("resource", "resources", "uri"),
    "resources/templates/list": ("resource-template", "resourceTemplates", "uriTemplate"),
}
#: Members that only change how a client draws a definition.
PRESENTATION = frozenset({"icons"})
#: At most this many definitions of one list are fingerprinted (a hostile list may be huge).
MAX_DEFINITIONS = 2000


@dataclass(frozen=True, slots=True)
class Definition:
    """One definition a server offers, with its fingerprint."""

    #: ``tool``, ``prompt``, ``resource`` or ``resource-template``.
    kind: str
    #: The name (tools, prompts), URI or URI template (resources).
    name: str
    #: ``sha256:`` and the first 32 hex digits of the canonical JSON's digest.
    fingerprint: str
    #: The canonical JSON itself (what the fingerprint is of).
    canonical: bytes
    #: The definition as listed (for the field-by-field diff).
    body: dict[str, Any]

    @property
    def key(self) -> str:
        """``kind:name``: unique within one server's offer."""
        return f"{self.kind}:{self.name}"


def canonical_json(value: Any) -> bytes:
    """``value`` as compact JSON with sorted keys: equal meaning, equal bytes."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)


def fingerprint_of(body: dict[str, Any]) -> tuple[str, bytes]:
    """The fingerprint and canonical JSON of one listed definition."""
    kept = {k: v for k, v in body.items() if k not in PRESENTATION}
    canonical = canonical_json(kept)
    return "sha256:" + hashlib.sha256(canonical).hexdigest()[:32], canonical


def definitions(method: str, result: Any) -> Iterator[Definition]:
    """The definitions a ``method`` result lists (nothing for another method or a bad shape)."""
    shape = LISTS.get(method)
    if shape is None or type(result) is not dict:
        return
    kind, member, key = shape
    items = result.get(member)
    if type(items) is not list:
        return
    for item in items[:MAX_DEFINITIONS]:
        if type(item) is not dict or type(item.get(key)) is not str:
            continue
        try:
            fingerprint, canonical = fingerprint_of(item)
        except (TypeError, orjson.JSONEncodeError):
            continue  # a value JSON cannot hold again (an integer past 64 bits)
        yield Definition(kind, item[key], fingerprint, canonical, item)


def offer_fingerprint(defs: Iterable[Definition]) -> str:
    """One fingerprint for a whole offer: the sorted definitions' fingerprints, hashed."""
    digest = hashlib.sha256()
    for key, fingerprint in sorted((d.key, d.fingerprint) for d in defs):
        digest.update(f"{key}\x00{fingerprint}\n".encode("utf-8", "surrogatepass"))
    return "sha256:" + digest.hexdigest()[:32]


def texts(definition: Definition) -> Iterator[tuple[str, str]]:
    """Every text of a definition the model reads, as (where, text).

    ``where`` names the member: ``description``, ``title``,
    ``inputSchema.properties.path.description``, ``arguments[0].description``.
    """
    yield from _texts(definition.body, "", 0)


_TEXT_MEMBERS = frozenset({"description", "title", "name"})
_MAX_DEPTH = 12
_MAX_TEXTS = 500


def _texts(value: Any, where: str, depth: int) -> Iterator[tuple[str, str]]:
    if depth > _MAX_DEPTH:
        return
    if type(value) is dict:
        for key, item in list(value.items())[:_MAX_TEXTS]:
            path = f"{where}.{key}" if where else str(key)
            if type(item) is str and (key in _TEXT_MEMBERS or key == "default"):
                yield path, item
            elif type(item) in (dict, list) and key != "_meta":
                yield from _texts(item, path, depth + 1)
    elif type(value) is list:
        for index, item in enumerate(value[:_MAX_TEXTS]):
            if type(item) is str:
                yield f"{where}[{index}]", item
            else:
                yield from _texts(item, f"{where}[{index}]", depth + 1)
