"""The conformance rules, one module per concern.

* ``jsonrpc``: JSON-RPC 2.0 structure and MCP base messages (JR-*, MSG-*, STDIO-*)
* ``stdio``: frames that are not JSON (JR-PARSE) and the stdio rules they imply
* ``reuse``: request ids used twice, retry or conflict (MSG-ID-REUSE, MSG-ID-INFLIGHT)
* ``replies``: the replies to bad input (JR-BATCH-EMPTY, JR-RESP-ID-NULL, JR-ERROR-SEMANTICS)
* ``lifecycle``: eras, handshake, capabilities, stateless era (LC-*, CAP-*, MOD-*)
* ``flow``: cancellation, progress, unanswered requests (CANCEL-*, PROG-*)
* ``methods``: per-method parameters and results (TOOL-*, RES-*, PROMPT-*, ...)
* ``tasks``: task-augmented requests and tasks/* (TASK-*, 2025-11-25)
* ``client_features``: sampling and elicitation requests and replies (registered rules)
* ``utilities``: completion, prompts, logging, pagination, task errors, MRTR (registered)
* ``content``: content blocks, resources, annotations, icons (registered rules)
* ``registry``: ``@rule(ids, on=..., methods=...)``, how a rule declares itself
* ``http``: HTTP transport rules fed by the HTTP shell's events (HTTP-*, SSE-*)
"""

from __future__ import annotations

from mcpsniff.core.rules import (  # content, client_features: imported to register
    client_features,  # noqa: F401
    content,  # noqa: F401
    flow,
    http,
    jsonrpc,
    lifecycle,
    methods,
    registry,
    replies,
    reuse,
    stdio,
    tasks,
    utilities,  # noqa: F401
)

#: Every catalogue id the analyzer can report, in catalogue family order.
IMPLEMENTED: tuple[str, ...] = tuple(
    dict.fromkeys(
        jsonrpc.RULES
        + stdio.RULES
        + reuse.RULES
        + replies.RULES
        + lifecycle.RULES
        + flow.RULES
        + methods.RULES
        + tasks.RULES
        + http.RULES
        + registry.rule_ids()
    )
)
