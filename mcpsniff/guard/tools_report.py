"""``mcpsniff tools``: each server's tools, fingerprints, sizes, tokens and guard findings."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from mcpsniff.core.escape import terminal_safe
from mcpsniff.guard.context_cost import ServerCost, tokenizer_note
from mcpsniff.guard.tokens import Cost


def tools_data(servers: Sequence[ServerCost]) -> dict[str, Any]:
    """The ``--format json`` document."""
    return {**tokenizer_note(), "servers": [s.as_data() for s in servers]}


def cost_text(cost: Cost) -> str:
    """``1,234 B, 300 o200k_base, 310 cl100k_base tokens`` (bytes only without tokenizers)."""
    text = f"{cost.bytes:,} B"
    if cost.tokens:
        text += ", " + ", ".join(f"{n:,} {name}" for name, n in cost.tokens.items()) + " tokens"
    return text


def tools_lines(servers: Sequence[ServerCost], *, every_kind: bool = False) -> Iterator[str]:
    """The text report: a block per server, largest definitions first.

    Only tools unless ``every_kind`` (prompts, resources and templates count in
    the totals either way).
    """
    if not servers:
        yield "no server listed its definitions in these traces"
        return
    for server in servers:
        yield (
            f"{terminal_safe(server.identity)}: {len(server.definitions)} definition(s), "
            f"{cost_text(server.total)}; {server.sessions} session(s), offer {server.offer}"
        )
        for item in server.definitions:
            if item.definition.kind != "tool" and not every_kind:
                continue
            yield (
                f"  {item.definition.kind:<8} {terminal_safe(item.definition.name[:60]):<32} "
                f"{item.definition.fingerprint}  {cost_text(item.cost)}"
            )
            for note in item.notes:
                yield f"      {terminal_safe(note)}"
        for finding in server.findings:
            yield f"  {finding.severity} {finding.rule}: {terminal_safe(finding.message)}"
    note = tokenizer_note()
    if note["tokenizers"]:
        names = "; ".join(f"{k} ({v})" for k, v in note["tokenizers"].items())
        yield f"tokens: {names}. {note['not_estimated']}"
    else:
        yield "tokens: not counted (pip install 'mcpsniff[guard]' for the bpe-openai tokenizer)"


def context_lines(servers: Sequence[ServerCost], largest: int = 5) -> Iterator[str]:
    """The context cost section of ``stats`` and the report: per server, its largest tools."""
    if not servers:
        return
    yield "context cost of definitions (what each server adds to a model's context)"
    for server in servers:
        yield f"  {terminal_safe(server.identity)}: {cost_text(server.total)}"
        for item in server.definitions[:largest]:
            yield (
                f"    {item.definition.kind} {terminal_safe(item.definition.name[:60])}: "
                f"{cost_text(item.cost)}"
            )
        if len(server.definitions) > largest:
            yield f"    … {len(server.definitions) - largest} more (mcpsniff tools)"
    note = tokenizer_note()
    if note["tokenizers"]:
        yield f"  tokens by {', '.join(note['tokenizers'])}; {note['not_estimated']}"
    else:
        yield "  tokens not counted (pip install 'mcpsniff[guard]')"
