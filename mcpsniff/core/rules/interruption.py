"""Why a session ended with requests in flight: interrupted is not unanswered.

JSON-RPC 2.0 §5: "When a rpc call is made, the Server MUST reply with a
Response" -- but a server that was stopped (the user pressed Ctrl-C and
``mcpsniff stdio`` forwarded the signal, something killed the server, ``mcpsniff
http`` was stopped) or a trace that is still being recorded had no chance to
reply. The lifecycle page says as much: on stdio, shutdown is "sending SIGTERM"
and then "SIGKILL" (``basic/lifecycle.mdx`` § Shutdown), and a request in flight
then ends without its response.

The transport events record how the session ended (``docs/trace-format.md``):
``signal`` (a signal mcpsniff forwarded to the server's process group),
``exit`` (the server's exit status, and the signal that ended it), ``http-end``
with the outcome ``proxy-stopped``, and a ``session-end`` the analyzer made up
because the trace has none (``synthetic``). The first reason found is kept in
``state.rule_state`` and ``flow.end_of_session`` reports what was in flight as an
info finding with that reason instead of a JR-RESP-REQUIRED error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpsniff.core.rules.registry import EVENT, rule

if TYPE_CHECKING:
    from mcpsniff.core.model import EventRecord
    from mcpsniff.core.session import Session

#: ``state.rule_state`` key: why the session was interrupted (first reason wins).
INTERRUPTION = "interruption"

#: What a person did to send each signal, for the finding's message.
_SIGNAL_CAUSES = {
    "SIGINT": "Ctrl-C",
    "SIGTERM": "a stop request",
    "SIGHUP": "the terminal closing",
}


def interruption_reason(name: str, data: dict[str, Any]) -> str | None:
    """Why a transport event ``name`` with ``data`` stops the session, or None.

    Also what ``mcpsniff ui`` uses on traces recorded before this verdict existed.
    """
    if name == "signal":
        signal = _text(data.get("signal"), "a signal")
        cause = _SIGNAL_CAUSES.get(signal)
        because = f" ({cause})" if cause else ""
        return f"mcpsniff forwarded {signal}{because} to the server"
    if name == "exit":
        returncode = data.get("returncode")
        if type(returncode) is int and returncode < 0:
            return f"the server was killed by {_text(data.get('signal'), 'a signal')}"
        return None
    if name == "http-end" and data.get("outcome") == "proxy-stopped":
        return "mcpsniff http was stopped while the exchange was open"
    return None


@rule("JR-RESP-REQUIRED", on=EVENT, keys=("signal", "exit", "http-end"))
def stopping_event(session: Session, event: EventRecord) -> None:
    """A forwarded signal, a server killed by a signal, a stopped HTTP proxy."""
    reason = interruption_reason(event.event, event.data)
    if reason is not None:
        session.state.rule_state.setdefault(INTERRUPTION, reason)


def interruption(session: Session, end: EventRecord) -> tuple[str, str] | None:
    """``(cause, reason)`` when the session did not end normally, else None.

    ``cause`` is ``"interrupted"`` (the session was stopped) or ``"in-flight"``
    (the trace ends without a session-end: it may still be recording).
    """
    reason = session.state.rule_state.get(INTERRUPTION)
    if isinstance(reason, str):
        return "interrupted", reason
    data = end.data
    if data.get("synthetic") is True:
        return (
            "in-flight",
            "the trace has no session-end: it is still being recorded, or its recorder "
            "stopped before it could end it",
        )
    # A session-end the relay wrote for a salvaged trace (``salvaged``) is no
    # interruption: the relay kept forwarding, and the capture gaps it recorded
    # already excuse what their lost bytes may have answered.
    return None


def _text(value: Any, default: str) -> str:
    return value[:120] if isinstance(value, str) and value else default
