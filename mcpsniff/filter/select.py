"""Keeping the findings of a record stream that concern messages a filter matches.

``check --filter`` re-analyses a trace and must report only the findings about
matching messages: a finding passes when the filter matches one of the
messages (or events) it names, judged together with that finding, so that
``rule`` and ``severity`` test the finding itself. The views of the most
recent frames are kept for this (findings follow their frames closely); a
finding about frames older than that window, such as an unanswered request
reported at session end, is judged as a view of its own (kind ``finding``,
with the method its data names).
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Iterable, Iterator

from mcpsniff.core.model import FindingRecord, MessageRecord, Record
from mcpsniff.filter import Filter
from mcpsniff.filter.view import MessageView, ViewBuilder

#: How many frames' and events' views are kept to judge the findings about them.
WINDOW = 100_000


def matching_findings(records: Iterable[Record], flt: Filter) -> Iterator[Record]:
    """Every record of ``records``, except the findings ``flt`` does not select."""
    builder = ViewBuilder()
    recent: OrderedDict[tuple[str, int], list[MessageView]] = OrderedDict()
    pending: list[FindingRecord] = []

    def remember(views: list[MessageView]) -> None:
        for view in views:
            recent.setdefault((view.session, view.seq), []).append(view)
        while len(recent) > WINDOW:
            recent.popitem(last=False)

    for record in records:
        if isinstance(record, FindingRecord):
            # Judged once the views of the frame being read are complete.
            pending.append(record)
            continue
        if pending and not isinstance(record, MessageRecord):
            # Not at a message record: a finding may stand between the message
            # records of one frame (a batch's own finding precedes its elements'
            # records), and completing the frame there lost the elements, and
            # with them every finding about one (check --filter 'method == x').
            remember(builder.flush())
            yield from (f for f in pending if _selected(f, recent, flt))
            pending.clear()
        remember([v for v in builder.feed(record) if v.kind != "finding"])
        yield record
    remember(builder.flush())
    yield from (f for f in pending if _selected(f, recent, flt))


def _selected(
    finding: FindingRecord,
    recent: OrderedDict[tuple[str, int], list[MessageView]],
    flt: Filter,
) -> bool:
    seen = False
    for seq in finding.seq:
        for view in recent.get((finding.session, seq), ()):
            seen = True
            if flt.matches(dataclasses.replace(view, findings=[finding])):
                return True
    if seen:
        return False
    data = finding.data
    method = data.get("method") if isinstance(data.get("method"), str) else None
    alone = MessageView(
        finding.session,
        finding.seq[0] if finding.seq else 0,
        None,
        "finding",
        method=method,
        findings=[finding],
    )
    return flt.matches(alone)
