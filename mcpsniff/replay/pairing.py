"""Which response answers which request, within one session, recorded or live.

Ids alone do not tell: two clients in one stateless HTTP group both send id 1,
and an HTTP error for a request the server could not read carries a null id.
Streamable HTTP answers a POSTed request on that POST's own response (MCP
2025-06-18, basic/transports: "the server MUST either return Content-Type:
text/event-stream ... or Content-Type: application/json"), so a response is
first paired within its POST, by id, or, for a null id, with the POST's first
open request; only then by id among the session's open requests (stdio, or a
response sent on another stream).
"""

from __future__ import annotations

from typing import Any

from mcpsniff.replay.script import REQUEST, RESPONSE, Message, Script, id_key

#: A request's place in the recording: (frame seq, batch index or None).
RequestRef = tuple[int, int | None]


def ref_of(message: Message) -> RequestRef:
    """The recorded request ``message``'s identity."""
    return message.frame, message.index


class Pairer:
    """Open requests of one session, each answered at most once."""

    def __init__(self) -> None:
        self._by_id: dict[str, list[RequestRef]] = {}
        self._by_post: dict[int, list[tuple[str, RequestRef]]] = {}
        self._where: dict[RequestRef, tuple[str, int | None]] = {}

    def opened(self, request_id: Any, ref: RequestRef, post: int | None) -> None:
        """A request was sent (``post``: the HTTP POST it travelled in, if any)."""
        key = id_key(request_id)
        self._where[ref] = (key, post)
        self._by_id.setdefault(key, []).append(ref)
        if post is not None:
            self._by_post.setdefault(post, []).append((key, ref))

    def answer(self, response_id: Any, post: int | None) -> RequestRef | None:
        """The open request a response answers, now closed; None when it answers none."""
        key = id_key(response_id)
        ref = None
        waiting = self._by_post.get(post) if post is not None else None
        if waiting:
            for wanted, candidate in waiting:
                if wanted == key:
                    ref = candidate
                    break
            if ref is None and response_id is None:
                ref = waiting[0][1]
        if ref is None:
            refs = self._by_id.get(key)
            ref = refs[0] if refs else None
        if ref is not None:
            self._close(ref)
        return ref

    def _close(self, ref: RequestRef) -> None:
        key, post = self._where.pop(ref)
        refs = self._by_id[key]
        refs.remove(ref)
        if not refs:
            del self._by_id[key]
        if post is not None:
            kept = [item for item in self._by_post[post] if item[1] != ref]
            if kept:
                self._by_post[post] = kept
            else:
                del self._by_post[post]


def recorded_responses(script: Script) -> dict[RequestRef, Message]:
    """Each recorded client request that was answered -> the server's recorded answer."""
    pairers: dict[str, Pairer] = {}
    out: dict[RequestRef, Message] = {}
    for frame in script.frames:
        pairer = pairers.setdefault(frame.session, Pairer())
        if frame.direction == "c2s":
            for message in frame.messages:
                if message.kind == REQUEST:
                    pairer.opened(message.id, ref_of(message), message.exchange)
            continue
        for message in frame.messages:
            if message.kind == RESPONSE:
                ref = pairer.answer(message.id, message.exchange)
                if ref is not None:
                    out[ref] = message
    return out
