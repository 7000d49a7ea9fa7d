"""Multi round-trip requests (2026-07-28): what ``inputRequests`` may ask, where a
``requestState`` may go (``S/2026-07-28/basic/patterns/mrtr.mdx``).

``rules/lifecycle.py`` checks that an ``input_required`` result carries
``inputRequests`` or ``requestState`` and ``rules/utilities.py`` that the retry
echoes the state under a new id; this module adds:

* MOD-MRTR-CONTENT: "``inputRequests`` values are request objects that **MUST**
  be one of ElicitRequest, CreateMessageRequest, or ListRootsRequest", and
  "Servers **MUST NOT** send an ``inputRequests`` that the client has not
  declared support for in its capabilities" (§ Server Requirements (Basic
  Workflow) 2, 5) — the capabilities of the request being answered. The tasks
  extension's ``input_required`` tasks carry the same map ("an
  ``inputRequests`` field defined in Multi Round-Trip Requests").
* MOD-MRTR-STATE-ECHO: "Both the ``inputRequests`` and ``requestState`` fields
  affect only the client's retry of the original request. They **MUST NOT** be
  used for any other request that the client may be sending in parallel"
  (§ Client Requirements (Basic Workflow) 4).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpsniff.core.extensions import client_caps_for
from mcpsniff.core.ids import BoundedMap
from mcpsniff.core.model import C2S, S2C
from mcpsniff.core.protocol import STATELESS
from mcpsniff.core.rules.registry import REQUEST, RESULT, rule

if TYPE_CHECKING:
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import Msg

RULES = ("MOD-MRTR-CONTENT", "MOD-MRTR-STATE-ECHO")

#: The requests that may be answered with input_required (§ Supported Requests),
#: and tasks/get, whose input_required task carries the same map.
ANSWERED = ("tools/call", "prompts/get", "resources/read", "tasks/get")
RETRIED = ("tools/call", "prompts/get", "resources/read")
#: The client capability each input request needs.
NEEDS = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}
STATE_WINDOW = 4096
_STATES = "mrtr_states"


def _target(params: dict[str, Any] | None) -> str:
    params = params or {}
    return str(params.get("name") or params.get("uri"))


# --------------------------------------------------------------------------- the server


@rule("MOD-MRTR-CONTENT", "MOD-MRTR-STATE-ECHO", on=RESULT, methods=ANSWERED, modern=True)
def input_required(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """An ``inputRequests`` map asks only what the request's client declared."""
    request = msg.request
    if request is None or session.state.era != STATELESS or msg.direction != S2C:
        return
    waiting = (
        result.get("resultType") == "input_required" or result.get("status") == "input_required"
    )
    if not waiting:
        return
    state = result.get("requestState")
    if isinstance(state, str) and request.method in RETRIED:
        states = session.state.rule_state.get(_STATES)
        if states is None:
            states = session.state.rule_state[_STATES] = BoundedMap(STATE_WINDOW)
        states.put(state, (request.method, _target(request.params)))
    found = result.get("inputRequests")
    if type(found) is not dict:
        return
    caps = client_caps_for(session, request.params)
    problems = []
    for key, entry in list(found.items())[:100]:
        method = entry.get("method") if type(entry) is dict else None
        shown = f"input {str(key)[:40]!r}"
        if method not in NEEDS:
            problems.append(
                f"{shown} is {str(method)[:40]!r}, not elicitation/create, "
                "sampling/createMessage or roots/list"
            )
            continue
        if caps is None:
            continue
        missing = _undeclared(caps, method, entry.get("params"))
        if missing:
            problems.append(f"{shown} asks for {method}, but the client did not declare {missing}")
    if problems:
        session.report(
            "MOD-MRTR-CONTENT",
            f"the server's input_required answer to {request.method}: " + "; ".join(problems[:5]),
            [request.seq, msg.frame],
            method=request.method,
            problems=problems[:20],
        )


def _undeclared(caps: dict[str, Any], method: str, params: Any) -> str | None:
    """The capability ``method`` needs that ``caps`` lack, if any."""
    name = NEEDS[method]
    declared = caps.get(name)
    if type(declared) is not dict:
        return f"the {name} capability"
    if method == "elicitation/create" and type(params) is dict and params.get("mode") == "url":
        # "elicitation: {form?, url?}"; an empty object is form mode only.
        if "url" not in declared:
            return "elicitation.url (URL mode)"
    return None


# --------------------------------------------------------------------------- the client


@rule("MOD-MRTR-STATE-ECHO", on=REQUEST, methods=RETRIED, modern=True)
def state_reused(session: Session, msg: Msg) -> None:
    """A requestState serves only the retry of the request it answered, one at a time."""
    params = msg.params
    state = params.get("requestState") if params is not None else None
    if not isinstance(state, str) or session.state.era != STATELESS or msg.direction != C2S:
        return
    for other in session.state.pending[C2S].values():
        if other.seq != msg.frame and (other.params or {}).get("requestState") == state:
            session.report(
                "MOD-MRTR-STATE-ECHO",
                f"the client sent the same requestState on {msg.method} while its request at "
                f"seq {other.seq} still carries it; a requestState serves only the one retry "
                "of the request it answered",
                [other.seq, msg.frame],
                parallel=True,
            )
            return
    states = session.state.rule_state.get(_STATES)
    issued = states.get(state) if states is not None else None
    here = (msg.method, _target(params))
    if issued is None or issued == here:
        return
    retries = session.state.rule_state.get("mrtr")
    if retries is not None and here in retries:
        return  # rules/utilities.py reports a retry that echoes another state
    session.report(
        "MOD-MRTR-STATE-ECHO",
        f"the client sent on {msg.method} {here[1][:60]!r} the requestState the server gave "
        f"to {issued[0]} {issued[1][:60]!r}; it may be used only to retry that request",
        [msg.frame],
        parallel=False,
    )
