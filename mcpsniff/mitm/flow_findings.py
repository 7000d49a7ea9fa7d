"""Findings on mitmproxy flows: which flow gets an exchange's findings, and how they look there.

The mitmproxy addon numbers each MCP exchange it sees and remembers its flow
here until the analysis process has answered for it (a ``Reply``). This module
is that bookkeeping, kept apart from mitmproxy: a flow is anything with
``comment``, ``marked`` and ``metadata`` (``mitmproxy.http.HTTPFlow`` has them).
"""

from __future__ import annotations

from typing import Any, Generic, Protocol, TypeVar

from mcpsniff.mitm.link import FlowFinding, Reply

#: mitmproxy markers for the worst finding on a flow.
MARKERS = {"error": ":red_circle:", "warning": ":warning:", "info": ":information_source:"}
_RANK = {"info": 0, "warning": 1, "error": 2}
#: Flows remembered for their findings (by exchange number): a flow that many
#: exchanges old gets no more findings on it (the trace still has them all).
FLOW_MEMORY = 4096


class Flow(Protocol):
    """What a finding is put on (as on ``mitmproxy.http.HTTPFlow``)."""

    comment: str
    marked: str
    metadata: dict[str, Any]


F = TypeVar("F", bound=Flow)


def attach(flow: Flow, finding: FlowFinding) -> None:
    """Put ``finding`` on ``flow``: a comment line, the worst severity's marker, the metadata.

    mitmweb shows the comment and the marker; ``metadata["mcpsniff_findings"]``
    keeps every finding for scripts and saved flows.
    """
    line = f"{finding.severity} {finding.rule}: {finding.message}"
    flow.comment = f"{flow.comment}\n{line}" if flow.comment else line
    worst = flow.metadata.get("mcpsniff_severity")
    if worst is None or _RANK[finding.severity] > _RANK[worst]:
        flow.metadata["mcpsniff_severity"] = finding.severity
        flow.marked = MARKERS[finding.severity]
    flow.metadata.setdefault("mcpsniff_findings", []).append(
        {"rule": finding.rule, "severity": finding.severity, "message": finding.message}
    )


class FlowBook(Generic[F]):
    """The flows of one analysis process's exchanges, until their findings are back.

    One book per analysis process: a new trace numbers its exchanges from 1 again.
    Bounded: only the last ``FLOW_MEMORY`` exchanges are remembered.
    """

    __slots__ = ("flows", "held")

    def __init__(self) -> None:
        #: Exchange number -> its flow.
        self.flows: dict[int, F] = {}
        #: Exchange numbers whose response waits for its findings (``mcpsniff_hold``).
        self.held: set[int] = set()

    def remember(self, number: int, flow: F) -> None:
        """Exchange ``number`` is ``flow``; the one ``FLOW_MEMORY`` numbers back is forgotten."""
        flows = self.flows
        flows[number] = flow
        # Numbers go up one by one, so one pop keeps the book bounded.
        flows.pop(number - FLOW_MEMORY, None)

    def forget(self, number: int) -> None:
        """No findings will be put on exchange ``number``'s flow."""
        self.flows.pop(number, None)

    def hold(self, number: int) -> None:
        """Exchange ``number``'s response waits until its findings are on it."""
        self.held.add(number)

    def clear(self) -> None:
        """Forget every flow (the analysis process is gone)."""
        self.flows.clear()
        self.held.clear()

    def apply(self, reply: Reply) -> list[F]:
        """Put ``reply``'s findings on their flows and forget the synced exchanges.

        Returns the flows that got findings after their response went on (not
        held), each once, in order: the other addons must be told they changed.
        """
        flows = self.flows
        held = self.held
        gone_on: dict[int, F] = {}
        for finding in reply.findings:
            for number in finding.exchanges:
                flow = flows.get(number)
                if flow is not None:
                    attach(flow, finding)
                    if number not in held:
                        gone_on[number] = flow
        for number in reply.synced:
            flows.pop(number, None)
            held.discard(number)
        return list(gone_on.values())
