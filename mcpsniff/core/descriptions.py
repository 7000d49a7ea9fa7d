"""Plain descriptions of the rules ``explain.WRITTEN`` does not cover: what is wrong, who fixes it.

The catalogue's *Check* cells are written for the checker's authors
(``[C] prompts/list, prompts/get only with serverCaps.prompts``). A server
author reads these instead: whole sentences, no shorthand, the fix last.
``explain.explanation`` prefers ``explain.WRITTEN``, then these, and builds a
sentence from the catalogue row only for a rule in neither.
"""

from __future__ import annotations

PLAIN: dict[str, str] = {
    # JSON-RPC 2.0 (JR-*)
    "JR-METHOD-TYPE": "The method of a request or notification must be a string. Fix the sender "
    "to put the method name in quotes.",
    "JR-METHOD-RPC-RESERVED": 'Method names that begin with "rpc." are reserved by JSON-RPC '
    "for its own extensions. Rename the method.",
    "JR-PARAMS-STRUCTURED": "When a message has params, they must be an object or an array, "
    "never a number, string, boolean or null. Leave params out instead of sending null.",
    "JR-ID-TYPE": "A request id must be a string or a number. Booleans, objects and arrays "
    "are not ids; fix the sender's id generator.",
    "JR-RESULT-XOR-ERROR": "A message is either a request or notification (with a method) or a "
    "response (with a result or an error), never both; this one had a method and a result "
    "or error. Fix the sender to send them as separate messages.",
    "JR-ERROR-OBJECT": "The error member of a response must be an object, and its message a "
    "string. Fix the responder's error serializer to send an object with an integer code "
    "and a string message (data is optional).",
    "JR-ERROR-CODE-INT": "An error code must be an integer, not a string or a fraction. Send "
    "the number itself, for example -32602.",
    "JR-ERROR-MSG-SHORT": "An error message should be one short sentence; mcpsniff flags a "
    "message with a line break or longer than 200 characters. Put details such as stack "
    "traces in error.data instead.",
    "JR-ERROR-RESERVED": "Error codes from -32768 to -32000 are reserved by JSON-RPC; only the "
    "five predefined codes and the server-error block (-32099 to -32000) may be used. Use an "
    "application code outside that range.",
    "JR-MEMBER-CASE": 'JSON-RPC member names are case-sensitive: "Jsonrpc", "ID" or '
    '"Method" are unknown members, not the protocol\'s. Spell them in lower case.',
    "JR-BATCH-BAD-JSON": "A batch that is not valid JSON gets a single -32700 Parse error "
    "response with id null, not one response per element.",
    "JR-BATCH-ELEMENT": "Each invalid element of a batch gets its own -32600 Invalid Request "
    "response (id null) inside the reply array.",
    "JR-BATCH-RESP-COUNT": "The reply to a batch is an array with one response per request "
    "that had an id and none for notifications. Fix the responder to answer each request once.",
    "JR-BATCH-ALL-NOTIF": "A batch of notifications only gets no reply at all, not an empty "
    "array (over HTTP: 202 Accepted with no body).",
    # MCP messages (MSG-*)
    "MSG-PARAMS-OBJECT": "MCP params are always a JSON object; MCP has no positional "
    "parameters. Send named parameters in an object.",
    "MSG-RESULT-OBJECT": "An MCP result is always a JSON object, never an array, a primitive "
    "or null. Return an object, even an empty one.",
    "MSG-RESP-XOR": "A response must not carry both result and error: a success has result, "
    "a failure has error with code and message. Send exactly one.",
    "MSG-ERR-FIELDS": "An error needs at least an integer code and a string message. Fix the "
    "responder's error objects.",
    "MSG-ERR-ID": "An error response carries the id of the request it answers; only when the "
    "request was too malformed to read its id may the id be null or missing.",
    "MSG-NOTIF-NO-ID": "A notification has no id member. A message whose method starts with "
    "notifications/ came with an id, which makes it a request that expects an answer. Drop "
    "the id from notifications.",
    "MSG-METHOD-DIRECTION": "This method does not exist in the session's protocol version, or "
    "this side may not send it (initialize goes from client to server, sampling requests from "
    "server to client). Send it only where the specification allows.",
    "MSG-METHOD-UNKNOWN": "The request names a method that no MCP version or official extension "
    "mcpsniff knows, so the receiver will answer -32601 Method not found. A custom "
    "notification under notifications/ is not reported, since receivers ignore those.",
    "MSG-BATCH-V1": "Protocol version 2024-11-05 has no JSON-RPC batches. Send each message on "
    "its own.",
    "MSG-BATCH-V2-SHAPE": "A batch holds either only requests and notifications or only "
    "responses, never both kinds. Split it.",
    "MSG-BATCH-V2-INIT": "The initialize request must not be sent inside a batch. Send it on "
    "its own first.",
    "MSG-BATCH-REMOVED": "Batches were removed in 2025-06-18: every stdio line and every HTTP "
    "POST body holds exactly one message. Send each message on its own.",
    "MSG-META-KEYS": "From 2025-06-18 on, every _meta key is an optional prefix (dot-separated "
    "labels ending in /) and a name made of letters, digits, dots, dashes and underscores "
    "(traceparent, tracestate and baggage are allowed too). Rename the key.",
    "MSG-META-PROGRESS": "A progress token in _meta must be a string or a number (MCP asks for "
    "an integer); a boolean, null, object or array is flagged. Fix the requester's token.",
    # Lifecycle (LC-*)
    "LC-INIT-PARAMS": "The initialize request needs protocolVersion (a string), capabilities "
    "(an object) and clientInfo with a name and a version. Fix the client's initialize.",
    "LC-INIT-RESULT": "A successful initialize result needs protocolVersion, capabilities and "
    "serverInfo with a name and a version; instructions, if present, is a string.",
    "LC-INITIALIZED-ORDER": "The client sent requests after the initialize result but before "
    "notifications/initialized. Send the notification first: it tells the server the client "
    "is ready.",
    "LC-VERSION-CLIENT": "The client's initialize asked for a protocolVersion that is not a "
    "date-shaped version string (YYYY-MM-DD). A client should ask for a published protocol "
    "version, the latest it supports.",
    "LC-VERSION-CLIENT-DISCONNECT": "The server answered with another protocol version than "
    "the client asked for and the client kept going. A client that does not support the "
    "server's version should disconnect; check that it really supports it.",
    "LC-INIT-REPEAT": "The client sent initialize twice in one session. Start a new session "
    "(a new process or a new session id) instead.",
    # Capability gating (CAP-*)
    "CAP-PROMPTS": "The client called prompts/list or prompts/get although the server did not "
    "declare the prompts capability. Check the server's capabilities before calling.",
    "CAP-RESOURCES": "The client called resources/list, resources/read or "
    "resources/templates/list although the server did not declare the resources capability.",
    "CAP-RES-SUBSCRIBE": "The client sent resources/subscribe or resources/unsubscribe although "
    "the server did not declare resources.subscribe as true. Check the server's "
    "capabilities first.",
    "CAP-LOGGING-SETLEVEL": "The client sent logging/setLevel although the server did not "
    "declare the logging capability.",
    "CAP-COMPLETIONS": "The client sent completion/complete although the server did not "
    "declare the completions capability.",
    "CAP-LISTCHANGED-SERVER": "The server sent a list_changed notification for tools, prompts "
    "or resources without declaring listChanged as true for that feature. Declare it or stop "
    "sending the notification.",
    "CAP-RES-UPDATED": (
        "The server sent notifications/resources/updated without declaring "
        "resources.subscribe as true. Declare it or stop sending the notification."
    ),
    "CAP-SAMPLING": "The server asked for sampling/createMessage although the client did not "
    "declare the sampling capability.",
    "CAP-ROOTS": "The server sent roots/list although the client did not declare the roots "
    "capability.",
    "CAP-ROOTS-LISTCHANGED": "The client sent notifications/roots/list_changed without "
    "declaring roots.listChanged as true. A client must declare that capability before it "
    "sends the notification.",
    "CAP-ELICITATION": "The server sent elicitation/create although the client did not declare "
    "the elicitation capability.",
    "CAP-ELICIT-MODE": "The server asked for an elicitation mode the client did not declare "
    "(an empty elicitation capability means form mode only; URL mode needs elicitation.url).",
    "CAP-SAMPLING-TOOLS": "The server sent tools or toolChoice in a sampling/createMessage "
    "request although the client did not declare sampling.tools. A server must check that "
    "capability first.",
    "CAP-SAMPLING-CONTEXT": "The server asked for includeContext thisServer or allServers "
    "although the client did not declare sampling.context. A server must check that "
    "capability first.",
    "CAP-SHAPE": "Capability values are objects, listChanged and subscribe are booleans, and "
    "experimental maps names to objects. Fix the declared capabilities.",
    # Cancellation and progress
    "CANCEL-SHAPE": "A notifications/cancelled needs params.requestId, a string or a number "
    "naming the request to cancel, and its reason, if any, must be a string. Fix the "
    "sender's cancellation.",
    "CANCEL-SAME-DIRECTION": "A cancellation may only name a request its own sender issued; "
    "this one names an unknown request or one the other side sent.",
    "CANCEL-IN-PROGRESS": "The sender cancelled a request it had already received the answer "
    "to. Only cancel requests that are still in flight.",
    "CANCEL-TASK": "A request that runs as a task is cancelled with tasks/cancel, never with "
    "notifications/cancelled. Fix the requestor's cancellation.",
    "PROG-TOKEN-TYPE": "A progress token must be a string or an integer; this one was a "
    "fractional number. Fix the requester's token.",
    "PROG-TOKEN-UNIQUE": "Progress tokens must be unique among the sender's requests in "
    "flight; this one is already used by another active request.",
    "PROG-ACTIVE-TOKEN": "A progress notification must name the token of a request still in "
    "flight that the other side sent; this token is unknown or its request has finished.",
    "PROG-TASK-TOKEN": "A task-augmented request's progress token stays valid until the task "
    "ends, and no longer: this progress came after the task reached a terminal status. Stop "
    "sending progress when the task ends.",
    "PROG-PARAMS": "A notifications/progress needs a progressToken and a numeric progress; its "
    "total, if any, must be a number and its message a string. Fix the sender's progress "
    "notification.",
    "PROG-TOTAL": "The progress value is larger than the total, which usually means the total "
    "is wrong. Send a total the progress does not exceed, or none.",
    "PROG-DIRECTION-V5": "In 2026-07-28 only the server sends progress notifications, and only "
    "about a client's request. Fix the client to stop sending them.",
    "PING-EMPTY-RESULT": "The answer to ping is an empty result object ({}); only _meta may be "
    "in it. Fix the receiver to answer ping with {}.",
    "PING-NO-PARAMS": "A ping request has no parameters (only _meta is tolerated). Send ping "
    "without params.",
    # Logging
    "LOG-LEVEL-ENUM": "Log levels in logging/setLevel and notifications/message are debug, "
    "info, notice, warning, error, critical, alert and emergency; this level is none of "
    "them. Use one of those names.",
    "LOG-SETLEVEL-INVALID": "A server should answer logging/setLevel with an invalid level by "
    "the error -32602 Invalid params. Fix the server's setLevel handler.",
    "LOG-SETLEVEL-RESULT": "A successful logging/setLevel result is empty.",
    "LOG-FILTER": "After the client set a log level, the server sent a log message below it. "
    "Filter messages by the level the client asked for.",
    "LOG-MESSAGE-PARAMS": "A notifications/message needs level and data in its params, and its "
    "logger, if any, must be a string. Fix the server's log notification.",
    # Completion and pagination
    "COMPL-MAX-100": "A completion/complete result lists at most 100 values. Return the first "
    "100 and set hasMore.",
    "COMPL-RESULT-SHAPE": "A completion/complete result needs completion.values, an array of "
    "strings. Fix the server's completion result.",
    "COMPL-REF": "A completion/complete request needs a ref of type ref/prompt (with a name) or "
    "ref/resource (with a uri), and an argument with a string name and a string value. Fix "
    "the client's request.",
    "COMPL-CONTEXT": "The context.arguments of a completion/complete request map argument names "
    "to string values. Fix the client's request.",
    "COMPL-REF-KNOWN": "The completion/complete request names a prompt that the server's "
    "prompts/list did not list. Complete only arguments of listed prompts.",
    "PAGE-SHAPE": "A paginated list request takes an optional string cursor, and its result an "
    "optional string nextCursor. Send cursors as strings.",
    "PAGE-CURSOR-OPAQUE": "A cursor must be sent back exactly as the server gave it in "
    "nextCursor for the same method; clients must not build or change cursors.",
    "PAGE-CURSOR-SESSION": "The client reused a cursor from another session. Cursors are only "
    "valid in the session that issued them.",
    "PAGE-INVALID-CURSOR": "A server should answer a cursor it never issued with the error "
    "-32602 Invalid params, not with a page or another error. Fix the server's pagination.",
    # Tools
    "TOOL-LIST-SHAPE": "Each tool in a tools/list result needs a string name and an inputSchema "
    'object whose type is "object", and the result needs a tools array. Fix the tool '
    "definitions.",
    "TOOL-INPUTSCHEMA-VALID": "From 2025-11-25 on, a tool's inputSchema must be a valid JSON "
    "Schema (2020-12 unless $schema says otherwise). A tool without arguments can use "
    '{"type": "object", "additionalProperties": false}.',
    "TOOL-NAME-UNIQUE": "Two tools in tools/list have the same name, so a client cannot tell "
    "which one it calls. Rename one.",
    "TOOL-NAME-FORMAT": "From 2025-11-25 on, tool names should be 1 to 128 characters of "
    "letters, digits, underscores, dots and dashes, without spaces or commas. Rename the "
    "tool.",
    "TOOL-CALL-ARGS-OBJECT": "The arguments of a tools/call request must be an object mapping "
    "argument names to values. Fix the client's call.",
    "TOOL-STRUCTURED-TYPE": "From 2025-06-18 on, a tool result's structuredContent must be a "
    "JSON object. Wrap other values in an object.",
    "TOOL-STRUCTURED-TEXT": "A tool result with structuredContent should also carry the same "
    "JSON as text, for clients that do not read structured output.",
    "TOOL-BINARY-BASE64": "Image and audio blocks need base64 data and a MIME type, and an "
    "embedded resource's blob must be base64. Fix the server's content.",
    "TOOL-EMBEDDED-RES-CAP": "The tool result embeds a resource, but the server does not "
    "declare the resources capability. Declare it.",
    "TOOL-RESOURCE-LINK-SHAPE": "A resource_link content block needs a string uri and a string "
    "name. Fix the server's content.",
    "TOOL-ANNOTATIONS-SHAPE": "Tool annotations readOnlyHint, destructiveHint, idempotentHint "
    "and openWorldHint are booleans, and title is a string. Fix the tool definition.",
    # Resources
    "RES-LIST-SHAPE": "Every entry of a resources/list result needs a string uri and a string "
    "name. Fix the server's resource list.",
    "RES-READ-SHAPE": "Each item of a resources/read result has a uri and exactly one of text "
    "or blob (base64).",
    "RES-BLOB-BASE64": "The blob of a resources/read item must be valid base64. Fix the "
    "server's encoding.",
    "RES-URI": "A resource uri must be a valid URI (RFC 3986: a scheme, a colon, no "
    "whitespace); custom schemes are fine. Fix the server's resource URIs.",
    "RES-TEMPLATE-SHAPE": "Every entry of a resources/templates/list result needs a string "
    "uriTemplate and a string name. Fix the server's template list.",
    "RES-SUB-RESULT": "A successful resources/subscribe or resources/unsubscribe result is empty.",
    "RES-ANNOTATIONS": 'In resource and content annotations, audience lists only "user" or '
    '"assistant", priority is a number from 0 to 1, and lastModified is an ISO 8601 '
    "date-time. Fix the annotations.",
    # Prompts
    "PROMPT-LIST-SHAPE": "Every entry of a prompts/list result needs a string name, and its "
    "arguments, if any, must be an array. Fix the server's prompt list.",
    "PROMPT-GET-ARGS": "The argument values of a prompts/get request must be strings. Fix the "
    "client to send every argument as a string.",
    "PROMPT-REQUIRED-ARGS": (
        "The client called prompts/get without an argument that prompts/list marked as "
        "required; the server will refuse it with -32602. Pass every required argument."
    ),
    "PROMPT-MESSAGES": "Every message of a prompts/get result needs a role of user or assistant "
    "and one content block (an object, not an array). Fix the server's prompt messages.",
    "PROMPT-EMBEDDED": "An embedded resource in a prompts/get message needs a valid URI and "
    "either a text or a base64 blob. Fix the server's prompt.",
    # Sampling, roots, elicitation
    "SAMP-REQ-SHAPE": "A sampling/createMessage request needs messages (each with a role of "
    "user or assistant and content) and an integer maxTokens. Fix the server's sampling "
    "request.",
    "SAMP-PRIORITIES": "The costPriority, speedPriority and intelligencePriority of "
    "modelPreferences are numbers between 0 and 1. Fix the server's sampling request.",
    "SAMP-RESULT-SHAPE": "A sampling/createMessage result needs a role of user or assistant, "
    "content and a string model name. Fix the client's sampling result.",
    "SAMP-TOOLRESULT-ONLY": "A sampling message that contains tool results contains nothing "
    "else. Fix the server to send tool results in a message of their own.",
    "SAMP-TOOL-BALANCE": "Every assistant sampling message with tool_use blocks must be "
    "followed by a user message of tool_result blocks, one for each tool_use id. Fix the "
    "server's message list.",
    "SAMP-TOOLCHOICE": "The mode of toolChoice is auto, required or none, and when the server "
    "asked for none the client's result must not use a tool. Fix the side the finding "
    "names.",
    "ROOTS-FILE-URI": "Every root in a roots/list result must have a file:// URI. Fix the "
    "client's roots.",
    "ROOTS-RESULT-SHAPE": "A roots/list result needs a roots array whose entries each have a "
    "string uri. Fix the client's roots result.",
    "ELIC-SCHEMA-FLAT": "An elicitation's requestedSchema is an object of flat properties: "
    "strings, numbers, integers, booleans, enums, or arrays of fixed options. Nested "
    "objects are not allowed; flatten the form.",
    "ELIC-RESULT-ACTION": "An elicitation/create result's action must be accept, decline or "
    "cancel. Fix the client's elicitation result.",
    "ELIC-CONTENT-SCHEMA": "The content the client accepted must match the requestedSchema it "
    "was asked for. Fix the client's form handling.",
    "ELIC-MODE-FIELDS": "A form-mode elicitation needs a requestedSchema object; a URL-mode one "
    "needs a string url, message and elicitationId. Fix the server's elicitation request.",
    "ELIC-COMPLETE-NOTIF": "A notifications/elicitation/complete must name the elicitationId of "
    "an earlier URL-mode elicitation/create of the same session. Fix the server to complete "
    "only elicitations it started.",
    "ELIC-URL-REQUIRED-ERR": "An error -32042 (URL elicitation required) must carry "
    "data.elicitations: a non-empty list of URL-mode elicitations, each with an "
    "elicitationId. Fix the server's error.",
    "ELIC-URL-SAFE": (
        "An elicitation URL must not carry credentials: no token, password or session in its "
        "query and no user:password; it should use https outside local development."
    ),
    "ELIC-FORM-NO-LINKS": "Form-mode elicitations must not contain clickable links; use URL "
    "mode to send the user to a page.",
    # Tasks (2025-11-25)
    "TASK-CAP-REQUESTOR": "A request may only be task-augmented when the receiver declared "
    "task support for that kind of request in capabilities.tasks.",
    "TASK-LIST-CANCEL-CAP": "A requestor may send tasks/list or tasks/cancel only when the "
    "receiver declared tasks.list or tasks.cancel. Check the capability first.",
    "TASK-TOOL-NO-CAP": "The client called a tool as a task although the server did not "
    "declare tasks.requests.tools.call.",
    "TASK-TOOL-FORBIDDEN": "The client called a tool as a task although the tool does not "
    "support tasks (execution.taskSupport absent or forbidden).",
    "TASK-TOOL-REQUIRED": 'A tool whose execution.taskSupport is "required" must be called as a '
    "task, with params.task; the client called it without. Fix the client to call it as a "
    "task.",
    "TASK-UNDECLARED-RECEIVER": "A receiver that never declared task support answered a "
    "task-augmented request with a task. It should process the request normally.",
    "TASK-ID": "A taskId is a non-empty string the receiver generates, unique among its tasks. "
    "Fix the receiver's task ids.",
    "TASK-FIELDS": "Every task carries a known status and ISO 8601 createdAt and lastUpdatedAt; "
    "ttl is a number or null (and present where the spec requires it), and pollInterval, if "
    "any, is a number. Fix the receiver's task objects.",
    "TASK-RELATED-META": "The requests tasks/get, tasks/list and tasks/cancel and the task "
    "status notifications name their task by its taskId parameter, so they should not carry "
    "_meta io.modelcontextprotocol/related-task. Drop that metadata from them.",
    "TASK-CANCEL-TERMINAL": "A tasks/cancel of a task that already ended must fail with -32602 "
    "Invalid params. Fix the receiver's tasks/cancel.",
    "TASK-CANCEL-RESULT": "A successful tasks/cancel answers with the task in status "
    '"cancelled". Fix the receiver\'s tasks/cancel result.',
    "TASK-ERRORS": "An error answering tasks/get, tasks/result, tasks/cancel or tasks/list uses "
    "-32602 for an unknown task or invalid cursor and -32603 for an internal failure "
    "(tasks/result may pass on the task's own error). Use those codes.",
    "TASK-POLL-INTERVAL": "The requestor polled tasks/get faster than the pollInterval the "
    "receiver asked for. Wait at least that long between polls.",
    "TASK-FAILED-ISERROR": "A tool task whose result has isError true should end with status "
    "failed, not completed. Fix the server's task status.",
    # Transports
    "SSE-ENDPOINT-EVENT": "On the legacy HTTP+SSE transport the server's first event is "
    '"endpoint", whose data is the URI to POST messages to.',
    "HTTP-202": "A POST holding only responses or notifications is answered 202 Accepted with "
    "no body when accepted, or with an HTTP error status when not.",
    "HTTP-REQ-CONTENT-TYPE": "A POST holding a request is answered with Content-Type "
    "application/json or text/event-stream; 202 is not an answer to a request.",
    "HTTP-GET-ACCEPT": "The client's GET must accept text/event-stream.",
    "HTTP-GET-REPLY": "A GET on the MCP endpoint is answered with an event stream or with "
    "405 Method Not Allowed.",
    "HTTP-EVENT-ID-UNIQUE": "SSE event ids must be unique across all streams of a session, so "
    "a client can resume from the right place.",
    "HTTP-SESSION-CHARS": "A session id may only use visible ASCII characters (0x21 to 0x7E).",
    "HTTP-SESSION-404": "Once the server ended a session, requests with its id get 404 Not Found.",
    "HTTP-SESSION-REINIT": "After a 404 for its session id, the client must start over with a "
    "new initialize without a session id instead of reusing the dead one.",
    "HTTP-PROTO-HEADER-VALUE": "The MCP-Protocol-Version header must name the protocol version "
    "the session negotiated.",
    "HTTP-PROTO-HEADER-400": "A server must answer a request whose MCP-Protocol-Version header "
    "names no MCP version with 400 Bad Request. Validate the header before handling the "
    "request.",
    "AUTH-BEARER-EVERY": "Once authorized, the client sends Authorization: Bearer with every "
    "HTTP request, not only the first.",
    "AUTH-NO-QUERY-TOKEN": "Access tokens must never travel in the URL's query string; send "
    "them in the Authorization header.",
    "AUTH-401-WWW-AUTH": "A server's 401 Unauthorized response must carry a WWW-Authenticate "
    "header, which points the client to the protected resource metadata and so to the "
    "authorization server. Add the header to every 401.",
    # General fields
    "ICON-SHAPE": "Each icon needs a string src, and its sizes, if any, are strings and its "
    "theme light or dark. Fix the icon list.",
    "ICON-SAFE-SCHEME": "Icon sources must be https: or data: URIs; clients reject javascript:, "
    "file: and other schemes.",
    # 2026-07-28 (MOD-*)
    "MOD-META-REQUIRED": (
        "In 2026-07-28 every client request carries _meta io.modelcontextprotocol/"
        "protocolVersion and io.modelcontextprotocol/clientCapabilities; servers reject a "
        "request without them. Add both to every request."
    ),
    "MOD-CLIENTINFO": "In 2026-07-28 requests should carry _meta io.modelcontextprotocol/"
    "clientInfo naming the client.",
    "MOD-SERVERINFO": "In 2026-07-28 every result should carry _meta "
    "io.modelcontextprotocol/serverInfo with the server's name and version. Add it to every "
    "result.",
    "MOD-UNSUPPORTED-VERSION": "A 2026-07-28 server that does not support the requested "
    "protocol version answers -32022 with data.supported (the versions it speaks, an array "
    "of strings without the refused one) and data.requested, under HTTP 400; a client that "
    "retries picks a version from data.supported.",
    "MOD-MISSING-CLIENT-CAP": "In 2026-07-28 a -32021 error (missing client capability) must "
    "name the capabilities it needs in data.requiredCapabilities, and over HTTP come with "
    "status 400 Bad Request. Fix the server's error.",
    "MOD-DISCOVER": "A 2026-07-28 server/discover result needs supportedVersions (an array) and "
    "capabilities (an object); its resultType and cache hints are judged by MOD-RESULTTYPE "
    "and MOD-CACHE. Fix the server's discover result.",
    "MOD-RESULTTYPE": 'In 2026-07-28 every result carries resultType "complete" or '
    '"input_required" (or "task", from the tasks extension). Set it on every result.',
    "MOD-NO-SERVER-REQUESTS": "In 2026-07-28 the server sends no JSON-RPC requests (sampling, "
    "elicitation and roots travel inside inputRequests) and the client sends no responses.",
    "MOD-MRTR-METHODS": 'A resultType of "input_required" may only answer prompts/get, '
    "resources/read and tools/call.",
    "MOD-MRTR-CONTENT": "An input_required result carries inputRequests or requestState; each "
    "input request is an elicitation, sampling or roots request for a feature the client "
    "declared in that request.",
    "MOD-MRTR-RETRY-ID": "When a client retries a request that got an input_required result, "
    "the retry must use a new JSON-RPC id. Fix the client's retry.",
    "MOD-MRTR-STATE-ECHO": (
        "A client must send back the requestState of an input_required result unchanged, in the "
        "one retry of the request it answered, and invent none when the server gave none. Fix "
        "the client's retry."
    ),
    "MOD-LOG-OPTIN": (
        "In 2026-07-28 a server sends log messages only for a request whose _meta asked for "
        "them (io.modelcontextprotocol/logLevel), at or above the level asked, and never on a "
        "subscriptions/listen stream. Send logs only where they were asked for."
    ),
    "MOD-CACHE": (
        "Complete results of server/discover and the list and read methods carry ttlMs (an "
        'integer of 0 or more) and cacheScope ("public" or "private").'
    ),
    "MOD-ERRCODES": "2026-07-28 allows only -32020, -32021 and -32022 between -32020 and "
    "-32099, and never -32002 or -32042. Use the codes the specification defines.",
    "MOD-RES-NOT-FOUND": (
        "In 2026-07-28 a server answers resources/read of a resource that does not exist with "
        "-32602 Invalid params, not -32002 and not an empty contents array. A resource is known "
        "not to exist when the server's complete resource list and template list both leave its "
        "URI out."
    ),
    "MOD-REMOVED": "2026-07-28 removed initialize, notifications/initialized, ping, "
    "logging/setLevel, resource subscriptions, notifications/roots/list_changed, the tasks "
    "methods and their params.task augmentation, notifications/elicitation/complete and the "
    "elicitationId of URL elicitations, and stream resumption with Last-Event-ID. Stop "
    "sending them in 2026-07-28 sessions.",
    "MOD-HTTP-PROTO-HEADER": "Every 2026-07-28 POST carries an MCP-Protocol-Version header equal "
    "to the body's _meta protocol version; a server answers a mismatch with 400 and -32020.",
    "MOD-HTTP-STD-HEADERS": "Every 2026-07-28 POST carries Mcp-Method equal to the body's "
    "method, and Mcp-Name equal to the tool or prompt name or the resource URI; a server "
    "answers a missing or different header with 400 and -32020.",
    # Declined requests (rules/declined.py)
    "CAP-NOT-SUPPORTED-CODE": "A request for a feature whose capability the receiver did not "
    "declare (prompts, resources, tools, completions, logging; sampling, elicitation) is "
    "refused with -32601 Method not found. Reported when the receiver refuses it with another "
    "error code; a -32700 or -32600 answer is not judged.",
    "ROOTS-UNSUPPORTED": "A client that did not declare the roots capability answers "
    "roots/list with -32601 Method not found, not with a list or another error.",
    "SAMP-TOOLS-NO-CAP-ERROR": "A client that did not declare sampling.tools must return an "
    "error for a sampling/createMessage that carries tools or toolChoice. Reported when it "
    "answers such a request with a result.",
    "ELIC-UNSUPPORTED-MODE-ERR": "A client refuses an elicitation/create in a mode it did not "
    "declare (url when it declared form only, or the reverse) with -32602 Invalid params. "
    "Reported when it answers with a result or another code.",
    "COMPL-ERRORS": "A failed completion/complete is answered with a standard JSON-RPC "
    "error: -32601 when completions are not supported, -32602 for an unknown prompt or "
    "resource or a missing argument, -32603 for an internal error. Reported for any other "
    "code.",
    "TOOL-ARGS-ERROR-KIND": "Arguments a tool does not accept are a tool execution error: a "
    "result with isError true that the model can read and correct, not a JSON-RPC error. "
    "Reported when a well-formed call of a tool the server listed is refused with -32602.",
    "RES-NOT-FOUND": "Up to 2025-11-25 a server answers resources/read of a resource that "
    "does not exist with error -32002 Resource not found. Reported when it answers another "
    "error code or an empty contents array for a URI that neither its complete resource list "
    "nor its templates offer.",
    # Secrets (rules/sensitive.py)
    "LOG-NO-SECRETS": "Log messages must not contain credentials or secrets. Reported as a "
    "warning when the data of notifications/message holds a value in a known credential "
    "format (an API key, a bearer token, a private key) or a member named like a credential, "
    "or a value the recorder redacted as a secret.",
    "ELIC-NO-SENSITIVE": "A server must not ask for passwords, API keys, access tokens or "
    "payment credentials in a form-mode elicitation; URL mode sends the user to the server "
    "instead. Reported as a warning for each form field named like a credential.",
    # 2026-07-28 cancellation (rules/cancellation_2026.py)
    "MOD-CANCEL": "In 2026-07-28 a client cancels a request over Streamable HTTP by closing "
    "its response stream; notifications/cancelled is for stdio only, and a server need not "
    "act on it. Reported as a notice when a client sends it over Streamable HTTP.",
    "STDIO-V5-CANCEL": "On stdio in 2026-07-28, after the client's notifications/cancelled "
    "the server sends nothing more for that request. Reported when the server answers the "
    "request more than two seconds after the cancellation (a reply that crossed it is a "
    "race).",
    # Streamable HTTP sessions (rules/http_sessions.py)
    "HTTP-SESSION-ASSIGN": "A server assigns a session id on the response that carries the "
    "InitializeResult. Reported as a notice when a response to another request hands out an "
    "Mcp-Session-Id different from the one the request carried.",
    "HTTP-SESSION-SECURE": "A session id should be a cryptographically secure value (a UUID, "
    "a JWT, a hash) that nobody can guess. Reported as a notice for an id shorter than 16 "
    "characters or made of digits only.",
    "HTTP-SESSION-MISSING-400": "A server that requires sessions answers a request without "
    "Mcp-Session-Id (other than initialize) with 400 Bad Request. Reported when a server that "
    "assigned sessions refuses such a POST with another client error, such as 404.",
    "AUTH-INSUFFICIENT-SCOPE": "A server refusing an access token whose scopes are too narrow "
    "answers 403 with a WWW-Authenticate Bearer challenge naming error=insufficient_scope and "
    "the scopes needed. Reported for a 403 to a request with an Authorization header (and no "
    "Origin) that lacks that challenge.",
    # Tasks and MCP Apps
    "TASK-RESULT-BLOCKS": "A tasks/result request waits until its task is completed, failed "
    "or cancelled. Reported when the task shows a working or input_required status after the "
    "tasks/result answer (in a poll sent after it, or a status notification).",
    "EXT-APPS-VISIBILITY": "In the MCP Apps extension a tool's _meta.ui.visibility, when "
    "present, is an array whose members are model and app: it says whether the model, the "
    "app, or both may see and call the tool.",
    "CANCEL-NO-RESPONSE": "A request that was cancelled should get no response; the "
    "canceller ignores one that comes anyway. Reported as a notice when the answer comes more "
    "than two seconds after the cancellation (a reply that crossed it is a race), except on "
    "2026-07-28 stdio, where it is an error.",
    "SAMP-ERRORS": "A client refuses a sampling/createMessage whose messages mix tool results "
    "with other content, or lack the tool results of a tool use, with -32602 Invalid params. "
    "Reported when it answers such a request with a result or another error code.",
    "PING-PROMPT": "A ping is answered promptly with an empty result. Reported as a notice "
    "when the answer takes more than ten seconds: the receiver's message loop was blocked, "
    "and the sender may take the connection for dead.",
    "MOD-LOGLEVEL-INVALID": "In 2026-07-28, a server should reject a request whose _meta "
    "io.modelcontextprotocol/logLevel is not a log level with the error -32602 Invalid "
    "params. This one answered with a result or another error.",
    "MOD-LIST-STABLE": "A 2026-07-28 server should list its tools in a deterministic order: "
    "two tools/list results with the same tools in a different order defeat a client's "
    "cache. Sort the tools the same way every time.",
    "MOD-HTTP-PARAM-HEADERS": "When a tool's inputSchema marks a parameter with x-mcp-header, "
    "a 2026-07-28 client over Streamable HTTP must send its value in the Mcp-Param-<name> "
    "header (and no header when the value is null or absent), and the server must reject a "
    "mismatch with HTTP 400 and -32020. The server's annotations must themselves be valid "
    "(a non-empty token, unique, on a string, integer or boolean parameter), since clients "
    "drop tools whose annotations are not.",
    "MOD-HTTP-BASE64": "Over 2026-07-28 Streamable HTTP, a client must send an Mcp-Name or "
    "Mcp-Param header value that is not plain ASCII (non-ASCII text, control characters, "
    "leading or trailing spaces, or text that looks like the marker) as =?base64?<base64 of "
    "the UTF-8>?=, with the markers in lower case. A server must decode such a value before "
    "comparing it with the body. The finding names the side at fault.",
    "MOD-HTTP-404-METHOD": "A 2026-07-28 server that does not implement a method must answer "
    "with HTTP 404 Not Found and a JSON-RPC -32601 error; this -32601 came with another "
    "HTTP status. Send 404 with it.",
    "MOD-HTTP-SSE": "On the SSE stream that answers a 2026-07-28 request, a server's progress "
    "notifications must carry that request's progressToken, the final response should end "
    "the stream, and the stream's response should carry the header X-Accel-Buffering: no so "
    "that proxies do not hold events back. Fix the server's stream handling.",
    "MOD-DEPRECATED": "2026-07-28 deprecates roots, sampling, logging, the HTTP+SSE transport "
    "and includeContext thisServer or allServers: they still work but will be removed. "
    "mcpsniff notes the first use of each in a session, with the way to migrate.",
    "EXT-TASKS-NEGOTIATED": "A server may answer a request with a task only when that "
    "request's clientCapabilities declare the io.modelcontextprotocol/tasks extension and "
    "the server advertises it; a client that has not declared it must not send tasks/get, "
    "tasks/update or tasks/cancel or ask for taskIds on subscriptions/listen (the server "
    "refuses those with -32021).",
    "EXT-TASKS-RESULTTYPE": 'A server may set resultType "task" only on a CreateTaskResult '
    "answering tools/call; its results of tasks/get, tasks/update and tasks/cancel must "
    'carry resultType "complete". Fix the server\'s result types.',
    "EXT-TASKS-FIELDS": "Every task a server sends (in a CreateTaskResult, a tasks/get result "
    "or notifications/tasks) needs a non-empty string taskId, a known status, ISO 8601 "
    "createdAt and lastUpdatedAt, ttlMs (an integer or null) and, if present, an integer "
    "pollIntervalMs. An input_required task carries inputRequests, a completed one its "
    "result and a failed one its error.",
    "EXT-TASKS-TRANSITION": "A task moves between working and input_required and ends "
    "completed, failed or cancelled; once it ends, its status never changes. The server "
    "sent a task that left a terminal status; keep ended tasks as they are.",
    "EXT-TASKS-UNKNOWN": "A server's tasks/get answer must describe the task that was asked "
    "for, it may send notifications/tasks only for tasks a subscription agreed to "
    "(taskIds), and it must refuse an unknown or expired taskId with -32602 (an internal "
    "failure is -32603).",
    "EXT-TASKS-ACK": "A server must acknowledge a successful tasks/update or tasks/cancel "
    "with an empty result: nothing but resultType and _meta. Drop the other fields.",
    "EXT-TASKS-CANCEL": "A client must cancel a request that was answered with a task by "
    "tasks/cancel, never by notifications/cancelled. Fix the client's cancellation.",
    "EXT-TASKS-HEADER": "Over Streamable HTTP, a client must send tasks/get, tasks/update and "
    "tasks/cancel with the Mcp-Name header set to the request's params.taskId, so that the "
    "request reaches the server that holds the task.",
    "EXT-TASKS-INPUT-KEYS": "A server must keep each inputRequests key for one request over a "
    "task's lifetime (never reuse it for a different one), and a client's tasks/update must "
    "answer only keys the task's inputRequests asked. The finding names the side at fault.",
    "EXT-APPS-RESOURCE": "A ui:// resource is an MCP App view: a server must return it from "
    "resources/read with mimeType text/html;profile=mcp-app. Fix the resource's MIME type.",
    "EXT-APPS-TOOL-URI": "A tool's _meta.ui.resourceUri must be a ui:// URI naming a resource "
    "the server has: reading it must not fail. Fix the URI or serve the resource.",
    "EXT-APPS-NEGOTIATED": "A server should list tools with _meta.ui (an MCP App view) only "
    "to a client that declared the io.modelcontextprotocol/ui extension in its "
    "capabilities. Check the client's capabilities first.",
    "GUARD-HIDDEN-DEFINITION": "A tool, parameter, prompt or resource description carried "
    "something aimed at the model that the user does not see or would not approve: Unicode "
    "tag, zero-width or bidirectional control characters, HTML comments or hidden markup, "
    'instructions to the model ("ignore previous instructions", "do not tell the user"), '
    "requests to read secret files or call another server's tools, encoded blobs, or URLs "
    "that carry data out. Remove it from the description.",
    "GUARD-HIDDEN-RESULT": "The text of a tool result carried something aimed at the model "
    "that the user does not see: the same hidden characters, markup, instructions and "
    "secret-file requests as in GUARD-HIDDEN-DEFINITION (a base64 run counts only when it "
    "decodes to instructions). Treat the server as untrusted until it is fixed.",
    "GUARD-DRIFT-SESSION": "Within one session, a complete tools/list, prompts/list, "
    "resources/list or resources/templates/list changed the definitions of the previous one "
    "(name, description, schemas, annotations or _meta). What the user approved is no "
    "longer what the model is told; the finding lists the changes field by field.",
    "RESIL-DROP-HANG": "When mcpsniff withheld a request or its answer (--fault drop), the "
    "peer that sent the request should time out and send notifications/cancelled for it "
    "before the session ends, instead of waiting forever. Add a timeout to every request.",
    "RESIL-PARSE-NO-REPLY": "When mcpsniff delivered a client message damaged into invalid "
    "JSON (--fault corrupt), the server should answer it with a -32700 Parse error with a "
    "null id and carry on. This server never answered it.",
    "RESIL-VERSION-NO-RETRY": "After mcpsniff answered a request with -32022 "
    "UnsupportedProtocolVersion (--fault 'error -32022'), the client should retry it with a "
    "version from data.supported, or stop and show the error. This client went on as if the "
    "request had succeeded.",
    "RESIL-SESSION-REUSED": "After mcpsniff answered 404 Not Found to a request carrying an "
    "Mcp-Session-Id (--fault 'status 404', as when a session expires), the client must drop "
    "that session id and start a new session with an initialize request that carries none. "
    "This client still used the expired session id.",
    "RESIL-STREAM-NO-RESUME": "After mcpsniff cut the SSE stream that was to carry the answer "
    "to a request (--fault disconnect), the client should resume the stream with "
    "Last-Event-ID (before 2026-07-28), send the request again, or cancel it. This client "
    "was still waiting for an answer that could no longer come.",
}
