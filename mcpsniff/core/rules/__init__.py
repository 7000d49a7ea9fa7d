"""The conformance rules, one module per concern.

* ``jsonrpc``: JSON-RPC 2.0 structure and MCP base messages (JR-*, MSG-*, STDIO-*)
* ``stdio``: frames that are not JSON (JR-PARSE) and the stdio rules they imply
* ``reuse``: request ids used twice, retry or conflict (MSG-ID-REUSE, MSG-ID-INFLIGHT)
* ``replies``: the replies to bad input (JR-BATCH-EMPTY, JR-RESP-ID-NULL, JR-ERROR-SEMANTICS)
* ``lifecycle``: eras, handshake, capabilities, stateless era (LC-*, CAP-*, MOD-*)
* ``interruption``: why a session ended with requests in flight (signal, kill, no end)
* ``flow``: cancellation, progress, unanswered requests (CANCEL-*, PROG-*)
* ``methods``: per-method parameters and results (TOOL-*, RES-*, PROMPT-*, ...)
* ``tasks``: task-augmented requests and tasks/* (TASK-*, 2025-11-25)
* ``client_features``: sampling and elicitation requests and replies (registered rules)
* ``utilities``: completion, prompts, logging, pagination, task errors, MRTR (registered)
* ``content``: content blocks, resources, annotations, icons (registered rules)
* ``registry``: ``@rule(ids, on=..., methods=...)``, how a rule declares itself
* ``repeats``: a result sent again byte for byte, and the rules that judged it clean
* ``http``: HTTP transport rules fed by the HTTP shell's events (HTTP-*, SSE-*, AUTH-*)
* ``http_bodies``: what may travel in a POST body, a JSON reply, a GET stream
* ``http_origin``: a local server accepting a foreign Origin (HTTP-ORIGIN, SSE-ORIGIN)
* ``sse_legacy``: the legacy transport's two endpoints (SSE-POST-TARGET, SSE-TWO-ENDPOINTS)
* ``http_stateless``: 2026-07-28 HTTP has no sessions (MOD-HTTP-POST-ONLY)
* ``subscriptions``: 2026-07-28 subscriptions/listen (MOD-SUBS-*)
* ``http_2026``: 2026-07-28 request metadata headers (MOD-HTTP-*-HEADER(S), MOD-HTTP-BASE64)
* ``http_status_2026``: the HTTP status of 2026-07-28 replies (MOD-HTTP-404-METHOD, ...)
* ``negotiation``: 2026-07-28 unsupported versions and required _meta, the server's side
* ``utilities_2026``: per-request log levels, trace context values, missing resources, tool order
* ``http_sse_2026``: a 2026-07-28 request's SSE stream (MOD-HTTP-SSE)
* ``tasks_extension``: the 2026-07-28 tasks extension (EXT-TASKS-*)
* ``tasks_routing``: its Mcp-Name routing header over Streamable HTTP (EXT-TASKS-HEADER)
* ``removed``: what 2026-07-28 removed or deprecated, in every position (MOD-REMOVED, ...)
* ``mrtr``: what inputRequests may ask, where a requestState may go (MOD-MRTR-*)
* ``apps_extension``: MCP Apps, tools with a ui:// view (EXT-APPS-*)
* ``declined``: the error a receiver gives for what it does not support or cannot do
* ``sensitive``: credentials in log messages and form elicitations
* ``cancellation_2026``: answers after a cancellation, 2026-07-28's ways to cancel
* ``http_sessions``: session ids a server hands out, 403 scope challenges
* ``latency``: a ping answered late (PING-PROMPT)
* ``guard``: hidden instructions in definitions and results, drift within a session (GUARD-*)
* ``resilience``: how a peer coped with a fault mcpsniff injected (RESIL-*)

Every module registers its rules with ``@rule``; ``Session`` only dispatches.
"""

from __future__ import annotations

from mcpsniff.core.catalog import all_entries

# The import order is the order the rules run in (registry.py): a root finding
# before its dependents, the JSON-RPC layer before MCP's, the HTTP state
# (http.py keeps the exchanges) before the rules that read it.
# isort: off
from mcpsniff.core.rules import registry
from mcpsniff.core.rules import replies
from mcpsniff.core.rules import stdio
from mcpsniff.core.rules import jsonrpc
from mcpsniff.core.rules import reuse
from mcpsniff.core.rules import lifecycle
from mcpsniff.core.rules import methods
from mcpsniff.core.rules import interruption
from mcpsniff.core.rules import flow
from mcpsniff.core.rules import tasks
from mcpsniff.core.rules import client_features
from mcpsniff.core.rules import content
from mcpsniff.core.rules import utilities
from mcpsniff.core.rules import http
from mcpsniff.core.rules import http_bodies
from mcpsniff.core.rules import http_origin
from mcpsniff.core.rules import sse_legacy
from mcpsniff.core.rules import http_stateless
from mcpsniff.core.rules import subscriptions
from mcpsniff.core.rules import http_2026
from mcpsniff.core.rules import http_status_2026
from mcpsniff.core.rules import negotiation
from mcpsniff.core.rules import utilities_2026
from mcpsniff.core.rules import http_sse_2026
from mcpsniff.core.rules import tasks_extension
from mcpsniff.core.rules import tasks_routing
from mcpsniff.core.rules import removed
from mcpsniff.core.rules import mrtr
from mcpsniff.core.rules import apps_extension
from mcpsniff.core.rules import declined
from mcpsniff.core.rules import sensitive
from mcpsniff.core.rules import cancellation_2026
from mcpsniff.core.rules import http_sessions
from mcpsniff.core.rules import latency
from mcpsniff.core.rules import guard
from mcpsniff.core.rules import resilience
# isort: on

#: The rule modules, in the order they register (and so run).
MODULES = (replies, stdio, jsonrpc, reuse, lifecycle, methods, interruption, flow, tasks)
MODULES += (client_features, content, utilities, http, http_bodies, http_origin, sse_legacy)
MODULES += (subscriptions, http_stateless, http_2026, http_status_2026, negotiation)
MODULES += (utilities_2026, http_sse_2026)
MODULES += (tasks_extension, tasks_routing, removed, mrtr, apps_extension)
MODULES += (declined, sensitive, cancellation_2026, http_sessions, latency)
MODULES += (guard,)
MODULES += (resilience,)

#: Every catalogue id the analyzer can report (the ids the registered rules
#: declare), in catalogue order.
IMPLEMENTED: tuple[str, ...] = tuple(
    sorted(registry.rule_ids(), key={e.id: i for i, e in enumerate(all_entries())}.__getitem__)
)
