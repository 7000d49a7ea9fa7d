"""rules/lifecycle.py: handshake, capabilities and the stateless era, each fired and near-missed."""

from __future__ import annotations

from typing import Any

import pytest

from mcpsniff.core.model import C2S
from tests.conftest import Conversation, error, notification, request, result
from tests.core.rules.dsl import Proof, assert_cause, assert_proof, c, end, note, play, req, res, s

V4, V5 = "2025-11-25", "2026-07-28"
INFO = {"name": "x", "version": "1"}
ALL_SERVER = {"tools": {}, "prompts": {}, "resources": {}, "logging": {}, "completions": {}}


def init(version: Any = V4, caps: Any = None, info: Any = INFO, id_: int = 0) -> dict[str, Any]:
    params = {"protocolVersion": version, "capabilities": {} if caps is None else caps}
    if info is not None:
        params["clientInfo"] = info
    return req(id_, "initialize", params)


def init_result(version: Any = V4, caps: Any = None, info: Any = INFO) -> dict[str, Any]:
    result = {"protocolVersion": version, "capabilities": ALL_SERVER if caps is None else caps}
    if info is not None:
        result["serverInfo"] = info
    return res(0, result)


INITIALIZED = note("notifications/initialized")


def shake(client_caps: Any = None, server_caps: Any = None) -> list:
    return [c(init(caps=client_caps)), s(init_result(caps=server_caps)), c(INITIALIZED)]


PING = req(1, "ping")

# --- the stateless era (2026-07-28)
META = {
    "io.modelcontextprotocol/protocolVersion": V5,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": INFO,
}
SERVER_META = {"io.modelcontextprotocol/serverInfo": INFO}


def v5(
    id_: int, method: str, params: dict[str, Any] | None = None, meta: Any = None
) -> dict[str, Any]:
    return req(id_, method, {**(params or {}), "_meta": META if meta is None else meta})


def v5_result(id_: int, body: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return res(id_, {"resultType": "complete", "_meta": SERVER_META, **body, **extra})


CACHE = {"ttlMs": 0, "cacheScope": "private"}


def v5_error(id_: int, code: int, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": "x"}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": id_, "error": error}


def hs(rule: str, fire: list, miss: list) -> Proof:
    """A proof that writes its own handshake."""
    return Proof(rule, fire, miss, version=None)


PROOFS = [
    hs(
        "LC-INIT-FIRST", fire=[c(PING)], miss=[c(init()), s(init_result()), c(INITIALIZED), c(PING)]
    ),
    hs("LC-INIT-PARAMS", fire=[c(init(info=None))], miss=[c(init())]),
    hs(
        "LC-INIT-RESULT",
        fire=[c(init()), s(init_result(info=None))],
        miss=[c(init()), s(init_result())],
    ),
    hs("LC-INITIALIZED-MISSING", fire=[c(init()), s(init_result()), end()], miss=[*shake(), end()]),
    hs(
        "LC-INITIALIZED-EARLY",
        fire=[c(init()), c(INITIALIZED), s(init_result())],
        miss=[c(init()), s(init_result()), c(INITIALIZED)],
    ),
    hs(
        "LC-INITIALIZED-ORDER",
        fire=[c(init()), s(init_result()), c(PING), c(req(2, "tools/list")), c(INITIALIZED)],
        miss=[*shake(), c(req(2, "tools/list"))],
    ),
    hs(
        "LC-CLIENT-PRE-RESPONSE",
        fire=[c(init()), c(req(2, "tools/list")), s(init_result())],
        miss=[c(init()), c(PING), s(init_result())],
    ),
    hs(
        "LC-SERVER-PRE-INITIALIZED",
        fire=[c(init(caps={"roots": {}})), s(init_result()), s(req(1, "roots/list"))],
        miss=[*shake(client_caps={"roots": {}}), s(req(1, "roots/list"))],
    ),
    hs("LC-VERSION-CLIENT", fire=[c(init(version="v4"))], miss=[c(init())]),
    hs(
        "LC-VERSION-SERVER",
        fire=[c(init()), s(init_result(version="2025-13-01"))],
        miss=[c(init()), s(init_result(version="2025-06-18"))],
    ),
    hs(
        "LC-VERSION-CLIENT-DISCONNECT",
        fire=[c(init()), s(init_result(version="2025-06-18")), c(INITIALIZED)],
        miss=[c(init()), s(init_result()), c(INITIALIZED)],
    ),
    hs("LC-INIT-REPEAT", fire=[*shake(), c(init(id_=9))], miss=[*shake(), c(PING)]),
    hs(
        "CAP-TOOLS",
        fire=[*shake(server_caps={}), c(req(1, "tools/list"))],
        miss=[*shake(), c(req(1, "tools/list"))],
    ),
    hs(
        "CAP-PROMPTS",
        fire=[*shake(server_caps={}), c(req(1, "prompts/list"))],
        miss=[*shake(), c(req(1, "prompts/list"))],
    ),
    hs(
        "CAP-RESOURCES",
        fire=[*shake(server_caps={}), c(req(1, "resources/list"))],
        miss=[*shake(), c(req(1, "resources/list"))],
    ),
    hs(
        "CAP-RES-SUBSCRIBE",
        fire=[*shake(), c(req(1, "resources/subscribe", {"uri": "x:/a"}))],
        miss=[
            *shake(server_caps={"resources": {"subscribe": True}}),
            c(req(1, "resources/subscribe", {"uri": "x:/a"})),
        ],
    ),
    hs(
        "CAP-LOGGING-SETLEVEL",
        fire=[*shake(server_caps={}), c(req(1, "logging/setLevel", {"level": "info"}))],
        miss=[*shake(), c(req(1, "logging/setLevel", {"level": "info"}))],
    ),
    hs(
        "CAP-LOGGING-NOTIFY",
        fire=[
            *shake(server_caps={}),
            s(note("notifications/message", {"level": "info", "data": "x"})),
        ],
        miss=[*shake(), s(note("notifications/message", {"level": "info", "data": "x"}))],
    ),
    hs(
        "CAP-COMPLETIONS",
        fire=[
            *shake(server_caps={}),
            c(
                req(
                    1,
                    "completion/complete",
                    {
                        "ref": {"type": "ref/prompt", "name": "p"},
                        "argument": {"name": "a", "value": ""},
                    },
                )
            ),
        ],
        miss=[
            *shake(),
            c(
                req(
                    1,
                    "completion/complete",
                    {
                        "ref": {"type": "ref/prompt", "name": "p"},
                        "argument": {"name": "a", "value": ""},
                    },
                )
            ),
        ],
    ),
    hs(
        "CAP-LISTCHANGED-SERVER",
        fire=[*shake(), s(note("notifications/tools/list_changed"))],
        miss=[
            *shake(server_caps={"tools": {"listChanged": True}}),
            s(note("notifications/tools/list_changed")),
        ],
    ),
    hs(
        "CAP-RES-UPDATED",
        fire=[*shake(), s(note("notifications/resources/updated", {"uri": "x:/a"}))],
        miss=[
            *shake(server_caps={"resources": {"subscribe": True}}),
            s(note("notifications/resources/updated", {"uri": "x:/a"})),
        ],
    ),
    hs(
        "CAP-SAMPLING",
        fire=[*shake(), s(req(1, "sampling/createMessage", {"messages": [], "maxTokens": 1}))],
        miss=[
            *shake(client_caps={"sampling": {}}),
            s(req(1, "sampling/createMessage", {"messages": [], "maxTokens": 1})),
        ],
    ),
    hs(
        "CAP-ROOTS",
        fire=[*shake(), s(req(1, "roots/list"))],
        miss=[*shake(client_caps={"roots": {}}), s(req(1, "roots/list"))],
    ),
    hs(
        "CAP-ROOTS-LISTCHANGED",
        fire=[*shake(client_caps={"roots": {}}), c(note("notifications/roots/list_changed"))],
        miss=[
            *shake(client_caps={"roots": {"listChanged": True}}),
            c(note("notifications/roots/list_changed")),
        ],
    ),
    hs(
        "CAP-ELICITATION",
        fire=[
            *shake(),
            s(
                req(
                    1, "elicitation/create", {"message": "m", "requestedSchema": {"type": "object"}}
                )
            ),
        ],
        miss=[
            *shake(client_caps={"elicitation": {}}),
            s(
                req(
                    1, "elicitation/create", {"message": "m", "requestedSchema": {"type": "object"}}
                )
            ),
        ],
    ),
    hs(
        "CAP-SHAPE",
        fire=[c(init(caps={"roots": {"listChanged": "yes"}}))],
        miss=[c(init(caps={"roots": {"listChanged": True}}))],
    ),
    hs(
        "MSG-METHOD-DIRECTION",
        fire=[*shake(), s(req(1, "tools/list"))],
        miss=[*shake(), c(req(1, "tools/list"))],
    ),
    hs(
        "MSG-METHOD-UNKNOWN",
        fire=[*shake(), c(req(1, "tools/run"))],
        miss=[*shake(), c(req(1, "tools/list"))],
    ),
    # --- stateless era
    hs(
        "MOD-META-REQUIRED",
        fire=[c(v5(1, "tools/list", meta={"io.modelcontextprotocol/protocolVersion": V5}))],
        miss=[c(v5(1, "tools/list"))],
    ),
    hs(
        "MOD-CLIENTINFO",
        fire=[
            c(
                v5(
                    1,
                    "tools/list",
                    meta={k: v for k, v in META.items() if not k.endswith("clientInfo")},
                )
            )
        ],
        miss=[c(v5(1, "tools/list"))],
    ),
    hs(
        "MOD-SERVERINFO",
        fire=[
            c(v5(1, "tools/call", {"name": "a"})),
            s(res(1, {"resultType": "complete", "content": []})),
        ],
        miss=[c(v5(1, "tools/call", {"name": "a"})), s(v5_result(1, {"content": []}))],
    ),
    hs(
        "MOD-RESULTTYPE",
        fire=[
            c(v5(1, "tools/call", {"name": "a"})),
            s(res(1, {"_meta": SERVER_META, "content": []})),
        ],
        miss=[c(v5(1, "tools/call", {"name": "a"})), s(v5_result(1, {"content": []}))],
    ),
    hs(
        "MOD-NO-SERVER-REQUESTS",
        fire=[c(v5(1, "tools/list")), s(req(7, "roots/list"))],
        miss=[c(v5(1, "tools/list")), s(v5_result(1, {"tools": []}, **CACHE))],
    ),
    hs(
        "MOD-MRTR-METHODS",
        fire=[
            c(v5(1, "tools/list")),
            s(v5_result(1, {"inputRequests": {}}, resultType="input_required")),
        ],
        miss=[
            c(v5(1, "tools/call", {"name": "a"})),
            s(v5_result(1, {"inputRequests": {}}, resultType="input_required")),
        ],
    ),
    hs(
        "MOD-MRTR-CONTENT",
        fire=[
            c(v5(1, "tools/call", {"name": "a"})),
            s(v5_result(1, {}, resultType="input_required")),
        ],
        miss=[
            c(v5(1, "tools/call", {"name": "a"})),
            s(v5_result(1, {"requestState": "s"}, resultType="input_required")),
        ],
    ),
    hs(
        "MOD-DISCOVER",
        fire=[c(v5(1, "server/discover")), s(v5_result(1, {"capabilities": {}}, **CACHE))],
        miss=[
            c(v5(1, "server/discover")),
            s(v5_result(1, {"capabilities": {}, "supportedVersions": [V5]}, **CACHE)),
        ],
    ),
    hs(
        "MOD-UNSUPPORTED-VERSION",
        fire=[c(v5(1, "tools/list")), s(v5_error(1, -32022))],
        miss=[
            c(
                v5(
                    1,
                    "tools/list",
                    meta={**META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"},
                )
            ),
            s(v5_error(1, -32022, {"supported": [V5], "requested": "2099-01-01"})),
        ],
    ),
    hs(
        "MOD-ERRCODES",
        fire=[c(v5(1, "tools/call", {"name": "a"})), s(v5_error(1, -32042))],
        miss=[c(v5(1, "tools/call", {"name": "a"})), s(v5_error(1, -32602))],
    ),
    hs(
        "MOD-CACHE",
        fire=[c(v5(1, "tools/list")), s(v5_result(1, {"tools": []}))],
        miss=[c(v5(1, "tools/list")), s(v5_result(1, {"tools": []}, **CACHE))],
    ),
    hs("MOD-REMOVED", fire=[c(v5(1, "ping"))], miss=[c(v5(1, "tools/list"))]),
    hs(
        "MOD-RES-NOT-FOUND",
        fire=[c(v5(1, "resources/read", {"uri": "x:/a"})), s(v5_error(1, -32002))],
        miss=[c(v5(1, "resources/read", {"uri": "x:/a"})), s(v5_error(1, -32602))],
    ),
]


def test_stateless_session_never_raises_handshake_findings(convo: Conversation) -> None:
    convo.client(_v5(1, "server/discover"))
    convo.server(
        _v5_result(
            1,
            {
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "ttlMs": 0,
                "cacheScope": "public",
            },
        )
    )
    convo.client(_v5(2, "tools/list"))
    convo.server(_v5_result(2, {"tools": [], "ttlMs": 1000, "cacheScope": "private"}))
    convo.close()
    assert [r for r in convo.rules() if r.startswith(("LC-", "CAP-"))] == []
    assert convo.findings == []


def test_stateless_rules(convo: Conversation) -> None:
    convo.client(_v5(1, "tools/list"))
    convo.server(result(1, {"tools": []}))
    convo.client(request(2, "tools/list"))
    convo.server(request(9, "roots/list"))
    rules = convo.rules()
    assert "MOD-RESULTTYPE" in rules
    assert "MOD-META-REQUIRED" in rules
    assert "MOD-NO-SERVER-REQUESTS" in rules
    assert "LC-INIT-FIRST" not in rules


def _v5(id_: int, method: str, params: dict | None = None) -> dict:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    }
    return request(id_, method, {**(params or {}), "_meta": meta})


def _v5_result(id_: int, value: dict) -> dict:
    meta = {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}
    return result(id_, {"resultType": "complete", "_meta": meta, **value})


# --------------------------------------------------------------------------- through a Session


def test_missing_initialized(convo: Conversation) -> None:
    init = convo.client(
        request(
            0,
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"},
            },
        )
    )
    reply = convo.server(
        result(
            0,
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "s", "version": "1"},
            },
        )
    )
    convo.client(request(1, "tools/list"))
    convo.close()
    (missing,) = convo.find("LC-INITIALIZED-MISSING")
    assert missing.seq == [init[0].seq, reply[0].seq]
    assert missing.severity == "error"
    assert convo.find("LC-INITIALIZED-ORDER")[0].data["method"] == "tools/list"


def test_first_message_must_be_initialize(convo: Conversation) -> None:
    convo.client(request(1, "tools/list"))
    (finding,) = convo.find("LC-INIT-FIRST")
    assert finding.data["method"] == "tools/list"


def test_discover_probe_then_initialize_is_not_a_violation(convo: Conversation) -> None:
    convo.client(request(1, "server/discover"))
    convo.server(error(1, -32601, "Method not found"))
    convo.handshake()
    assert convo.find("LC-INIT-FIRST") == []


def test_request_before_initialize_response(convo: Conversation) -> None:
    convo.client(
        request(
            0,
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"},
            },
        )
    )
    convo.client(request(1, "ping"))
    convo.client(request(2, "tools/list"))
    (finding,) = convo.find("LC-CLIENT-PRE-RESPONSE")
    assert finding.data["method"] == "tools/list"
    assert finding.severity == "warning"


def test_capability_gating_severity_depends_on_version() -> None:
    for version, severity in (("2025-03-26", "warning"), ("2025-06-18", "error")):
        convo = Conversation()
        convo.handshake(version, server_caps={"prompts": {}})
        convo.client(request(1, "tools/list"))
        (finding,) = convo.find("CAP-TOOLS")
        assert finding.severity == severity


def test_logging_notification_needs_logging_capability(convo: Conversation) -> None:
    convo.handshake(server_caps={"tools": {}})
    convo.server(notification("notifications/message", {"level": "info", "data": "x"}))
    assert convo.find("CAP-LOGGING-NOTIFY")[0].severity == "error"


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


def _stateless_offer(answer: dict[str, Any]) -> list:
    """A 2026-07-28 connection on which the client offers initialize, then goes on."""
    return [
        c(v5(1, "tools/list")),
        s(v5_result(1, {"tools": []}, **CACHE)),
        c(init(id_=500)),
        s(answer),
        c(v5(500, "tools/list")),
        s(v5_result(500, {"tools": []}, **CACHE)),
        c(v5(2, "tools/list")),
        s(v5_result(2, {"tools": []}, **CACHE)),
        end(),
    ]


def _findings(steps: list) -> list[tuple[str, str]]:
    convo = play(Proof("-", steps, [], version=None), steps)
    return [(f.rule, f.message) for f in convo.findings]


def test_a_refused_initialize_leaves_a_stateless_connection_stateless() -> None:
    """A modern server answers initialize with -32601 (the conformance suite's probe).

    The refusal pairs with its request, the ids after it still pair as stateless ones
    (500 reused after its answer is no MSG-ID-REUSE there), and no handshake rule waits
    for an initialize result or notifications/initialized. Sending a removed method to
    a connection already speaking 2026-07-28 is the one thing said.
    """
    findings = _findings(_stateless_offer(v5_error(500, -32601)))
    assert findings == [("MOD-REMOVED", 'the client sent "initialize", which 2026-07-28 removed')]


def test_an_accepted_initialize_turns_the_connection_to_the_handshake_era() -> None:
    accepted = init_result()
    accepted["id"] = 500
    rules = {rule for rule, _ in _findings(_stateless_offer(accepted))}
    # Now a handshake session: tools/list before notifications/initialized, and the
    # answered id 500 used again.
    assert {"LC-INITIALIZED-ORDER", "MSG-ID-REUSE"} <= rules


def test_a_server_info_without_a_version_does_not_identify_the_server() -> None:
    """The SDK 2.x's MCPServer(name) says version "" (the conformance suite warns too)."""
    anonymous = v5_result(1, {"content": []})
    anonymous["result"]["_meta"] = {
        "io.modelcontextprotocol/serverInfo": {"name": "s", "version": ""}
    }
    steps = [c(v5(1, "tools/call", {"name": "a"})), s(anonymous)]
    assert [rule for rule, _ in _findings(steps)] == ["MOD-SERVERINFO"]
    assert (
        _findings([c(v5(1, "tools/call", {"name": "a"})), s(v5_result(1, {"content": []}))]) == []
    )


#: Causes the descriptions name beyond the one each proof fires: (proof, message fragment).
CAUSES = [
    (
        hs("LC-INIT-PARAMS", fire=[c(init(version=None))], miss=[c(init())]),
        "protocolVersion (string)",
    ),
    (hs("LC-INIT-PARAMS", fire=[c(init(caps=[]))], miss=[c(init())]), "capabilities (object)"),
    (
        hs(
            "LC-INIT-RESULT",
            fire=[c(init()), s(res(0, {**init_result()["result"], "instructions": 5}))],
            miss=[c(init()), s(res(0, {**init_result()["result"], "instructions": "Be brief."}))],
        ),
        "instructions (string)",
    ),
    (
        hs(
            "CAP-SHAPE",
            fire=[c(init(caps={"experimental": {"x": True}}))],
            miss=[c(init(caps={"experimental": {"x": {}}}))],
        ),
        "capability 'experimental' is malformed",
    ),
    (
        hs(
            "MOD-NO-SERVER-REQUESTS",
            # The client answers a server request (itself MOD-NO-SERVER-REQUESTS).
            fire=[c(v5(1, "tools/list")), s(req(7, "roots/list")), c(res(7, {"roots": []}))],
            miss=[c(v5(1, "tools/list")), s(v5_result(1, {"tools": []}, **CACHE))],
        ),
        "the client sent a JSON-RPC response",
    ),
    (hs("LC-INIT-FIRST", fire=[c(INITIALIZED)], miss=shake()), "first message is notifications"),
]


@pytest.mark.parametrize(("p", "fragment"), CAUSES, ids=[f for _, f in CAUSES])
def test_each_cause_the_description_names_fires(p: Proof, fragment: str) -> None:
    assert_cause(p, fragment)


@pytest.mark.parametrize(
    ("direction", "method", "found"),
    [
        ("s", "notifications/initialized", ["MSG-METHOD-DIRECTION"]),  # client-only
        ("c", "notifications/tools/list_changed", ["MSG-METHOD-DIRECTION"]),  # server-only
        ("c", "notifications/progress", []),  # either side
        ("s", "notifications/progress", []),
        ("s", "notifications/tools/list_changed", []),
        ("c", "notifications/elicitation/complete", ["MSG-METHOD-DIRECTION"]),
        ("s", "tools/changed", ["MSG-METHOD-UNKNOWN"]),
    ],
)
def test_a_notification_is_judged_by_who_may_send_it(
    convo: Conversation, direction: str, method: str, found: list[str]
) -> None:
    # on_notification asks the version's table first, as on_request does
    # (``_method_direction``'s usual answer, inlined): the same verdicts.
    for sender, payload in shake(server_caps={"tools": {"listChanged": True}}):
        (convo.client if sender == C2S else convo.server)(payload)
    assert convo.findings == []
    (convo.client if direction == "c" else convo.server)(notification(method, {}))
    rules = [f.rule for f in convo.findings if f.rule.startswith("MSG-METHOD")]
    assert rules == found


@pytest.mark.parametrize(
    ("caps", "fires"),
    [({"logging": {}}, 0), ({"logging": None}, 1), ({"tools": {}}, 1), ({"logging": False}, 0)],
)
def test_a_log_message_is_gated_on_a_declared_logging_capability(
    convo: Conversation, caps: dict[str, Any], fires: int
) -> None:
    """Present and not null passes (``_has_cap``'s one-capability case, asked inline)."""
    convo.handshake(server_caps=caps)
    convo.server(notification("notifications/message", {"level": "info", "data": "x"}))
    assert len(convo.find("CAP-LOGGING-NOTIFY")) == fires
