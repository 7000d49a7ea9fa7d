"""Sans-I/O HTTP/1.1 message framing (RFC 9112) for the relay's byte-level forwarding.

A parser is fed the bytes of one direction of a connection, in any pieces,
and returns events in order (``mcpsniff.http1.events``): a head, ``Body``
pieces, ``End``; then the next message. After ``Malformed`` nothing more is
parsed (the caller forwards what came before and closes the connection).

It only frames messages: it neither interprets nor changes field values,
beyond what framing needs (Content-Length, Transfer-Encoding, the request
method and the status code).
"""

from __future__ import annotations

from collections import deque

from mcpsniff.http1.events import Body, End, Event, Head, Malformed, RequestHead, ResponseHead
from mcpsniff.http1.fields import field_tokens

#: Longest head (start line and fields) accepted; a longer one is Malformed.
MAX_HEAD = 256 << 10
#: Longest chunk-size line (with extensions) accepted.
MAX_CHUNK_LINE = 4096
CRLF = b"\r\n"
#: RFC 9110 §5.6.2 tchar: what a field name (a token) may hold.
_TCHAR = b"!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_HEX = b"0123456789abcdefABCDEF"
#: Every byte but the controls (RFC 5234 CTL: 0x00-0x1F and 0x7F), plus CR, LF and HTAB:
#: deleting these from a head leaves only the controls no field may hold.
_NOT_CTL = bytes(b for b in range(256) if b >= 0x20 and b != 0x7F) + b"\r\n\t"
#: The same for a chunk-size line: HTAB is the only control it may hold.
_NOT_CTL_LINE = bytes(b for b in range(256) if b >= 0x20 and b != 0x7F) + b"\t"

# Parser states.
_HEAD, _LENGTH, _CHUNK_SIZE, _CHUNK_DATA, _CHUNK_CRLF, _CLOSE, _FAILED = range(7)


class _Parser:
    """What request and response framing share: heads, lengths, chunks."""

    def __init__(self) -> None:
        self._buf = b""
        self._state = _HEAD
        self._remaining = 0
        #: How far the head search got in ``_buf`` (so a slow head is not rescanned).
        self._scanned = 0

    @property
    def idle(self) -> bool:
        """Between messages, with nothing of the next one received."""
        return self._state == _HEAD and not self._buf

    @property
    def receiving_head(self) -> bool:
        """Part of a head has arrived, not yet all of it."""
        return self._state == _HEAD and bool(self._buf.strip(CRLF))

    @property
    def failed(self) -> bool:
        return self._state == _FAILED

    @property
    def between_chunks(self) -> bool:
        """In a chunked body, the ``Body.raw`` returned so far ends with whole chunks.

        So the next bytes forwarded start a chunk (``chunk-size`` line) or the
        last chunk: a relay may put chunks of its own there (RFC 9112 §7.1).
        """
        return self._state == _CHUNK_SIZE

    def feed(self, data: bytes) -> list[Event]:
        """Parse ``data`` (the next bytes of the stream); return the events it completes."""
        events: list[Event] = []
        if self._state == _FAILED:
            return events
        buf = self._buf + data if self._buf else data
        self._buf = b""
        pos = 0
        end = len(buf)
        while pos < end:
            state = self._state
            if state == _HEAD:
                start = max(pos, pos + self._scanned - 3)
                found = buf.find(b"\r\n\r\n", start)
                # Checked on what arrived so far, so that a head which can never
                # be valid (bare LF line endings, TLS or other binary bytes) is
                # answered at once instead of waiting for an end that never comes.
                stop = end if found < 0 else found + 4
                reason = self._head_prefix_problem(buf, pos, start, stop)
                if reason is not None:
                    return self._fail(events, reason)
                if stop - pos > MAX_HEAD:
                    return self._fail(events, "head too long")
                if found < 0:
                    self._scanned = end - pos
                    break
                self._scanned = 0
                head = buf[pos : found + 4]
                pos = found + 4
                if not self._head(head, events):
                    return events
            elif state == _LENGTH:
                n = min(self._remaining, end - pos)
                piece = buf if n == end and pos == 0 else buf[pos : pos + n]
                pos += n
                self._remaining -= n
                events.append(Body(piece, piece))
                if not self._remaining:
                    self._message_end(events, b"")
            elif state == _CLOSE:
                piece = buf if pos == 0 else buf[pos:]
                pos = end
                events.append(Body(piece, piece))
            elif state == _FAILED:
                return events
            else:
                pos = self._chunked(buf, pos, events)
                if pos < 0:
                    return events
                if self._state in (_CHUNK_SIZE, _CHUNK_CRLF) and self._buf:
                    break  # waiting for the rest of a chunk line
        if pos < end and not self._buf:
            self._buf = buf[pos:]
        return events

    def feed_eof(self) -> list[Event]:
        """The stream ended: End for a body delimited by the close, Malformed if one is cut."""
        events: list[Event] = []
        if self._state == _CLOSE:
            self._message_end(events, b"")
        elif self._state == _HEAD and not self._buf.strip(CRLF):
            pass
        elif self._state != _FAILED:
            self._fail(events, "connection closed mid-message")
        return events

    # ------------------------------------------------------------------ pieces

    def _fail(
        self,
        events: list[Event],
        reason: str,
        head: Head | None = None,
    ) -> list[Event]:
        self._state = _FAILED
        self._buf = b""
        events.append(Malformed(reason, head))
        return events

    def _framed(self, events: list[Event], head: Head, reason: str | None) -> bool:
        """A whole head whose body framing is known: Malformed for ``reason``, else the head
        (and its end at once when no body follows). False when the message is refused."""
        if reason is not None:
            self._fail(events, reason, head)
            return False
        events.append(head)
        if self._state == _HEAD:
            self._message_end(events, b"")
        return True

    def _head_prefix_problem(self, buf: bytes, pos: int, start: int, stop: int) -> str | None:
        """Why head bytes ``buf[pos:stop]`` can never be valid (new bytes from ``start``).

        RFC 9112 §2.2: a bare CR is invalid, and a bare LF is accepted by some
        parsers as a line end and not by others: the very disagreement request
        smuggling needs, so both are refused, as NUL and other controls are.
        """
        region = buf[start:stop]
        if region.translate(None, _NOT_CTL):
            return "control character in the head"
        if b"\n" in region or b"\r" in region:
            # From one byte earlier, so that a CRLF split between two feeds is
            # still one; a leading LF was checked with its CR before, and a CR
            # at the very end may yet get its LF.
            look = buf[max(pos, start - 1) : stop]
            if start > pos and look[:1] == b"\n":
                look = look[1:]
            if look[-1:] == b"\r":
                look = look[:-1]
            crlfs = look.count(CRLF)
            if look.count(b"\n") != crlfs or look.count(b"\r") != crlfs:
                return "bare CR or LF in the head"
        # Only the first bytes: leading empty lines are allowed (§2.2).
        first = buf[pos : min(stop, pos + 64)].lstrip(CRLF)[:1]
        if first and not self._valid_first_byte(first):
            return "not an HTTP/1.1 message"
        return None

    def _valid_first_byte(self, first: bytes) -> bool:
        """Whether a head may start with ``first`` (a method's tchar, or "H" of HTTP/)."""
        return not first.translate(None, _TCHAR)

    def _chunked(self, buf: bytes, pos: int, events: list[Event]) -> int:
        """Parse chunked framing from ``pos`` (RFC 9112 §7.1); returns the new position.

        All complete chunks of ``buf`` become one Body event (raw framing and payload).
        Returns -1 when the framing is malformed.
        """
        start = pos
        payload: list[bytes] = []
        end = len(buf)
        while pos < end:
            state = self._state
            if state == _CHUNK_DATA:
                n = min(self._remaining, end - pos)
                payload.append(buf[pos : pos + n])
                pos += n
                self._remaining -= n
                if not self._remaining:
                    self._state = _CHUNK_CRLF
            elif state == _CHUNK_CRLF:
                if end - pos < 2:
                    self._buf = buf[pos:]
                    break
                # chunk = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
                if buf[pos : pos + 2] != CRLF:
                    self._flush(buf, start, pos, payload, events)
                    self._fail(events, "chunk data not followed by CRLF")
                    return -1
                pos += 2
                self._state = _CHUNK_SIZE
            elif state == _CHUNK_SIZE:
                eol = buf.find(CRLF, pos, pos + MAX_CHUNK_LINE)
                line = buf[pos : eol if eol >= 0 else min(end, pos + MAX_CHUNK_LINE)]
                # A bare CR or LF (or another control) in a chunk line is read as
                # a line end by some parsers only: refused as soon as it shows.
                if line.rstrip(b"\r").translate(None, _NOT_CTL_LINE):
                    self._flush(buf, start, pos, payload, events)
                    self._fail(events, "control character in a chunk-size line")
                    return -1
                if eol < 0:
                    if end - pos >= MAX_CHUNK_LINE:
                        self._flush(buf, start, pos, payload, events)
                        self._fail(events, "chunk-size line too long")
                        return -1
                    self._buf = buf[pos:]
                    break
                size = _chunk_size(line)
                if size is None:
                    self._flush(buf, start, pos, payload, events)
                    self._fail(events, "invalid chunk-size line")
                    return -1
                if size:
                    pos = eol + 2
                    self._remaining = size
                    self._state = _CHUNK_DATA
                    continue
                # last-chunk trailer-section CRLF: ended by an empty line, kept whole.
                if buf.startswith(CRLF, eol + 2):
                    last = eol + 4
                else:
                    found = buf.find(b"\r\n\r\n", eol)
                    # The trailer section is parsed as strictly as a head: a
                    # bare LF there ends it early for lenient servers (h11), and
                    # whatever follows would reach them as a request of its own.
                    stop = end if found < 0 else found + 4
                    reason = _trailer_problem(buf[eol:stop], complete=found >= 0)
                    if reason is None and stop - pos > MAX_HEAD:
                        reason = "trailer section too long"
                    if reason is not None:
                        self._flush(buf, start, pos, payload, events)
                        self._fail(events, reason)
                        return -1
                    if found < 0:
                        self._buf = buf[pos:]
                        break
                    last = found + 4
                self._flush(buf, start, pos, payload, events)
                self._message_end(events, buf[pos:last])
                return last
            else:  # a message ended within this call
                break
        if self._buf:
            # Everything from the kept partial line on is parsed again next time.
            self._flush(buf, start, end - len(self._buf), payload, events)
            return end
        self._flush(buf, start, pos, payload, events)
        return pos

    @staticmethod
    def _flush(buf: bytes, start: int, pos: int, payload: list[bytes], events: list[Event]) -> None:
        if pos > start:
            content = payload[0] if len(payload) == 1 else b"".join(payload)
            events.append(Body(buf[start:pos], content))
        payload.clear()

    def _message_end(self, events: list[Event], raw: bytes) -> None:
        events.append(End(raw))
        self._state = _HEAD
        self._ended()

    def _ended(self) -> None:
        """A message ended (a response parser moves to the next request's method)."""

    def _head(self, head: bytes, events: list[Event]) -> bool:
        raise NotImplementedError

    def _body_framing(
        self, headers: list[tuple[str, str]], names: list[str], request: bool, version: str
    ) -> str | None:
        """Set the body state from the framing fields; returns a reason when they are bad.

        RFC 9112 §6.3: Transfer-Encoding decides over Content-Length; a message
        with both "ought to be handled as an error" (request smuggling), and so is
        a Content-Length that is not one decimal number.
        """
        codings = field_tokens(headers, "transfer-encoding") if "transfer-encoding" in names else []
        lengths = (
            [v for k, (_, v) in zip(names, headers, strict=True) if k == "content-length"]
            if "content-length" in names
            else []
        )
        if codings:
            if lengths:
                return "both Transfer-Encoding and Content-Length"
            if version == "HTTP/1.0":
                # RFC 9112 §6.1: "MUST treat the message as if the framing is faulty".
                return "Transfer-Encoding in an HTTP/1.0 message"
            if request and "identity" in codings:
                # §6.1 lists no "identity" coding any more (h11 refuses it): what a
                # server makes of "identity, chunked" differs from one to the next.
                return "Transfer-Encoding identity"
            if codings.count("chunked") > 1 or ("chunked" in codings and codings[-1] != "chunked"):
                # §6.1: "A sender MUST NOT apply the chunked transfer coding more
                # than once"; §6.3: chunked not last leaves the length unknown.
                return "chunked applied more than once, or not last"
            if codings[-1] == "chunked":
                self._state = _CHUNK_SIZE
                return None
            # §6.3: a request whose final coding is not chunked has no reliable length
            # (400 and close); a response is then read until the connection closes.
            if request:
                return "Transfer-Encoding without final chunked"
            self._state = _CLOSE
            return None
        if lengths:
            values = [v.strip(" \t") for value in lengths for v in value.split(",")]
            if len(set(values)) != 1:
                return "conflicting Content-Length"
            if len(values) != 1:
                # RFC 9110 §8.6 allows identical repeats; llhttp (aiohttp, Node)
                # refuses them, and so does this relay: one length, said once.
                return "repeated Content-Length"
            value = values[0]
            if not value.isdigit() or not value.isascii() or len(value) > 18:
                return "invalid Content-Length"
            self._remaining = int(value)
            self._state = _LENGTH if self._remaining else _HEAD
            return None
        # §6.3: a request without either has no body; a response is read until close.
        self._state = _HEAD if request else _CLOSE
        return None


def _trailer_problem(section: bytes, *, complete: bool) -> str | None:
    """Why a trailer section (from the last chunk's CRLF on) is invalid, or None.

    ``complete``: it includes its final empty line. Its field lines are held to
    the rules of a head's (RFC 9112 §7.1.2: trailer-section = *( field-line CRLF )).
    """
    if section.translate(None, _NOT_CTL):
        return "control character in the trailer section"
    body = section[:-2] if complete else section
    if body.endswith(b"\r"):
        body = body[:-1]
    crlfs = body.count(CRLF)
    if body.count(b"\n") != crlfs or body.count(b"\r") != crlfs:
        return "bare CR or LF in the trailer section"
    lines = body.split(CRLF)[1:]
    if not complete:
        lines = lines[:-1]  # the last one may still be arriving
    for line in lines:
        if not line:
            continue
        name, sep, _ = line.partition(b":")
        if not sep or not name or name.translate(None, _TCHAR):
            return "invalid trailer field line"
    return None


def _chunk_size(line: bytes) -> int | None:
    """The size a chunk-size line gives (extensions ignored), or None if invalid."""
    # chunk-size [ chunk-ext ]; chunk-ext = *( BWS ";" BWS chunk-ext-name ... )
    size = line.split(b";", 1)[0].rstrip(b" \t")
    if not size or len(size) > 16 or size.translate(None, _HEX):
        return None
    return int(size, 16)


def _fields(head: bytes) -> tuple[bytes, list[bytes], list[tuple[str, str]], list[str]] | str:
    """Split a head into its start line, raw field lines, (name, value) pairs and lower names.

    Returns a reason when the head is malformed.
    """
    body = head[:-4]
    # RFC 9110 §5.5: CR, LF and NUL are invalid in field values; a recipient MUST
    # reject them (a bare CR or LF is how requests get smuggled past a proxy).
    crlfs = body.count(CRLF)
    if body.count(b"\r") != crlfs or body.count(b"\n") != crlfs or b"\0" in body:
        return "bare CR, LF or NUL in the head"
    if body.translate(None, _NOT_CTL):
        # RFC 9110 §5.5: field values are VCHAR, obs-text, SP and HTAB only.
        return "control character in the head"
    raw_lines = body.split(CRLF)
    # One decode for the whole head; "replace" never yields CR or LF, so the
    # text lines stay parallel to the raw ones.
    text_lines = body.decode("utf-8", "replace").split("\r\n")
    headers: list[tuple[str, str]] = []
    names: list[str] = []
    for raw, text in zip(raw_lines[1:], text_lines[1:], strict=True):
        name, sep, value = text.partition(":")
        # RFC 9112 §5.1: no whitespace between field name and colon (400); §5.2:
        # obs-fold (a line starting with whitespace) is rejected too.
        raw_name = raw.partition(b":")[0]
        if not sep or not raw_name or raw_name.translate(None, _TCHAR):
            return "invalid field line"
        headers.append((name, value.strip(" \t")))
        names.append(name.lower())
    return raw_lines[0], raw_lines[1:], headers, names


def _target_problem(method: str, target: bytes) -> str | None:
    """Why a request target is refused by a reverse proxy, or None (RFC 9112 §3.2).

    Clients of a reverse proxy send origin-form (``/path?query``), and "*" for
    a server-wide OPTIONS. CONNECT (authority-form) would turn the connection
    into a tunnel whose bytes no trace could frame, and absolute-form is a
    forward proxy's form: an upstream could route it elsewhere than its path
    says, and the recorder would classify it by a path the server ignores.
    """
    if method == "CONNECT":
        return "CONNECT is not relayed"
    if not target.isascii():
        # A URI is ASCII (RFC 3986 §2); servers differ in what they make of other bytes.
        return "request target is not ASCII"
    if target.startswith(b"/"):
        return None
    if target == b"*" and method == "OPTIONS":
        return None
    return "request target is not origin-form"


def _host_problem(names: list[str], version: str) -> str | None:
    """Why a request's Host fields are refused, or None.

    RFC 9112 §3.2: "A server MUST respond with a 400 (Bad Request) status code
    to any HTTP/1.1 request message that lacks a Host header field and to any
    request message that contains more than one Host header field line": with
    two, the relay would rewrite one and the upstream might route by the other.
    """
    count = names.count("host")
    if count > 1:
        return "more than one Host field"
    if count == 0 and version == "HTTP/1.1":
        return "an HTTP/1.1 request without Host"
    return None


class RequestParser(_Parser):
    """Frames the requests a client sends on one connection."""

    def _head(self, head: bytes, events: list[Event]) -> bool:
        # RFC 9112 §2.2: a server SHOULD ignore at least one empty line before a request-line.
        stripped = head.lstrip(CRLF)
        if len(stripped) < 4:
            return True
        parsed = _fields(stripped)
        if isinstance(parsed, str):
            self._fail(events, parsed)
            return False
        start, lines, headers, names = parsed
        # request-line = method SP request-target SP HTTP-version
        parts = start.split(b" ")
        if (
            len(parts) != 3
            or not parts[0]
            or parts[0].translate(None, _TCHAR)
            or not parts[1]
            or parts[2] not in (b"HTTP/1.1", b"HTTP/1.0")
        ):
            self._fail(events, "invalid request line")
            return False
        method, version = parts[0].decode("ascii"), parts[2].decode("ascii")
        target_problem = _target_problem(method, parts[1])
        if target_problem is not None:
            self._fail(events, target_problem)
            return False
        target = parts[1].decode("utf-8", "replace")
        request = RequestHead(
            method, target, version, headers=headers, lines=lines, raw=stripped, names=names
        )
        reason = self._body_framing(headers, names, request=True, version=version)
        return self._framed(events, request, reason or _host_problem(names, version))


class ResponseParser(_Parser):
    """Frames the responses a server sends on one connection.

    Whether a response has a body depends on its request (RFC 9112 §6.3: none
    for HEAD), so the caller says each request's method, in order, with ``expect``.
    """

    def __init__(self) -> None:
        super().__init__()
        self._methods: deque[str] = deque()

    def _valid_first_byte(self, first: bytes) -> bool:
        return first == b"H"

    def expect(self, method: str) -> None:
        """A request with ``method`` was sent: its response comes after the pending ones."""
        self._methods.append(method)

    def _ended(self) -> None:
        if self._methods:
            self._methods.popleft()

    def _head(self, head: bytes, events: list[Event]) -> bool:
        parsed = _fields(head)
        if isinstance(parsed, str):
            self._fail(events, parsed)
            return False
        start, lines, headers, names = parsed
        # status-line = HTTP-version SP status-code SP [ reason-phrase ]
        version, _, rest = start.partition(b" ")
        code, _, reason = rest.partition(b" ")
        if (
            version not in (b"HTTP/1.1", b"HTTP/1.0")
            or len(code) != 3
            or not code.isdigit()
            or code[:1] == b"0"
        ):
            self._fail(events, "invalid status line")
            return False
        if not self._methods:
            self._fail(events, "a response without a request")
            return False
        status = int(code)
        response = ResponseHead(
            version.decode(),
            status,
            reason.decode("latin-1"),
            headers=headers,
            lines=lines,
            raw=head,
            names=names,
        )
        if status < 200 and status != 101:
            events.append(response)
            return True  # interim: the final response follows (§15.2), same request
        # §6.3: no body after a HEAD request, nor in 1xx (a 101 ends HTTP on the
        # connection), 204 and 304 responses, whatever their fields say.
        if self._methods[0] == "HEAD" or status in (101, 204, 304):
            events.append(response)
            self._message_end(events, b"")
            if status == 101:
                self._state = _CLOSE  # whatever follows is no longer HTTP
            return True
        reason_text = self._body_framing(headers, names, request=False, version=response.version)
        return self._framed(events, response, reason_text)
