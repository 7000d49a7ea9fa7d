"""The fault specification language: ``ACTION [ARGS] [when FILTER] [MODIFIERS]``.

::

    delay 300ms when tool == "slow"
    delay 100ms..2s when method == tools/call prob 0.5 seed 7
    drop when method == tools/call and direction == s2c times 1
    error -32603 "backend down" when tool == "echo" after 2
    corrupt truncate when direction == s2c times 1

The filter after ``when`` is the filter language of ``mcpsniff.filter`` (the
one ``show``, ``check`` and the UI use), judged against each message as it
crosses the relay; without ``when`` a fault matches every message. The
modifiers come last: ``prob P`` (with ``seed N``: the same seed gives the
same faults), ``times N`` (at most N injections), ``after N`` (skip the
first N matching messages). A specification that cannot be parsed raises
``FaultSpecError``, a ``FilterError`` with the place of the error, so that a
command prints it exactly like a bad filter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from mcpsniff.filter import Filter, FilterError, compile_filter, parse_duration

#: Longest specification (one ``--fault`` or one line of a ``--faults`` file).
MAX_SPEC_CHARS = 4096
#: Most faults one run accepts.
MAX_FAULTS = 256
#: Longest ``--faults`` file read.
MAX_FILE_BYTES = 1 << 20
#: Longest injected delay: a fault holds a message, it must not hold it forever.
MAX_DELAY_MS = 3_600_000.0

DELAY = "delay"
DROP = "drop"
DUPLICATE = "duplicate"
REORDER = "reorder"
ERROR = "error"
TOOL_ERROR = "tool-error"
CORRUPT = "corrupt"
STATUS = "status"
DISCONNECT = "disconnect"
KILL = "kill"
ACTIONS = (DELAY, DROP, DUPLICATE, REORDER, ERROR, TOOL_ERROR, CORRUPT, STATUS, DISCONNECT, KILL)
#: What ``corrupt`` can do to a message's bytes.
CORRUPTIONS = ("truncate", "trailing-comma", "invalid-utf8", "banner", "split", "pretty")
#: Actions that answer a request in mcpsniff's name instead of forwarding it.
ANSWERS = frozenset({ERROR, TOOL_ERROR, STATUS})
#: Actions that only an HTTP relay can carry out.
HTTP_ONLY = frozenset({STATUS})
#: Actions that only a stdio relay can carry out (an HTTP relay has no server process).
STDIO_ONLY = frozenset({KILL, REORDER})

_TOKEN = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|(\S+))')
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_INT = re.compile(r"[+-]?\d{1,12}")


class FaultSpecError(FilterError):
    """A fault specification that cannot be parsed: ``message (at column N)``, and ``caret()``."""


@dataclass(frozen=True, slots=True)
class Fault:
    """One parsed ``--fault``: what to do, to which messages, how often."""

    text: str
    action: str
    #: ``delay``: the range in milliseconds (equal ends for a fixed delay).
    delay_ms: tuple[float, float] = (0.0, 0.0)
    #: ``error``: the JSON-RPC code; ``status``: the HTTP status.
    code: int = 0
    #: ``error`` / ``tool-error``: the message text.
    message: str = ""
    #: ``corrupt``: one of ``CORRUPTIONS``.
    corruption: str = ""
    when: Filter | None = None
    prob: float = 1.0
    seed: int | None = None
    times: int | None = None
    after: int = 0


@dataclass(frozen=True, slots=True)
class _Word:
    text: str
    start: int
    quoted: bool


def parse_fault(text: str) -> Fault:
    """Parse one specification. Raises ``FaultSpecError`` with the position of the problem."""
    if len(text) > MAX_SPEC_CHARS:
        raise FaultSpecError(
            f"fault specification longer than {MAX_SPEC_CHARS} characters", text, MAX_SPEC_CHARS
        )
    bad = _CONTROL.search(text)
    if bad is not None:
        raise FaultSpecError("control character in the fault specification", text, bad.start())
    words = _words(text)
    if not words:
        raise FaultSpecError("empty fault specification (an action such as delay 300ms)", text, 0)
    when_at = next((i for i, w in enumerate(words) if w.text == "when" and not w.quoted), None)
    head = words if when_at is None else words[:when_at]
    tail = [] if when_at is None else words[when_at + 1 :]
    modifiers, rest = _peel_modifiers(text, tail if when_at is not None else head[1:])
    if when_at is None:
        head = [head[0], *rest]
        filter_words: list[_Word] = []
    else:
        filter_words = rest
    fields = _action(text, head)
    when = None
    if when_at is not None:
        if not filter_words:
            raise FaultSpecError("a filter must follow when", text, words[when_at].start + 4)
        start = filter_words[0].start
        end = _end_of(filter_words[-1], text)
        expression = text[start:end]
        try:
            when = compile_filter(expression)
        except FilterError as exc:
            raise FaultSpecError(exc.message, text, start + exc.position) from None
    return Fault(text=text, when=when, **fields, **modifiers)


def parse_faults(texts: list[str]) -> list[Fault]:
    """Parse several ``--fault`` values (``FaultSpecError`` at the first bad one)."""
    if len(texts) > MAX_FAULTS:
        raise FaultSpecError(f"more than {MAX_FAULTS} faults", texts[MAX_FAULTS], 0)
    return [parse_fault(text) for text in texts]


def read_fault_file(path: str | Path) -> list[str]:
    """The specifications of a ``--faults`` file: one a line; ``#`` comments, blank lines skipped.

    Raises ``FaultSpecError`` (naming the line) for a file that cannot be read
    or is not UTF-8 text.
    """
    where = str(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise FaultSpecError(f"cannot read {where}: {exc.strerror or exc}", where, 0) from None
    if len(data) > MAX_FILE_BYTES:
        raise FaultSpecError(f"{where} is larger than {MAX_FILE_BYTES} bytes", where, 0)
    try:
        content = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FaultSpecError(f"{where} is not UTF-8 (byte {exc.start})", where, 0) from None
    specs = []
    for line in content.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            specs.append(stripped)
    return specs


def load_faults(specs: list[str], files: list[str]) -> list[Fault]:
    """The faults of ``--fault`` values and ``--faults`` files, files first, in order."""
    texts: list[str] = []
    for name in files:
        texts.extend(read_fault_file(name))
    texts.extend(specs)
    return parse_faults(texts)


# --------------------------------------------------------------------------- pieces


def _words(text: str) -> list[_Word]:
    words = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            break
        if match.group(1) is not None:
            words.append(_Word(_unquote(match.group(1)), match.start(1) - 1, True))
        elif match.group(2) is not None:
            if match.group(2).startswith('"'):
                raise FaultSpecError("unterminated string", text, match.start(2))
            words.append(_Word(match.group(2), match.start(2), False))
        position = match.end()
    return words


def _unquote(body: str) -> str:
    return re.sub(r"\\(.)", r"\1", body)


def _end_of(word: _Word, text: str) -> int:
    if not word.quoted:
        return word.start + len(word.text)
    # The closing quote of a quoted word (its text was unescaped).
    index = word.start + 1
    while index < len(text):
        if text[index] == "\\":
            index += 2
            continue
        if text[index] == '"':
            return index + 1
        index += 1
    return len(text)


_MODIFIERS = ("prob", "seed", "times", "after")


def _peel_modifiers(text: str, words: list[_Word]) -> tuple[dict[str, object], list[_Word]]:
    """Take ``prob``/``seed``/``times``/``after`` pairs off the end of ``words``."""
    found: dict[str, object] = {}
    rest = list(words)
    while len(rest) >= 2 and not rest[-2].quoted and rest[-2].text in _MODIFIERS:
        name, value = rest[-2], rest[-1]
        if name.text in found:
            raise FaultSpecError(f"{name.text} given twice", text, name.start)
        found[name.text] = _modifier(text, name.text, value)
        rest = rest[:-2]
    for word in rest:
        if not word.quoted and word.text in _MODIFIERS and word is rest[-1]:
            raise FaultSpecError(f"{word.text} needs a number after it", text, _end_of(word, text))
    if "seed" in found and "prob" not in found:
        raise FaultSpecError("seed only makes sense with prob", text, text.find("seed"))
    return found, rest


def _modifier(text: str, name: str, value: _Word) -> object:
    if name == "prob":
        try:
            prob = float(value.text)
        except ValueError:
            prob = -1.0
        if not 0.0 <= prob <= 1.0:
            raise FaultSpecError("prob takes a number from 0 to 1", text, value.start)
        return prob
    if _INT.fullmatch(value.text) is None:
        raise FaultSpecError(f"{name} takes a whole number", text, value.start)
    number = int(value.text)
    if name != "seed" and number < (1 if name == "times" else 0):
        least = "1" if name == "times" else "0"
        raise FaultSpecError(f"{name} takes a whole number of at least {least}", text, value.start)
    return number


def _action(text: str, head: list[_Word]) -> dict[str, object]:
    name = head[0]
    args = head[1:]
    if name.quoted or name.text not in ACTIONS:
        raise FaultSpecError(
            f"unknown fault action {name.text!r} (one of {', '.join(ACTIONS)})", text, name.start
        )
    action = name.text
    fields: dict[str, object] = {"action": action}
    after_name = _end_of(name, text)
    if action == DELAY:
        if len(args) != 1:
            where = args[1].start if len(args) > 1 else after_name
            raise FaultSpecError("delay takes one duration, or MIN..MAX", text, where)
        fields["delay_ms"] = _delay(text, args[0])
        return fields
    if action in (ERROR, STATUS):
        if not args:
            what = "a JSON-RPC error code" if action == ERROR else "an HTTP status"
            raise FaultSpecError(f"{action} takes {what}", text, after_name)
        code_word = args[0]
        if code_word.quoted or _INT.fullmatch(code_word.text) is None:
            raise FaultSpecError(f"{action} takes a whole number first", text, code_word.start)
        code = int(code_word.text)
        if action == STATUS and not 100 <= code <= 599:
            raise FaultSpecError("an HTTP status is from 100 to 599", text, code_word.start)
        if action == ERROR and not -(2**53) < code < 2**53:
            raise FaultSpecError("the error code is out of range", text, code_word.start)
        fields["code"] = code
        if len(args) > 2:
            raise FaultSpecError("quote a message of several words", text, args[2].start)
        if len(args) == 2:
            if action == STATUS:
                raise FaultSpecError("status takes only a code", text, args[1].start)
            fields["message"] = args[1].text
        elif action == ERROR:
            fields["message"] = "injected by mcpsniff"
        return fields
    if action == TOOL_ERROR:
        if len(args) > 1:
            raise FaultSpecError("quote a message of several words", text, args[1].start)
        fields["message"] = args[0].text if args else "injected tool error"
        return fields
    if action == CORRUPT:
        if len(args) != 1 or args[0].text not in CORRUPTIONS:
            where = args[0].start if args else after_name
            raise FaultSpecError(f"corrupt takes one of {', '.join(CORRUPTIONS)}", text, where)
        fields["corruption"] = args[0].text
        return fields
    if args:
        raise FaultSpecError(f"{action} takes no argument", text, args[0].start)
    return fields


def _delay(text: str, word: _Word) -> tuple[float, float]:
    low_text, sep, high_text = word.text.partition("..")
    try:
        low = parse_duration(low_text, text, word.start)
        high = parse_duration(high_text, text, word.start + len(low_text) + 2) if sep else low
    except FilterError as exc:
        raise FaultSpecError(exc.message, text, exc.position) from None
    if high < low:
        raise FaultSpecError("the delay range must go from low to high", text, word.start)
    if high > MAX_DELAY_MS:
        raise FaultSpecError("a delay is at most one hour", text, word.start)
    return (low, high)
