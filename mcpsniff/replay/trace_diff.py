"""Two recorded sessions side by side: the same requests, and how their answers differ.

The natural pair is a recording and its ``replay drive`` run, or one server
before and after a change. Requests are aligned by what was asked (method and
params without ``_meta``, ``compare.match_key``: the method, the tool and its
arguments), in order, the n-th ``tools/call add {1, 2}`` of one with the n-th
of the other; their answers are compared field by field with the volatile
parts (timestamps, session ids) left out, as ``replay drive`` compares.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpsniff.core.model import C2S, REQUEST
from mcpsniff.replay.compare import Difference, diff, format_path, match_key
from mcpsniff.replay.difftext import difference_lines, show_value
from mcpsniff.replay.script import ReplayError, Script, id_key, load_script

#: Exchanges listed in full in the text form (the JSON form has them all).
SHOWN = 200


@dataclass(frozen=True, slots=True)
class Exchange:
    """One client request and what the server answered (None: no answer)."""

    key: str
    label: str
    seq: int
    answer: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Aligned:
    """A request of each side that asked the same thing (one side None: only in the other)."""

    a: Exchange | None
    b: Exchange | None
    differences: list[Difference] = field(default_factory=list)

    @property
    def same(self) -> bool:
        return self.a is not None and self.b is not None and not self.differences


def _label(body: dict[str, Any]) -> str:
    method = body.get("method")
    text = method if isinstance(method, str) else "?"
    params = body.get("params")
    if isinstance(params, dict):
        for key in ("name", "uri"):
            if isinstance(params.get(key), str):
                return f"{text} {params[key]}"
    return text


def exchanges(script: Script) -> list[Exchange]:
    """The client's requests in order, each with the server's answer (result or error)."""
    answers = script.responses_by_request()
    out = []
    for message in script.messages(C2S):
        if message.kind != REQUEST:
            continue
        response = answers.get((C2S, id_key(message.id)))
        answer = None
        if response is not None:
            answer = {k: v for k, v in response.body.items() if k in ("result", "error")}
        out.append(Exchange(match_key(message.body), _label(message.body), message.frame, answer))
    return out


def align(left: list[Exchange], right: list[Exchange]) -> list[Aligned]:
    """Pair the requests that asked the same thing, in order; the rest stand alone."""
    waiting: dict[str, deque[int]] = defaultdict(deque)
    for i, exchange in enumerate(right):
        waiting[exchange.key].append(i)
    taken: set[int] = set()
    out: list[Aligned] = []
    for a in left:
        queue = waiting.get(a.key)
        if not queue:
            out.append(Aligned(a, None))
            continue
        i = queue.popleft()
        taken.add(i)
        b = right[i]
        if a.answer is None or b.answer is None:
            differences = (
                [] if a.answer is b.answer else [Difference((), a.answer, b.answer, "changed")]
            )
        else:
            differences = diff(a.answer, b.answer)
        out.append(Aligned(a, b, differences))
    out.extend(Aligned(None, b) for i, b in enumerate(right) if i not in taken)
    return out


def differs(pairs: list[Aligned]) -> bool:
    """Whether the two sides differ anywhere (an answer, or a request only one side made)."""
    return any(not p.same for p in pairs)


def text_lines(pairs: list[Aligned], name_a: str, name_b: str) -> list[str]:
    """The comparison for a terminal (traffic text in it still to be escaped)."""
    lines: list[str] = []
    same = sum(1 for p in pairs if p.same)
    changed = [p for p in pairs if p.a is not None and p.b is not None and p.differences]
    only_a = [p for p in pairs if p.b is None]
    only_b = [p for p in pairs if p.a is None]
    for p in pairs[:SHOWN]:
        if p.same:
            continue
        if p.a is not None and p.b is not None:
            lines.append(f"≠ {p.a.label}  (A seq {p.a.seq}, B seq {p.b.seq})")
            if p.a.answer is None or p.b.answer is None:
                lines.append(f"    A: {show_value(p.a.answer) if p.a.answer else '(no answer)'}")
                lines.append(f"    B: {show_value(p.b.answer) if p.b.answer else '(no answer)'}")
            else:
                lines.extend("  " + line for line in difference_lines(p.differences, "A", "B"))
        elif p.a is not None:
            lines.append(f"- {p.a.label}  (only in A, seq {p.a.seq})")
        elif p.b is not None:
            lines.append(f"+ {p.b.label}  (only in B, seq {p.b.seq})")
    if len(pairs) > SHOWN:
        lines.append(f"… {len(pairs) - SHOWN} more requests not listed (--format json has them)")
    verdict = "the same answers" if not differs(pairs) else "they differ"
    lines.append(
        f"A={name_a}  B={name_b}: {len(pairs)} requests aligned; {same} answered alike, "
        f"{len(changed)} differently, {len(only_a)} only in A, {len(only_b)} only in B: {verdict}"
    )
    return lines


def json_value(pairs: list[Aligned]) -> dict[str, Any]:
    """The comparison as plain values (``--format json``)."""

    def side(e: Exchange | None) -> dict[str, Any] | None:
        return None if e is None else {"label": e.label, "seq": e.seq, "answer": e.answer}

    return {
        "differ": differs(pairs),
        "requests": [
            {
                "a": side(p.a),
                "b": side(p.b),
                "same": p.same,
                "differences": [
                    {"path": format_path(d.path), "change": d.change, "a": d.recorded, "b": d.live}
                    for d in p.differences
                ],
            }
            for p in pairs
        ],
    }


#: Aligned requests a page's comparison holds, and characters of one value shown in it.
PAGE_PAIRS = 2000
PAGE_VALUE = 4000
#: Differing fields listed for one request on a page.
PAGE_FIELDS = 100


def value_text(value: Any, limit: int = PAGE_VALUE) -> str:
    """A JSON value as indented text, cut past ``limit`` characters (the trace holds it whole)."""
    try:
        text = json.dumps(value, ensure_ascii=False, indent=1)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def page_value(pairs: list[Aligned]) -> dict[str, Any]:
    """The comparison bounded for a page: each value as text of at most PAGE_VALUE characters."""

    def side(e: Exchange | None) -> dict[str, Any] | None:
        if e is None:
            return None
        answer = None if e.answer is None else value_text(e.answer)
        return {"label": _cut(e.label, 300), "seq": e.seq, "answer": answer}

    shown = pairs[:PAGE_PAIRS]
    return {
        "differ": differs(pairs),
        "total": len(pairs),
        "same": sum(1 for p in pairs if p.same),
        "onlyA": sum(1 for p in pairs if p.b is None),
        "onlyB": sum(1 for p in pairs if p.a is None),
        "requests": [
            {
                "a": side(p.a),
                "b": side(p.b),
                "same": p.same,
                "fields": len(p.differences),
                "differences": [
                    {
                        "path": _cut(format_path(d.path), 300),
                        "change": d.change,
                        "a": value_text(d.recorded, 300),
                        "b": value_text(d.live, 300),
                    }
                    for d in p.differences[:PAGE_FIELDS]
                ],
            }
            for p in shown
        ],
    }


def compare_sessions(path_a: Path, key_a: str, path_b: Path, key_b: str) -> dict[str, Any]:
    """Two recorded sessions compared for a page (``mcpsniff ui``), or ``{"error": why}``."""
    try:
        left = load_script(path_a, key_a)
        right = load_script(path_b, key_b)
    except ReplayError as exc:
        return {"error": str(exc)}
    return page_value(align(exchanges(left), exchanges(right)))
