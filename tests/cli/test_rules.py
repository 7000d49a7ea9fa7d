"""``mcpsniff rules``: every rule's description is plain sentences a server author reads.

Issue #25: "rule descriptions are plain sentences a server author understands
('Prompts/list, prompts/get only with serverCaps.prompts' is jargon)". The
catalogue's *Check* cells are written in a shorthand for the checker's authors;
what ``mcpsniff rules`` prints must not be.
"""

from __future__ import annotations

import re

import orjson
import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core import catalog, explain
from mcpsniff.core.descriptions import PLAIN
from mcpsniff.core.rules import IMPLEMENTED

#: The catalogue's shorthand, which no description may carry.
JARGON = {
    "serverCaps.": "a capability path: say 'the server declares the X capability'",
    "clientCaps.": "a capability path: say 'the client declares the X capability'",
    "serverCaps": "say 'the server's capabilities'",
    "clientCaps": "say 'the client's capabilities'",
    "->": "an arrow: say who does what in words",
    "→": "an arrow: say who does what in words",
    "⇒": "an implication sign: write the sentence",
    "≡": "a symbol: write the sentence",
    "S/": "a spec path shorthand (S/<version>/...)",
    "[C]": "a blame mark: name the client",
    "[S]": "a blame mark: name the server",
    "[Snd]": "a blame mark: name the sender",
    "[Rcv]": "a blame mark: name the receiver",
    "[Req]": "a blame mark: name the requestor",
    "[Any]": "a blame mark: name the side",
    "HEUR": "catalogue level: say 'a heuristic' or leave it out",
    "`": "Markdown code marks",
    "**": "Markdown emphasis",
    "This is a MUST of the spec": "a paragraph built from the catalogue row",
}
#: A version code of the catalogue (V1..V5, V4+) outside a word.
VERSION_CODE = re.compile(r"(?<![-\w])V[1-5]\+?(?![-\w])")
#: Words that make a clause a sentence: modals and the verbs the descriptions use.
VERBS = re.compile(
    r"\b(must|should|may|can|cannot|is|are|was|were|be|has|have|had|needs?|carr(?:y|ies)|"
    r"sends?|sent|answers?|answered|gets?|got|names?|lists?|holds?|uses?|used|calls?|called|"
    r"declares?|declared|asks?|asked|reports?|reported|echo(?:es)?|stays?|ends?|moves?|"
    r"changed?|leaves?|refuses?|returns?|takes?|comes?|came|mirrors?|deprecates?|removed|"
    r"accepted|notes|means|says|reached|went|tells?|keeps?|allows?|fix|add|drop|use|send|"
    r"rename|wait|stop|split|declare|check|pick|treat|remove|reject|put|spell|give|start|complete|"
    r"reused|will|wrap|pass|contains?|reaches|serialize|write|validate|sort|carried|set)\b",
    re.IGNORECASE,
)
RULE_ID = re.compile(r"\b[A-Z]{2,}(?:-[A-Z0-9]+)+\b")


def _listed() -> list[dict[str, object]]:
    result = CliRunner().invoke(main, ["rules", "--format", "json"])
    assert result.exit_code == 0, result.output
    return [orjson.loads(line) for line in result.output.splitlines()]


@pytest.fixture(scope="module")
def listed() -> list[dict[str, object]]:
    return _listed()


def jargon_in(text: str) -> list[str]:
    """What in ``text`` is catalogue shorthand rather than a plain sentence."""
    found = [f"{mark!r}: {why}" for mark, why in JARGON.items() if mark in text]
    if VERSION_CODE.search(text):
        found.append("a version code (V4+): name the version, e.g. 'from 2025-11-25 on'")
    if not (text[:1].isupper() or text[:1].isdigit()):
        found.append("does not begin with a capital letter (or a version date)")
    if not text.endswith("."):
        found.append("does not end with a period")
    for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9])", text):
        if not VERBS.search(sentence):
            found.append(f"no verb in {sentence[:60]!r}")
    return found


def test_every_rule_is_listed_with_a_description(listed: list[dict[str, object]]) -> None:
    assert [row["rule"] for row in listed] == list(IMPLEMENTED)
    assert len(listed) >= 250
    for row in listed:
        assert row["description"] == explain.description(str(row["rule"]))


def test_no_description_is_jargon(listed: list[dict[str, object]]) -> None:
    bad = {str(row["rule"]): jargon_in(str(row["description"])) for row in listed}
    assert {rule: why for rule, why in bad.items() if why} == {}


def test_every_description_is_written_not_built_from_the_catalogue_row() -> None:
    """A description built from the *Check* cell reads like one: each rule has its own."""
    assert sorted(r for r in IMPLEMENTED if r not in explain.WRITTEN and r not in PLAIN) == []
    assert not set(explain.WRITTEN) & set(PLAIN)


def test_rule_ids_named_in_descriptions_exist(listed: list[dict[str, object]]) -> None:
    """A description that points at another rule points at one ``mcpsniff rules`` knows."""
    families = {entry.family for entry in catalog.all_entries()}
    named = {
        (str(row["rule"]), other)
        for row in listed
        for other in RULE_ID.findall(str(row["description"]))
        if other.split("-", 1)[0] in families and other not in ("JSON-RPC", "HTTP-SSE")
    }
    assert named  # JR-PARSE, GUARD-HIDDEN-DEFINITION, MSG-BATCH-REMOVED are named
    unknown = sorted((rule, other) for rule, other in named if other not in set(IMPLEMENTED))
    assert unknown == []


def test_descriptions_stay_short(listed: list[dict[str, object]]) -> None:
    """A paragraph, not an essay: at most five sentences and 500 characters."""
    for row in listed:
        text = str(row["description"])
        sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z0-9])", text)
        assert len(text) <= 500 and len(sentences) <= 5, (row["rule"], len(text), len(sentences))


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("Prompts/list, prompts/get only with serverCaps.prompts.", "'serverCaps.'"),
        ("[C] roots/list -> -32601.", "'->'"),
        ("An unrecognized logLevel: -32602.", "no verb"),
        ("A server must answer ping", "period"),
        ("a server must answer ping.", "capital"),
        ("Required from V4+ on.", "version code"),
        ("See S/2025-06-18/basic/index.", "'S/'"),
        ("Tools SHOULD come in order. HEUR: two lists differ.", "'HEUR'"),
    ],
)
def test_the_jargon_check_catches_shorthand(text: str, why: str) -> None:
    assert any(why in problem for problem in jargon_in(text)), (text, jargon_in(text))


def test_plain_sentences_pass_the_jargon_check() -> None:
    assert (
        jargon_in(
            "A server must declare the prompts capability before it answers "
            "prompts/list or prompts/get."
        )
        == []
    )
    assert jargon_in("2026-07-28 removed initialize. Stop sending it.") == []


def test_the_old_built_paragraph_failed_the_check() -> None:
    """The paragraph the catalogue row of MOD-LOGLEVEL-INVALID built before it had its own."""
    built = explain.built_description(catalog.get("MOD-LOGLEVEL-INVALID"))
    assert any("no verb" in p or "This is a MUST" in p for p in jargon_in(built)), built
