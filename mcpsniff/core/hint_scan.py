"""Find many short literals in one pass: the pre-test of redaction.

Redaction runs on every recorded frame, and almost every frame holds no
secret. Whether it might is decided by looking for about forty lower-case
literals ("hints": ``token``, ``pass``, ``sk-``, ``eyj``, ``://`` ...) in the
lower-cased frame. One ``bytes.find`` per literal reads the frame forty times
(about 27 us per KiB), a regular-expression alternation in ``re`` tries every
branch at every offset (about 70 us per KiB). An Aho-Corasick automaton reads
each byte once whatever the number of literals; ``ahocorasick_rs`` is a thin
binding of the Rust ``aho-corasick`` crate (the one ripgrep uses).

Two automata over the same literals. The *leftmost-first* one finds
non-overlapping matches and can use the crate's SIMD prefilter: it skips
bytes that cannot start a literal, 0.5 instead of 2 us per KiB on a frame
of digits or padding, up to 4 times faster on long text. It answers "is there
any?", which is almost always "no". When there is one, the *standard* one
finds every occurrence, overlapping ones included, but only inside the
leftmost-first matches: every occurrence starts inside one of them (the
leftmost-first search reports the leftmost match from where the previous
one ended, so an occurrence outside all of them would have been reported).

Results are exactly those of the naive search: every occurrence of every
literal, overlapping ones included, so a caller can swap one for the other.
Large inputs are scanned in windows, so that a hostile frame made of one
literal repeated (``keykeykey...``, 50 MB) costs memory bounded by the
window, not by the frame.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator

from ahocorasick_rs import BytesAhoCorasick, MatchKind

#: Bytes scanned per call on large inputs: bounds the list of matches one call returns.
WINDOW = 64 * 1024

#: Bytes the standard automaton scans in the time of one call on a tiny span.
_CALL_BYTES = 100

#: More leftmost-first matches than this in one window (base64 is full of "pw",
#: "sig", "hf_"): the prefilter loses on such data; later windows skip it.
_DENSE = 16

#: Literals at least this long go to the prefiltered leftmost-first search.
_PREFILTER_LENGTH = 3

#: (literal number, start, end) of one occurrence.
Occurrence = tuple[int, int, int]

#: Occurrences in a large haystack kept after the first pass (about 100 bytes each).
KEEP_LIMIT = 16_384


def _span_start(occurrence: Occurrence) -> int:
    return occurrence[1]


class HintScanner:
    """Where a fixed set of byte literals occurs in a haystack (case-sensitive).

    Literals are numbered in the order given (duplicates dropped); callers ask
    about subsets of those numbers (``ids``).
    """

    __slots__ = ("_every", "_first", "_overlap", "_short", "_short_last", "_window", "hints")

    def __init__(self, hints: Iterable[bytes], window: int = WINDOW) -> None:
        self.hints: tuple[bytes, ...] = tuple(dict.fromkeys(hints))
        if not self.hints or not all(self.hints):
            raise ValueError("HintScanner needs at least one literal, none of them empty")
        if window < 1:
            raise ValueError("window must be positive")
        # The leftmost-first search is split by literal length: one literal of
        # two bytes ("pw") among forty makes the crate's SIMD prefilter useless
        # on prose (1.6 instead of 0.5 us per KiB of English text: every common
        # letter pair becomes a candidate), while a set of two-byte literals
        # alone is found by a memmem-like search. Two calls, cheaper than one.
        long = [hint for hint in self.hints if len(hint) >= _PREFILTER_LENGTH]
        short = [hint for hint in self.hints if len(hint) < _PREFILTER_LENGTH]
        self._first = BytesAhoCorasick(long, matchkind=MatchKind.LeftmostFirst) if long else None
        self._short = BytesAhoCorasick(short, matchkind=MatchKind.LeftmostFirst) if short else None
        #: The last bytes of the short literals: without any of them, none occurs.
        self._short_last = tuple(dict.fromkeys(hint[-1] for hint in short))
        self._every = BytesAhoCorasick(self.hints)
        # An occurrence may end this many bytes after the byte it starts at: a
        # window (or a leftmost-first match) is read this far past its end.
        self._overlap = max(map(len, self.hints)) - 1
        self._window = window

    def ids(self, literals: Iterable[bytes]) -> frozenset[int]:
        """The numbers of ``literals`` (each must be one of the scanner's)."""
        index = {hint: i for i, hint in enumerate(self.hints)}
        return frozenset(index[literal] for literal in literals)

    def _leftmost(self, data: bytes | memoryview) -> list[Occurrence]:
        """Spans that every occurrence in ``data`` starts inside (ascending, disjoint).

        The leftmost-first matches of each length group: an occurrence of a
        literal starts inside a match of its own group (see the module
        docstring); where the two groups' matches overlap they are merged, so
        that ``_within`` finds each occurrence once.
        """
        first = self._first.find_matches_as_indexes(data) if self._first is not None else []
        search = self._short
        if search is None:
            return first
        if type(data) is bytes:  # (a window's memoryview: ``in`` would compare items)
            # No short literal occurs without its last byte: one memchr each
            # (an int operand; a one-byte ``bytes`` takes the general search,
            # five times slower) spares JSON without a "w" the second call.
            for byte in self._short_last:
                if byte in data:
                    break
            else:
                return first
        short = search.find_matches_as_indexes(data)
        if not short:
            return first
        if not first:
            return short
        spans = sorted(first + short, key=_span_start)
        merged: list[Occurrence] = []
        hint, start, end = spans[0]
        for _, at, until in spans[1:]:
            if at < end:
                end = max(end, until)
            else:
                merged.append((hint, start, end))
                start, end = at, until
        merged.append((hint, start, end))
        return merged

    def scan(self, data: bytes) -> Hits | None:
        """The occurrences of the literals in ``data``, or None when there is none.

        None is the common answer (a frame without secrets) and the cheap one.
        """
        if len(data) <= self._window:
            first = self._leftmost(data)
            return Hits(self, data, self._within(data, first, 0, len(data))) if first else None
        return Hits(self, data, None) if self.any(data) else None

    def _within(
        self, data: bytes | memoryview, first: list[Occurrence], base: int, stop: int
    ) -> list[Occurrence]:
        """Every occurrence starting inside the leftmost-first matches ``first``.

        ``first`` was found in ``data[base:]``; occurrences are returned with
        offsets into ``data``, and only those starting before ``stop``.
        """
        every = self._every.find_matches_as_indexes
        overlap = self._overlap
        if len(first) * _CALL_BYTES > stop - base:
            # So many matches (one hint repeated) that one standard pass over
            # the region costs less than a call per match.
            return [
                (hint, base + at, base + until)
                for hint, at, until in every(data[base : stop + overlap], overlapping=True)
                if base + at < stop
            ]
        found: list[Occurrence] = []
        for _, start, end in first:
            start += base
            end += base
            span = end - start
            for hint, at, until in every(data[start : end + overlap], overlapping=True):
                if at < span and start + at < stop:
                    found.append((hint, start + at, start + until))
        return found

    def windows(self, data: bytes) -> Iterator[list[Occurrence]]:
        """Every occurrence (literal number, start, end), one window's worth at a time."""
        size = len(data)
        if size <= self._window:
            yield self._within(data, self._leftmost(data), 0, size)
            return
        first = self._leftmost
        every = self._every.find_matches_as_indexes
        dense = False
        view = memoryview(data)
        for base in range(0, size, self._window):
            stop = base + self._window
            if dense:
                # The standard search alone for the rest of such data.
                matches = every(view[base : stop + self._overlap], overlapping=True)
                yield [(h, base + at, base + until) for h, at, until in matches if base + at < stop]
                continue
            matches = first(view[base : stop + self._overlap])
            dense = len(matches) > _DENSE
            yield self._within(view, matches, base, stop)

    def any(self, data: bytes) -> bool:
        """Whether any literal occurs in ``data`` (stops at the first window with one)."""
        searches = [a.find_matches_as_indexes for a in (self._first, self._short) if a is not None]
        size = len(data)
        if size <= self._window:
            return bool(self._leftmost(data))
        view = memoryview(data)
        for base in range(0, size, self._window):
            window = view[base : base + self._window + self._overlap]
            if any(search(window) for search in searches):
                return True
        return False


class Hits:
    """Where a scanner's literals occur in one haystack.

    A haystack of one window is scanned once, at construction, and every
    question is answered from that list. A larger one is scanned window by
    window; the first complete pass is kept if it found at most
    ``KEEP_LIMIT`` occurrences, so memory stays bounded whatever the traffic
    and only a hostile haystack (one literal repeated) is scanned again for
    each question.
    """

    __slots__ = ("_data", "_found", "_present", "_scanner")

    def __init__(self, scanner: HintScanner, data: bytes, found: list[Occurrence] | None) -> None:
        self._scanner = scanner
        self._data = data
        #: (literal number, start, end) of all occurrences, once known and kept.
        self._found = found
        self._present: frozenset[int] | None = None

    def _windows(self) -> Iterator[list[Occurrence]]:
        if self._found is not None:
            return iter((self._found,))
        return self._keeping(self._scanner.windows(self._data))

    def _keeping(self, windows: Iterator[list[Occurrence]]) -> Iterator[list[Occurrence]]:
        """``windows`` passed on, and kept as ``_found`` if they are all seen and few."""
        kept: list[Occurrence] | None = []
        for window in windows:
            if kept is not None:
                kept.extend(window)
                if len(kept) > KEEP_LIMIT:
                    kept = None
            yield window
        if kept is not None:
            self._found = kept  # answered as one window: ``positions`` sorts it

    def kept(self) -> list[Occurrence] | None:
        """Every occurrence (literal number, start, end) if they are known and kept, else None.

        Always the list for a haystack of one window; read it, do not change it.
        """
        return self._found

    def present(self) -> frozenset[int]:
        """The numbers of the literals that occur."""
        if self._present is None:
            found: set[int] = set()
            for window in self._windows():
                found.update(hint for hint, _, _ in window)
            self._present = frozenset(found)
        return self._present

    def starts(self) -> Iterator[tuple[int, int]]:
        """(literal number, start) of every occurrence, in no particular order (lazily)."""
        for window in self._windows():
            for hint, start, _ in window:
                yield hint, start

    def positions(self, ids: Collection[int]) -> Iterator[int]:
        """Every offset where one of the literals ``ids`` starts, ascending (lazily)."""
        for window in self._windows():
            starts = [start for hint, start, _ in window if hint in ids]
            starts.sort()
            yield from starts
