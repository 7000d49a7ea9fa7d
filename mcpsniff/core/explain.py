"""One plain paragraph per rule: what a finding means and how to fix it.

``description(rule_id)`` returns it (the UI, reports, ``mcpsniff rules
--format json`` and ``mcpsniff check --explain``). The rules people meet most
have a paragraph written for them (``WRITTEN``), the others a plain description
(``descriptions.PLAIN``); a rule in neither gets one built from its catalogue
row: the check in words, who is at fault, and where the spec says so, with the
catalogue's shorthand (``[C]``, ``⇒``, ``V4+``) spelled out.
"""

from __future__ import annotations

import re

from mcpsniff.core import catalog, spec_links
from mcpsniff.core.descriptions import PLAIN
from mcpsniff.core.lazy_pattern import lazy
from mcpsniff.core.rules.severities import OVERRIDES, severities

#: Hand-written paragraphs: the meaning first, then the fix.
WRITTEN: dict[str, str] = {
    "JR-PARSE": (
        "A frame was not valid JSON, so the receiver cannot read it at all and (if it answers) "
        "must reply with a single -32700 Parse error whose id is null. The cause names the "
        "usual mistake: a log line or print() on stdout, a pretty-printed message, a trailing "
        "comma, NaN, a comment, a raw control character, a byte order mark, UTF-16, invalid "
        "UTF-8 or an empty line (a notice). Fix the writer: serialize every message with a real "
        "JSON encoder, on one line, UTF-8, and send logs to stderr."
    ),
    "JR-TOPLEVEL": (
        "A frame held valid JSON that is not a JSON-RPC message: a number, a string, an empty "
        "array [], an array element that is not an object, or an object with neither a method "
        "nor a result or error. The receiver answers it with -32600 Invalid Request and id "
        "null. Fix the sender to write one request, notification or response object per "
        "message."
    ),
    "JR-VERSION": (
        'Every JSON-RPC 2.0 message must carry "jsonrpc": "2.0" exactly (not 2.0 as a '
        "number, not missing). Strict peers reject the message. Fix the serializer to add "
        "the member to every request, notification and response."
    ),
    "JR-RESP-ID": (
        "A response's id must be the request's id, with the same JSON type and value: \"1\" and 1 "
        "are different ids. The cause says what went wrong: a result carried no id, the id came "
        "back as another type, a response answered an id nobody sent, a request was answered "
        "twice, or an integer id lost precision through a 64-bit float. Fix the server to echo "
        "the id exactly as received (keep it as the parsed JSON value, never convert it)."
    ),
    "JR-RESP-REQUIRED": (
        "Every request must get exactly one response; this one never did before the "
        "session ended (a cancelled request is exempt). The client is left waiting, usually "
        "until a timeout. Fix the receiver so that every code path, errors and exceptions "
        "included, sends a result or an error for the request's id."
    ),
    "JR-RESP-ID-NULL": (
        "The reply to input whose id could not be read (invalid JSON, an invalid request) "
        "named an id. The receiver could not have known it, and a client may pair the error "
        "with an unrelated request. Send such -32700/-32600 errors with id null."
    ),
    "JR-BATCH-EMPTY": (
        "The reply to an empty batch [] was wrong. JSON-RPC asks for exactly one error "
        "object (not an array) with code -32600 Invalid Request and id null. Fix the "
        "receiver's batch handling to treat [] as an invalid request."
    ),
    "JR-ERROR-SEMANTICS": (
        "A -32700 Parse error answered JSON that did parse: a request, or valid JSON that is "
        "not a request (which calls for -32600 Invalid Request). -32700 says the bytes were not "
        "JSON at all; clients act on the code, so use the one that says what happened."
    ),
    "JR-NOTIF-NO-REPLY": (
        'A result arrived with "id": null, which can only answer a notification or nothing at '
        "all. Notifications must never be answered: fix the receiver to send nothing back for a "
        "message without an id."
    ),
    "MSG-ID-REUSE": (
        "A request id was used twice in one session. MCP forbids it even for retries (the "
        "common advice to retry under the same id for server-side dedup does not apply "
        "here), because answers to the two cannot be told apart. The finding says whether "
        "it was an identical retry or a different request. Use a new id for every request."
    ),
    "MSG-ID-INFLIGHT": (
        "In the stateless era a request id may be reused only after its request completed; "
        "this one was reused while the first was still waiting. Give concurrent requests "
        "distinct ids."
    ),
    "MSG-ID-NOT-NULL": (
        'A request had "id": null. In JSON-RPC that is a request, not a notification, and '
        "MCP forbids null ids. Send a string or an integer id, or leave the id out for a "
        "notification."
    ),
    "MSG-ID-TYPE": (
        "MCP request ids are strings or integers; this id was a fractional number, which "
        "JSON-RPC allows but MCP does not. Use a counter or a UUID string."
    ),
    "STDIO-STDOUT-CLEAN": (
        "The server wrote something to stdout that is not an MCP message. On stdio, stdout "
        "carries only JSON-RPC messages; the client fails to parse anything else. Send logs, "
        "banners and print() output to stderr. It is usually a consequence of the JR-PARSE "
        "finding it names."
    ),
    "STDIO-STDIN-CLEAN": (
        "The client wrote something to the server's stdin that is not an MCP message. Write "
        "only newline-delimited JSON-RPC messages to it."
    ),
    "STDIO-FRAMING": (
        "On stdio each message is one line: messages are delimited by newlines and must not "
        "contain raw newlines. A pretty-printed message, or a string holding a raw newline, "
        "reaches the reader as several unparseable lines. Serialize compactly (no indent) "
        "and let the JSON encoder escape newlines inside strings as \\n."
    ),
    "STDIO-UTF8": (
        "MCP messages must be UTF-8. These bytes are not: a legacy encoding such as cp1252, "
        "UTF-16, or an encoded lone surrogate. Open the stream with UTF-8 encoding and make "
        "sure strings are valid Unicode before they are serialized."
    ),
    "LC-INIT-FIRST": (
        "The first request of a handshake-era session must be initialize. Anything sent "
        "before it has no negotiated version or capabilities to rely on. Send initialize "
        "first and wait for its result."
    ),
    "LC-INITIALIZED-MISSING": (
        "The client never sent notifications/initialized after the initialize result. "
        "Servers may refuse or ignore requests until it arrives, which looks like tool calls "
        "failing right after connecting. Send it once, right after the initialize result."
    ),
    "LC-INITIALIZED-EARLY": (
        "The client sent notifications/initialized before the initialize result arrived, or "
        "after initialize failed. Send it only after a successful initialize result: that "
        "result settles the version the notification belongs to."
    ),
    "LC-CLIENT-PRE-RESPONSE": (
        "The client sent a request (other than ping) before the initialize result came. "
        "Wait for the result: until then no version or capability is agreed."
    ),
    "LC-SERVER-PRE-INITIALIZED": (
        "The server sent a request other than ping before the client's "
        "notifications/initialized. A server must wait for that notification before it sends "
        "sampling, elicitation or roots requests."
    ),
    "LC-VERSION-SERVER": (
        "The server answered initialize with a protocolVersion that is not a published MCP "
        "version. A server must answer with the client's version when it supports it, else "
        "another published version it supports."
    ),
    "CAP-LOGGING-NOTIFY": (
        "The server sent log notifications without declaring the logging capability. "
        "Declare logging: {} in the server capabilities, or do not send notifications/message."
    ),
    "CAP-TOOLS": (
        "A tools request was sent to a server that did not declare the tools capability. "
        "Check the capabilities of the initialize result before calling a feature."
    ),
    "TOOL-RESULT-SHAPE": (
        "A tools/call result must have a content array of content blocks of types the protocol "
        "version knows (text, image, audio, resource, resource_link), and isError, when "
        "present, must be a boolean. Build the result with the SDK's types, and report tool "
        "failures as isError: true."
    ),
    "TOOL-ARGS-SCHEMA": (
        "The arguments of a tools/call do not match the tool's inputSchema from tools/list. "
        "The server will likely reject or misread them. Send arguments that validate "
        "against the schema (names, types, required fields)."
    ),
    "TOOL-OUTPUT-CONFORMS": (
        "A tool that declares an outputSchema must return structuredContent that conforms "
        "to it (for results that are not errors). Fix the tool's output or its schema."
    ),
    "TOOL-CALL-KNOWN": (
        "The client called a tool that is not in the latest tools/list result. Refresh the "
        "tool list (after notifications/tools/list_changed) and call only listed tools."
    ),
    "PROG-STOP": (
        "Progress notifications for a token must stop when its request is answered. Send no "
        "progress after the final result."
    ),
    "PROG-MONOTONIC": (
        "The progress value must increase with each notification for a token. Send a "
        "larger progress each time (and a total, if known, that it does not exceed)."
    ),
    "CANCEL-INITIALIZE": (
        "The client cancelled its initialize request, which it must never do. Close the "
        "connection instead if initialization takes too long."
    ),
    "TASK-CREATE-RESULT": (
        "An accepted task-augmented request (params.task) is answered with a "
        "CreateTaskResult {task} whose status is 'working'; the real result comes later "
        "through tasks/result. Return the task first, not the method's result."
    ),
    "TASK-RESULT-META": (
        "The tasks/result response must name its task in "
        '_meta["io.modelcontextprotocol/related-task"].taskId. Add it to the payload.'
    ),
    "TASK-STATUS-TRANSITION": (
        "A task's status changed in a way the spec forbids: completed, failed and cancelled "
        "are final, and nothing moves a task out of them. Keep terminal tasks terminal."
    ),
    "HTTP-SESSION-ECHO": (
        "After the server assigned an Mcp-Session-Id, the client must send it on every "
        "later request of that session. Store it from the initialize response and send it back."
    ),
    "HTTP-PROTO-HEADER": (
        "Streamable HTTP requests after initialization must carry the MCP-Protocol-Version "
        "header with the negotiated version. Send it on every request after initialize."
    ),
    "HTTP-POST-ACCEPT": (
        "A client POST must accept both application/json and text/event-stream, since the "
        "server may answer either way. Send Accept: application/json, text/event-stream."
    ),
    "HTTP-ORIGIN": (
        "A local server (its Host is localhost or a loopback address) accepted a request "
        "whose Origin is a web page elsewhere, or the opaque null origin. Servers must "
        "validate Origin against DNS rebinding, and from 2025-11-25 answer an invalid one "
        "with 403 Forbidden. mcpsniff cannot know which origins the server allows, so this "
        "is a warning; a page on another local port (the Inspector) is not reported. Fix "
        "the server to check Origin against an allow-list and answer 403 otherwise."
    ),
    "SSE-ORIGIN": (
        "A local legacy HTTP+SSE server accepted a connection whose Origin is a web page "
        "elsewhere (or null): it must validate Origin on every connection (DNS rebinding). "
        "A heuristic, reported as a warning. Fix the server to check Origin and refuse "
        "foreign pages."
    ),
    "HTTP-POST-BODY": (
        "A client POST carried more than one message where the version allows one: from "
        "2025-06-18 every POST body is a single request, notification or response (2025-03-26 "
        "allowed a batch of one kind). It is reported under its root, MSG-BATCH-REMOVED or "
        "MSG-BATCH-V2-SHAPE. Fix the client to POST each message on its own."
    ),
    "MOD-HTTP-POST-BODY": (
        "In 2026-07-28 a POST body is a single request or notification, never a response "
        "and never a batch: servers send no requests, so a client has nothing to answer. "
        "Fix the client to stop POSTing responses (input for a server travels in the retried "
        "request's inputResponses)."
    ),
    "HTTP-JSON-BODY": (
        "A server answered a POSTed request with an application/json body that is not the "
        "one response to that request: an array, a request or notification, or the answer "
        "to another POST's request. A JSON reply is one JSON object; anything else the "
        "server wants to send with it needs a text/event-stream reply."
    ),
    "HTTP-GET-NO-RESPONSES": (
        "The server sent a JSON-RPC response on the client's GET stream. That stream carries "
        "only server requests and notifications; a response goes on the stream (or JSON "
        "body) of the POST that carried its request, unless the client resumed that stream "
        "with Last-Event-ID. Clients wait on the POST and may never see it. Fix the server "
        "to route each response to its request's stream."
    ),
    "SSE-POST-TARGET": (
        "In the legacy HTTP+SSE transport the server's endpoint event names the URI for "
        "client messages, and every client message must be POSTed to exactly that URI. This "
        "client POSTed elsewhere (another path or session id), so the server may not route "
        "it to the session. Fix the client to POST to the URI of the endpoint event."
    ),
    "SSE-TWO-ENDPOINTS": (
        "A legacy HTTP+SSE server must serve two endpoints: the SSE stream and the POST "
        "endpoint its endpoint event names. A POST to that very URI was answered 404 or 405 "
        "while the stream was open, so the server does not serve what it announced. Fix the "
        "server's routes (or the URI it puts in the endpoint event)."
    ),
    "MOD-HTTP-POST-ONLY": (
        "2026-07-28 Streamable HTTP is stateless: a server never mints an Mcp-Session-Id nor "
        "echoes the client's, and answers GET or DELETE on the endpoint with 405 Method Not "
        "Allowed. This server sent an Mcp-Session-Id on a 2026-07-28 reply, or answered a "
        "2026-07-28 GET or DELETE with another status. Drop the header for modern requests and "
        "refuse GET and DELETE (a dual-era server may still mint a session for a 2025-era "
        "initialize)."
    ),
    "MOD-SUBS-ACK-FIRST": (
        "On a subscriptions/listen subscription the server's first message must be "
        "notifications/subscriptions/acknowledged carrying _meta "
        '"io.modelcontextprotocol/subscriptionId"; a change notification came before it (or '
        "the acknowledgement lacked the id). Clients use the acknowledgement to know which "
        "notifications will come. Fix the server to acknowledge before anything else."
    ),
    "MOD-SUBS-ID": (
        "Every notification of a subscription carries _meta "
        '"io.modelcontextprotocol/subscriptionId" set to the id of the subscriptions/listen '
        "request that opened it. This one named no open subscription, or had no id while one "
        "was open, so the client cannot tell which subscription it belongs to."
    ),
    "MOD-SUBS-FILTER": (
        "A subscription only receives the notification types the client asked for in "
        "params.notifications (toolsListChanged, promptsListChanged, resourcesListChanged, "
        "resourceSubscriptions URIs), and the acknowledgement honours a subset of them. The "
        "server sent or acknowledged something else. Fix the server to filter per subscription."
    ),
    "MOD-SUBS-CLOSE": (
        'A subscription ends gracefully with a result whose resultType is "complete" and '
        "whose _meta names the subscription id; a server tearing one down sends "
        "notifications/cancelled for the listen id, and never notifications/cancelled for "
        "anything else in 2026-07-28. Fix the server's closing message."
    ),
}

_BLAME = {
    "[C]": "the client",
    "[S]": "the server",
    "[Snd]": "the sender",
    "[Rcv]": "the receiver",
    "[Req]": "the requestor",
    "[Any]": "either side",
}
_BLAME_RE = lazy(r"^\s*(\[(?:C|S|Snd|Rcv|Req|Any)\])\s*")


def explanation(rule_id: str) -> str:
    """The paragraph for ``rule_id``; empty for an id the catalogue does not have."""
    written = WRITTEN.get(rule_id) or PLAIN.get(rule_id)
    if written is not None:
        return written
    try:
        entry = catalog.get(rule_id)
    except KeyError:
        return ""
    return built_description(entry)


def built_description(entry: catalog.CatalogEntry) -> str:
    """A paragraph built from the catalogue row of a rule nobody described by hand."""
    check = _plain(entry.check)
    match = _BLAME_RE.match(check)
    who = "the peer that sent it"
    if match is not None:
        who = _BLAME[match.group(1)]
        check = check[match.end() :]
    check = _spelled_out(check)
    if not check[:1].isalnum():
        check = f"The rule covers {check}"  # a cell that opens with code: [] or -32602
    check = check[:1].upper() + check[1:]
    if not check.endswith("."):
        check += "."
    level = {"error": "a MUST", "warning": "a SHOULD", "info": "a heuristic"}[
        entry.default_severity
    ]
    source = _spelled_out(_plain(spec_links.plain_source(entry))).rstrip(".")
    return f"{check} This is {level} of the spec, and {who} is the one to fix: see {source}."


_MARK_RE = lazy(r"\[(?:C|S|Snd|Rcv|Req|Any)\]")
_VCODE_RE = lazy(r"\bV([1-5])(?:\s*[\u2013-]\s*V([1-5])|(\+))?\b")
_SYMBOLS = {
    " ⇒ ": ": ",
    "⇒": ":",
    " ≡ ": " means ",
    " ∈ ": " is one of ",
    " ≤ ": " at most ",
    "serverCaps.": "the server capability ",
    "clientCaps.": "the client capability ",
    "serverCaps": "the server's capabilities",
    "clientCaps": "the client's capabilities",
}


def _version_words(match: re.Match[str]) -> str:
    low = catalog.VERSIONS[int(match.group(1)) - 1]
    if match.group(3):
        return f"from {low} on"
    if match.group(2):
        return f"{low} to {catalog.VERSIONS[int(match.group(2)) - 1]}"
    return low


def _spelled_out(text: str) -> str:
    """The catalogue's shorthand in words: who ([C]), implications (⇒), versions (V4+)."""
    text = _MARK_RE.sub(lambda m: _BLAME[m.group(0)], text)
    for symbol, words in _SYMBOLS.items():
        text = text.replace(symbol, words)
    return _VCODE_RE.sub(_version_words, text)


def _plain(text: str) -> str:
    """Catalogue Markdown as plain text: no code marks, no emphasis stars."""
    return text.replace("`", "").replace("**", "").replace("*", "").strip()


def explain_lines(rule_ids: list[str], width: int = 100) -> list[str]:
    """``RULE (severity): paragraph``, wrapped, for each rule: check's --explain section."""
    # Imported here: `check` imports this module for its --explain option,
    # and a check without it need not pay for textwrap (docs/performance.md, "Start-up").
    import textwrap

    lines: list[str] = []
    for rule_id in rule_ids:
        text = explanation(rule_id)
        if not text:
            continue
        note = severity_note(rule_id)
        lines.append(f"{rule_id} ({severities(rule_id)[0]})")
        lines.extend(
            textwrap.wrap(
                f"{text} {note}" if note else text,
                width,
                initial_indent="    ",
                subsequent_indent="    ",
            )
        )
    return lines


def severity_note(rule_id: str) -> str:
    """A sentence naming every severity ``rule_id``'s findings carry, or "" when they carry one.

    The level a rule is shown with is the strongest its findings carry
    (core/rules/severities.py), which can differ from the catalogue's keyword;
    a rule whose findings differ among themselves says so next to it.
    """
    carried = severities(rule_id)
    if len(carried) < 2:
        return ""
    named = ", ".join(carried[:-1]) + f" or {carried[-1]}"
    # A rule in OVERRIDES sets each finding's severity itself; any other takes
    # the catalogue's, which differs between protocol versions.
    cause = "what the finding shows" if rule_id in OVERRIDES else "the protocol version in force"
    return (
        f"Its findings are reported as {named}, depending on {cause}; {carried[0]} is the "
        "level it is listed with."
    )


def description(rule_id: str) -> str:
    """A plain paragraph saying what ``rule_id`` means and how to fix it, for reports and the UI.

    Hand-written for the common rules, else built from the catalogue row; an
    unknown id gets an empty string rather than an error, because ids can come
    from old traces.
    """
    return explanation(rule_id)
