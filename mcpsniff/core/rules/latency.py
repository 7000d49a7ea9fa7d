"""PING-PROMPT: a ping is answered promptly (2024-11-05 to 2025-11-25).

``basic/utilities/ping.mdx`` § Behavior Requirements: "The receiver **MUST**
respond promptly with an empty response". "Promptly" has no number in the
specification, so a heuristic judges it: an answer later than
``PROMPT_SECONDS`` is reported as info, with the time it took. A ping is the
one request whose answer needs no work; a late one means the receiver's
message loop was blocked (a synchronous tool call, a full pipe), which the
sender's timeout may take for a dead connection (§ Timeouts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpsniff.core.model import SENDER
from mcpsniff.core.rules.registry import REPLY, rule

if TYPE_CHECKING:
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import Msg

RULES = ("PING-PROMPT",)
#: Slower than this is not prompt, for a request that needs no work.
PROMPT_SECONDS = 10.0


@rule("PING-PROMPT", on=REPLY, methods=("ping",))
def ping_latency(session: Session, msg: Msg) -> None:
    """A ping answered more than ``PROMPT_SECONDS`` after it was sent."""
    request = msg.request
    latency = msg.latency_ms
    if request is None or latency is None or latency <= PROMPT_SECONDS * 1000:
        return
    session.report(
        "PING-PROMPT",
        f"the {SENDER[msg.direction]} answered ping {str(request.id)[:40]} after "
        f"{latency / 1000:.1f} s; a ping is answered promptly (a slow answer means its message "
        "loop was blocked, and the sender may take the connection for dead)",
        [request.seq, msg.frame],
        severity="info",
        latency_ms=latency,
    )
