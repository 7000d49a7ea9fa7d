"""The comparison of two recordings (``trace_diff``) as one self-contained HTML page.

Side by side, one row per aligned request: what A answered, what B answered,
and each differing field with both values, highlighted. Every value from the
traces is escaped (``html.escape``); the page runs no script at all, and its
Content-Security-Policy admits only its own style by hash.
"""

from __future__ import annotations

import base64
import hashlib
import html
from typing import Any

from mcpsniff.replay.compare import format_path
from mcpsniff.replay.trace_diff import Aligned, differs, value_text

#: Characters of one answer shown in its cell (the traces hold them whole).
ANSWER_LIMIT = 4000
STYLE = """
body { font: 14px system-ui, sans-serif; margin: 16px; color: #1d2026; background: #fbfbfc; }
h1 { font-size: 18px; } .muted { color: #525b69; }
table { border-collapse: collapse; width: 100%; table-layout: fixed; }
th, td { border: 1px solid #e3e5ea; padding: 6px 8px; vertical-align: top; text-align: left; }
th { background: #f3f4f6; } .w-request { width: 18%; } .w-comparison { width: 22%; }
pre { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere;
  font: 12px ui-monospace, monospace; }
tr.same td.state { color: #166534; } tr.differ td.state, tr.only td.state { color: #b91c1c; }
tr.differ td, tr.only td { background: #fff7f7; }
ul.fields { margin: 6px 0 0; padding-left: 18px; }
ul.fields li { font: 12px ui-monospace, monospace; overflow-wrap: anywhere; }
mark { background: #fde68a; color: #1d2026; }
@media (prefers-color-scheme: dark) {
  body { color: #e6e8ec; background: #111318; } .muted { color: #a7adb8; }
  th { background: #1e222b; } th, td { border-color: #2a2f3a; }
  tr.same td.state { color: #4ade80; } tr.differ td.state, tr.only td.state { color: #f87171; }
  tr.differ td, tr.only td { background: #2a1717; } mark { background: #854d0e; color: #fef9c3; }
}
"""


def _text(value: Any, limit: int = ANSWER_LIMIT) -> str:
    return value_text(value, limit)


def _row(pair: Aligned) -> str:
    e = html.escape
    label = (pair.a or pair.b).label if (pair.a or pair.b) else "?"  # type: ignore[union-attr]
    if pair.a is None or pair.b is None:
        kind, state = "only", "only in A" if pair.b is None else "only in B"
    else:
        kind, state = ("same", "same") if pair.same else ("differ", "differs")

    def cell(side: Any) -> str:
        if side is None:
            return '<td class="muted">(not asked)</td>'
        answer = "(no answer)" if side.answer is None else _text(side.answer)
        return f"<td><span class=muted>seq {side.seq}</span><pre>{e(answer)}</pre></td>"

    fields = ""
    if pair.differences:
        items = "".join(
            f"<li><mark>{e(format_path(d.path))}</mark>: A {e(_text(d.recorded, 300))} "
            f"→ B {e(_text(d.live, 300))}</li>"
            for d in pair.differences[:100]
        )
        fields = f'<ul class="fields">{items}</ul>'
    return (
        f'<tr class="{kind}"><th scope="row">{e(label)}</th><td class="state">{state}{fields}</td>'
        f"{cell(pair.a)}{cell(pair.b)}</tr>"
    )


def html_page(pairs: list[Aligned], name_a: str, name_b: str) -> str:
    """The page comparing recording ``name_a`` (A) with ``name_b`` (B)."""
    e = html.escape
    digest = base64.b64encode(hashlib.sha256(STYLE.encode("utf-8")).digest()).decode()
    csp = f"default-src 'none'; style-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    same = sum(1 for p in pairs if p.same)
    verdict = "they differ" if differs(pairs) else "the same answers"
    rows = "".join(_row(p) for p in pairs)
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{e(csp)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>mcpsniff compare</title><style>{STYLE}</style></head><body>"
        f"<h1>A: {e(name_a)}<br>B: {e(name_b)}</h1>"
        f'<p class="summary">{len(pairs)} requests aligned by method, tool and arguments; '
        f"{same} answered alike: {verdict}.</p>"
        '<table><thead><tr><th scope="col" class="w-request">request</th>'
        '<th scope="col" class="w-comparison">comparison</th><th scope="col">A answered</th>'
        f'<th scope="col">B answered</th></tr></thead><tbody>{rows}</tbody></table>'
        "</body></html>\n"
    )
