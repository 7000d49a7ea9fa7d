"""Printing views as ``show`` does: the timeline lines, then annotations and bodies.

The timeline itself is ``render.Timeline``; this module decides which of a
frame's messages pass the filter, feeds those to the timeline, and adds what
the verbosity asks for. A frame whose messages are all filtered out is still
fed (and its lines dropped), so that a response shown later is labelled with
its request's method.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from mcpsniff.core.model import FindingRecord
from mcpsniff.filter import Filter, MessageView
from mcpsniff.filter.view import EVENT, FINDING
from mcpsniff.show.annotate import INDENT, annotation_lines
from mcpsniff.show.bodies import body_lines, raw_line
from mcpsniff.show.json_output import dumps_line, view_json
from mcpsniff.show.safe import safe_event, safe_finding, safe_message
from mcpsniff.terminal.render import Style, Timeline


class ViewPrinter:
    """Turns batches of views (one frame's, or an event's) into output lines."""

    def __init__(
        self, style: Style, *, verbose: int = 0, fmt: str = "text", flt: Filter | None = None
    ) -> None:
        self.style = style
        self.verbose = verbose
        self.fmt = fmt
        self.flt = flt
        self.timeline = Timeline(style)
        #: Findings already printed (a finding about two frames is printed once),
        #: kept alive so that their ids are not reused.
        self._printed: dict[int, FindingRecord] = {}

    def lines(self, views: Iterable[MessageView]) -> Iterator[str]:
        """The output lines for ``views``, in order."""
        group: list[MessageView] = []
        for view in views:
            if view.kind in (EVENT, FINDING):
                yield from self._frame(group)
                group = []
                yield from self._single(view)
            elif group and group[0].frame is not view.frame:
                yield from self._frame(group)
                group = [view]
            else:
                group.append(view)
        yield from self._frame(group)

    def _keep(self, view: MessageView) -> bool:
        return self.flt is None or self.flt.matches(view)

    def _frame(self, views: list[MessageView]) -> Iterator[str]:
        if not views:
            return
        frame = views[0].frame
        assert frame is not None
        kept = [v for v in views if self._keep(v)]
        if self.fmt == "json":
            for view in kept:
                yield dumps_line(view_json(view, raw=self.verbose >= 2))
            return
        timeline = self.timeline
        timeline.feed(frame)
        for view in kept or views:
            if view.message is not None:
                timeline.feed(safe_message(view.message))
        if not kept:
            timeline.flush()  # only to remember request methods for later responses
            return
        for view in kept:
            trace = view.trace
            if trace is not None and trace.short_id and not view.trace_inherited and view.message:
                # The short form on the line; -v adds the whole context below it.
                timeline.add_suffix(view.message, self.style("dim", f"trace={trace.short_id}"))
        for view in kept:
            for finding in self._new_findings(view):
                timeline.feed(safe_finding(finding))
        yield from timeline.flush()
        for view in kept:
            yield from annotation_lines(view, self.style, self.verbose)
            if self.verbose >= 1:
                body = view.body
                label = f"[{view.index}] " if view.index is not None else ""
                if body is not None or view.frame is None:
                    for number, line in enumerate(body_lines(body, self.style.enabled)):
                        yield f"{INDENT}{label if number == 0 else ' ' * len(label)}{line}"
        if self.verbose >= 2:
            yield f"{INDENT}{self.style('dim', 'raw')} {raw_line(frame.raw)}"

    def _single(self, view: MessageView) -> Iterator[str]:
        if not self._keep(view):
            return
        if self.fmt == "json":
            yield dumps_line(view_json(view))
            return
        timeline = self.timeline
        if view.event is not None:
            yield from timeline.feed(safe_event(view.event))
        for finding in self._new_findings(view):
            yield from timeline.feed(safe_finding(finding))

    def _new_findings(self, view: MessageView) -> list[FindingRecord]:
        fresh = [f for f in view.findings if id(f) not in self._printed]
        self._printed.update((id(f), f) for f in fresh)
        return fresh

    def flush(self) -> Iterator[str]:
        """Lines the timeline still holds."""
        yield from self.timeline.flush()
