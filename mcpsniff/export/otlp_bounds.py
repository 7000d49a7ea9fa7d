"""Bounds on what a collector can cost ``export otlp``: a whole-run deadline, a bounded reply.

The OTLP exporters' timeout applies to each read of the socket, not to the
export: a collector that sends its headers and then one byte a second kept
``mcpsniff export otlp`` waiting for ever, and its reply, however large, was
read into memory. Here every call to an exporter runs in a worker thread and
is abandoned when the run's deadline passes (the thread is a daemon: the
command exits with status 2 without waiting for it), and the HTTP exporter's
session reads at most ``REPLY_LIMIT`` bytes of a reply.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

#: The most of a collector's reply read (an OTLP reply is a small protobuf message).
REPLY_LIMIT = 1 << 20


class DeadlinePassed(Exception):
    """The run's deadline passed while an export call was still waiting on the collector."""


def call_by_deadline(deadline: float, call: Callable[..., Any], *args: Any) -> Any:
    """``call(*args)``, or ``DeadlinePassed`` once ``time.monotonic()`` passes ``deadline``."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise DeadlinePassed
    outcome: list[Any] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(call(*args))
        except BaseException as exc:  # handed to the caller's thread
            failure.append(exc)

    worker = threading.Thread(target=run, name="mcpsniff-otlp-export", daemon=True)
    worker.start()
    worker.join(remaining)
    if worker.is_alive():
        raise DeadlinePassed
    if failure:
        raise failure[0]
    return outcome[0]


def bounded_session() -> Any:
    """A ``requests`` session whose replies are read to at most ``REPLY_LIMIT`` bytes."""
    import requests

    class BoundedSession(requests.Session):
        def request(self, *args: Any, **kwargs: Any) -> requests.Response:  # type: ignore[override]
            kwargs["stream"] = True
            response = super().request(*args, **kwargs)
            try:
                body = response.raw.read(REPLY_LIMIT + 1, decode_content=True)
            finally:
                response.close()
            if len(body) > REPLY_LIMIT:
                raise requests.exceptions.ContentDecodingError(
                    f"the collector's reply is longer than {REPLY_LIMIT} bytes"
                )
            response._content = body  # what .content and .text return
            response._content_consumed = True
            return response

    return BoundedSession()
