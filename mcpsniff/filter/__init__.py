"""The filter language shared by ``show``, ``check``, ``stats``, the web UI and the exporters.

Borrowed from Wireshark's display filters and mitmproxy's flow filters, with
field names from the OpenTelemetry MCP conventions::

    mcp.method.name == tools/call and latency > 100ms
    gen_ai.tool.name ~ "^fs_" or error.code == -32602
    severity >= warning and not rule == JR-RESP-ID
    kind == error or error.type == tool_error
    "permission denied"                      (free text, case-insensitive)

Using it from another module (the whole public API)::

    from mcpsniff.filter import FilterError, build_views, compile_filter

    try:
        flt = compile_filter(expression)
    except FilterError as exc:
        print(f"bad filter: {exc}")     # one line: message (at column N)
        print(exc.caret())              # the expression, and a caret under column N
    for view in build_views(records):   # records in trace order (TraceReader.records())
        if flt.matches(view):
            ...                          # view.message, view.frame, view.findings, ...

``build_views`` joins each message with what concerns it (its findings, its
latency, its request's method and tool, the ``isError`` flag of a tool result,
what a cancellation cancelled); ``ViewBuilder`` does the same incrementally
for a live stream (``feed(record) -> list[MessageView]``). To give every view
all its findings, including those raised later (an unanswered request is
reported at session end), pass ``index_findings(records)`` from a first pass.
``load_views(path)`` does both passes over a trace file.

Semantics: ``==``/``!=`` compare exactly (``=`` is accepted for ``==``);
``~``/``!~`` search a case-insensitive regular expression (RE2's syntax, Python's
without backreferences and lookaround; linear time, see ``regex.py``); ``<``, ``>``,
``<=``, ``>=`` compare numbers, durations (``100ms``, ``1.5s``, ``2m``; a bare
number is milliseconds) and severities (``info < warning < error``). ``and``
(or ``&&``, or just a space), ``or`` (``||``), ``not`` (``!``) and parentheses
combine tests. A field alone tests that it is present (``error.code``); a word
that is not a field, or any quoted text, searches the message's bytes, method,
tool, rule ids and finding messages. ``FIELDS`` lists the fields.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpsniff.filter.compile import Predicate, compile_node, parse_duration
from mcpsniff.filter.errors import FilterError
from mcpsniff.filter.fields import ALIASES, FIELDS
from mcpsniff.filter.lexer import tokenize
from mcpsniff.filter.syntax import Node, Parser
from mcpsniff.filter.view import (
    Cancellation,
    MessageView,
    ViewBuilder,
    build_views,
    cancelled_request_id,
    index_findings,
    message_body,
    progress_values,
)

__all__ = [
    "ALIASES",
    "FIELDS",
    "HELP",
    "Cancellation",
    "Filter",
    "FilterError",
    "MessageView",
    "ViewBuilder",
    "build_views",
    "cancelled_request_id",
    "compile_filter",
    "index_findings",
    "load_views",
    "message_body",
    "parse_duration",
    "progress_values",
]


@dataclass(frozen=True, slots=True)
class Filter:
    """A compiled filter expression: ``matches(view)`` says whether a view passes."""

    expression: str
    tree: Node
    _predicate: Predicate

    def matches(self, view: MessageView) -> bool:
        """Whether ``view`` satisfies the expression."""
        return self._predicate(view)

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        # Sent to another process (``check --jobs``) as its expression, compiled
        # again there: the compiled predicate is made of closures, which pickle refuses.
        return compile_filter, (self.expression,)


def compile_filter(expression: str) -> Filter:
    """Parse and compile ``expression``. Raises ``FilterError`` (with a position) when invalid."""
    tree = Parser(expression, tokenize(expression)).parse()
    return Filter(expression, tree, compile_node(tree, expression))


def load_views(path: str | Path) -> Iterator[MessageView]:
    """Every view of the trace at ``path``, each with all its findings (two passes).

    Raises ``mcpsniff.trace.codec.TraceError`` when the file is not a readable trace.
    """
    from mcpsniff.trace.reader import TraceReader

    with TraceReader(path) as reader:
        index = index_findings(reader.records())
    with TraceReader(path) as reader:
        yield from build_views(reader.records(), index)


def _help() -> str:
    # "\b" alone on a line keeps click from re-wrapping the paragraph after it.
    fields = "\n".join(f"  {name:<20} {field.help}" for name, field in FIELDS.items())
    aliases = ", ".join(f"{short}={name}" for short, name in ALIASES.items())
    return (
        "\b\nFilter expressions (--filter), for example:\n"
        "  mcp.method.name == tools/call and latency > 100ms\n"
        '  gen_ai.tool.name ~ "^fs_" or error.code == -32602\n'
        "  severity >= warning and not rule == JR-RESP-ID\n"
        "  kind == error or error.type == tool_error\n"
        '  "permission denied"          (free text)\n\n'
        "\b\nOperators: == != ~ (regex, case-insensitive) !~ < > <= >=,\n"
        "and or not ( ); durations 100ms 1.5s 2m (bare numbers are ms).\n\n"
        f"\b\nFields:\n{fields}\n\n"
        f"Short names: {aliases}."
    )


#: The filter section of ``--help`` texts.
HELP = _help()
