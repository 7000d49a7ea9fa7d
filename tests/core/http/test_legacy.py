"""core/http/legacy.py: the 2024-11-05 endpoint event and the session id its URL carries."""

from __future__ import annotations

from mcpsniff.core.framing import SseEvent
from mcpsniff.core.http.legacy import legacy_endpoint, legacy_session


def event(name: str | None, data: str | None) -> SseEvent:
    return SseEvent(event=name, data=data)


def test_an_endpoint_event_names_the_post_url() -> None:
    assert (
        legacy_endpoint(event("endpoint", " /messages?sessionId=1 \n")) == "/messages?sessionId=1"
    )


def test_other_events_name_no_endpoint() -> None:
    assert legacy_endpoint(event("message", "/messages?sessionId=1")) is None
    assert legacy_endpoint(event("endpoint", "")) is None
    assert legacy_endpoint(event(None, "{}")) is None
    assert legacy_endpoint(None) is None


def test_the_session_id_is_the_query_s_session_id_in_either_spelling() -> None:
    assert legacy_session("/messages?sessionId=abc&x=1") == "abc"
    assert legacy_session("http://h/messages?session_id=q") == "q"
    assert legacy_session("/messages") is None
    assert legacy_session("/messages?other=1") is None
