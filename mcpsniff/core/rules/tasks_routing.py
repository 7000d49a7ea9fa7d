"""The tasks extension over Streamable HTTP: the routing header (EXT-TASKS-HEADER).

"When tasks/get, tasks/update, or tasks/cancel is sent over the Streamable HTTP
transport, the client MUST set the Mcp-Name header to the value of
params.taskId. This allows transport intermediaries and load balancers to route
subsequent requests for the same task to the server instance holding its state"
(ext-tasks ``specification/draft/tasks.md § Streamable HTTP: Routing Headers``).
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING

from mcpsniff.core.model import C2S
from mcpsniff.core.protocol import STATELESS
from mcpsniff.core.rules.registry import FRAME, rule
from mcpsniff.core.rules.tasks_extension import METHODS

if TYPE_CHECKING:
    from mcpsniff.core.model import FrameRecord, MessageRecord
    from mcpsniff.core.session import Session

RULES = ("EXT-TASKS-HEADER",)


@rule("EXT-TASKS-HEADER", on=FRAME, keys=("parsed",))
def routing_header(session: Session, frame: FrameRecord, messages: list[MessageRecord]) -> None:
    """Over Streamable HTTP, a tasks/* request names its task in the Mcp-Name header."""
    http = session.state.http
    number = frame.meta.get("exchange") if frame.meta else None
    if http is None or frame.direction != C2S or session.state.era != STATELESS:
        return
    exchange = http.exchanges.get(number) if isinstance(number, int) else None
    if exchange is None or exchange.transport != "streamable":
        return
    for message in messages:
        if message.method not in METHODS or message.kind != "request":
            continue
        task_id = (message.params or {}).get("taskId")
        header = exchange.headers.get("mcp-name")
        if isinstance(task_id, str) and _decoded(header) != task_id:
            session.report(
                "EXT-TASKS-HEADER",
                f"the {message.method} POST's Mcp-Name header is {header!r}, but it must be "
                f"the task's id {task_id[:60]!r}",
                [frame.seq],
                header=header,
                task_id=task_id,
            )


def _decoded(value: str | None) -> str | None:
    """A header value with its ``=?base64?...?=`` form decoded.

    (``S/2026-07-28/basic/transports/streamable-http.mdx § Value Encoding``.)
    """
    if value is None or not (value.startswith("=?base64?") and value.endswith("?=")):
        return value
    try:
        return base64.b64decode(value[9:-2], validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return value
