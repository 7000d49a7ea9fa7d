"""The text tables of ``mcpsniff stats``. Every name from the trace is made terminal-safe."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from mcpsniff.core.error_layers import CODE_NAMES, LAYER_TITLES, TOOL
from mcpsniff.core.escape import terminal_safe
from mcpsniff.stats.compute import CallStats, TraceStats

_NAME_WIDTH = 36


def _name(text: str) -> str:
    safe = terminal_safe(text)
    return safe if len(safe) <= _NAME_WIDTH else safe[: _NAME_WIDTH - 1] + "…"


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 1:
        return f"{value * 1000:.0f}µs"
    if value < 1000:
        return f"{value:.1f}ms"
    return f"{value / 1000:.2f}s"


def _count(n: int) -> str:
    return f"{n:,}" if n else "-"


def _rows(title: str, table: dict[str, CallStats], tools: bool) -> Iterator[str]:
    first = "calls" if tools else "requests"
    yield (
        f"{title:<{_NAME_WIDTH}} {first:>9} {'notifs' if not tools else '':>7} {'errors':>7} "
        f"{'cancel':>7} {'p50':>8} {'p95':>8} {'p99':>8} {'max':>8}"
    )
    order = sorted(
        table.items(), key=lambda item: (-(item[1].requests + item[1].notifications), item[0])
    )
    for name, stats in order:
        s = stats.summary()
        yield (
            f"{_name(name):<{_NAME_WIDTH}} {_count(stats.requests):>9} "
            f"{_count(stats.notifications) if not tools else '':>7} {_count(stats.errors):>7} "
            f"{_count(stats.cancelled):>7} {_ms(s['p50_ms']):>8} {_ms(s['p95_ms']):>8} "
            f"{_ms(s['p99_ms']):>8} {_ms(s['max_ms']):>8}"
        )


def _codes(layer: str, codes: Counter[Any]) -> str:
    parts = []
    for code, n in codes.most_common(6):
        if layer == TOOL:
            parts.append(f"{_name(str(code))} ×{n}")
        else:
            name = CODE_NAMES.get(code) if isinstance(code, int) else None
            label = _name(str(code)) + (f" {name}" if name else "")
            parts.append(f"{label} ×{n}")
    if len(codes) > 6:
        parts.append(f"… {len(codes) - 6} more")
    return ", ".join(parts)


def stats_lines(
    stats: TraceStats, source: str, titles: dict[str, str] | None = None
) -> Iterator[str]:
    """The ``stats`` text report for the trace named ``source``; ``titles``: each
    session's one-line identity by key, listed under the headline."""
    f = stats.findings
    yield (
        f"{terminal_safe(source)}: {stats.messages:,} messages in {len(stats.sessions)} "
        f"session(s); findings: {f['error']} error(s), {f['warning']} warning(s), "
        f"{f['info']} info"
    )
    for key, title in (titles or {}).items():
        yield terminal_safe(f"  session {key}: {title}")
    yield ""
    yield from _rows("method", stats.by_method, tools=False)
    if stats.by_tool:
        yield ""
        yield from _rows("tool", stats.by_tool, tools=True)
    yield ""
    yield "errors by layer"
    for layer, codes in stats.errors_by_layer.items():
        total = sum(codes.values())
        detail = _codes(layer, codes)
        yield f"  {LAYER_TITLES[layer]:<54} {total:>7,}" + (f"   {detail}" if detail else "")
    yield ""
    waits = sorted(stats.cancelled_waits_s)
    cancel = f"cancellations: {stats.cancellations:,}"
    if waits:
        cancel += (
            f" ({len(waits):,} before any answer, after {waits[len(waits) // 2]:.2f} s median, "
            f"{waits[-1]:.2f} s longest)"
        )
    yield cancel
    unanswered = stats.unanswered
    line = f"unanswered requests: {sum(unanswered.values()):,}"
    if unanswered:
        line += " (" + ", ".join(f"{_name(m)} ×{n}" for m, n in unanswered.most_common(6)) + ")"
    yield line
