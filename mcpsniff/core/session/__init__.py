"""The session: bytes in, records out.

A ``Session`` is the sans-I/O heart of mcpsniff (the h11 model). A shell hands
it ``(direction, transport, bytes, timestamp)``; it frames, parses, classifies
and correlates the traffic, runs the conformance rules for the protocol
version in force, and returns records. It never reads a clock, never does I/O
and never raises on traffic: a bad frame is data (docs/architecture.md,
invariant 3). ``mcpsniff check`` re-runs the same ``analyze_frames`` and
``apply_event`` code on the frame and event records of a saved trace, so
live and offline findings agree (invariant 4).

Theory of operation
-------------------

The state of one session is one ``SessionState`` (core/state.py): the era and
version, the requests in flight and recently answered per direction, the id
history, the handshake, the bad frames waiting for their error reply. The
modules of this package each do one job on it, and none reports a finding: what
they find goes to the rules registered for it (``rules/registry.py``). They
work on a ``base.SessionBase`` (the state, the output, ``report`` and ``emit``
for the rules); ``session.Session`` adds the ways in.

The flow of one frame:

1. *Framing* (``session.Session.feed``): a byte stream is cut into lines
   (core/framing.py); each line, or each whole frame an HTTP shell hands in
   (``feed_frame``), gets the next trace-wide seq and is redacted. A
   ``FrameRecord`` goes out first, before anything it produced.
2. *Parsing* (``Session.analyze_frames``, ``parsing``): orjson parses the
   frame. The usual frame, one object, goes on to classification at once;
   the rest (integers beyond 64 bits, arrays, JSON that is no object, bytes
   that are no JSON) is taken apart in ``parsing``, arrays in ``batches``.
   A frame that is bad input is remembered until its error reply comes
   (``correlation.note_bad``).
3. *Classification* (``classification.message``): the object is a request,
   a notification, a response, an error or invalid; its ``MessageRecord``
   is built once and is also the rules' working view. An envelope that is
   not the plain one of its kind gets the structural (MESSAGE) rules.
4. *Scoping* (``scoping``): the first client request decides the era (a
   ``_meta`` protocol version opens the stateless one); the era decides
   how an id is keyed (per client connection in stateless HTTP).
5. *Correlation* (``correlation``): a request is registered in flight
   under its key (a reused id goes to the PAIRING rules first); a reply is
   paired with its request, inline for the usual one, in
   ``correlation.match_response`` for everything else (type mismatches, lost
   precision, shadowed ids, late and duplicate replies, null ids answering bad
   input, orphans), each outcome to the PAIRING rules. A reply array is
   matched to its batch (``batches``).
6. *Dispatch* (``dispatch``): the REQUEST, NOTIFICATION, RESPONSE, REPLY,
   RESULT, ERROR and TASK_CREATED rules run by method, and the FRAME rules
   once the frame is done (when a rule follows frames: a pretty-printed run
   on stdio, an HTTP body's exchange).

A transport event (``Session.event``, ``apply_event``) goes to the EVENT
rules by name; ``session-end`` ends the session once (the rules then report
what was never answered). An exception in the analysis of one frame or event
becomes an ``analyzer-error`` event record after it; the other frames of the
read are analyzed on.

Speed: every message of ``mcpsniff check`` takes this path (the benchmark is
benchmarks/bench_check.py), so ``classification.message`` inlines what the
usual message needs; tests/core/test_fast_paths.py holds each shortcut to the
plain code it replaces.
"""

from mcpsniff.core.session.base import SeqCounter
from mcpsniff.core.session.session import END_EVENTS, FramesOnlySession, Session

__all__ = ["END_EVENTS", "FramesOnlySession", "SeqCounter", "Session"]
