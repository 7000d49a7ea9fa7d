"""Find many short literals in one pass: the pre-test of redaction.

Redaction runs on every recorded frame, and almost every frame holds no
secret. Whether it might is decided by looking for about forty lower-case
literals ("hints": ``token``, ``pass``, ``sk-``, ``eyj``, ``://`` ...) in the
lower-cased frame. One ``bytes.find`` per literal reads the frame forty times
(about 27 us per KiB), a regular-expression alternation in ``re`` tries every
branch at every offset (about 70 us per KiB). An Aho-Corasick automaton reads
each byte once whatever the number of literals; ``ahocorasick_rs`` is a thin
binding of the Rust ``aho-corasick`` crate (the one ripgrep uses), about 2 us
per KiB here.

Results are exactly those of the naive search: every occurrence of every
literal, overlapping ones included, so a caller can swap one for the other.
Large inputs are scanned in windows, so that a hostile frame made of one
literal repeated (``keykeykey...``, 50 MB) costs memory bounded by the
window, not by the frame.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator

from ahocorasick_rs import BytesAhoCorasick

#: Bytes scanned per call on large inputs: bounds the list of matches one call returns.
WINDOW = 64 * 1024


class HintScanner:
    """Where a fixed set of byte literals occurs in a haystack (case-sensitive).

    Literals are numbered in the order given (duplicates dropped); callers ask
    about subsets of those numbers (``ids``).
    """

    __slots__ = ("_automaton", "_overlap", "_window", "hints")

    def __init__(self, hints: Iterable[bytes], window: int = WINDOW) -> None:
        self.hints: tuple[bytes, ...] = tuple(dict.fromkeys(hints))
        if not self.hints or not all(self.hints):
            raise ValueError("HintScanner needs at least one literal, none of them empty")
        if window < 1:
            raise ValueError("window must be positive")
        self._automaton = BytesAhoCorasick(self.hints)
        # A match starting in one window may end in the next: each window reads
        # this many bytes past its end, and keeps only the matches starting inside it.
        self._overlap = max(map(len, self.hints)) - 1
        self._window = window

    def ids(self, literals: Iterable[bytes]) -> frozenset[int]:
        """The numbers of ``literals`` (each must be one of the scanner's)."""
        index = {hint: i for i, hint in enumerate(self.hints)}
        return frozenset(index[literal] for literal in literals)

    def scan(self, data: bytes) -> Hits | None:
        """The occurrences of the literals in ``data``, or None when there is none.

        None is the common answer (a frame without secrets) and the cheap one.
        """
        if len(data) <= self._window:
            found = self._automaton.find_matches_as_indexes(data, overlapping=True)
            return Hits(self, data, found) if found else None
        return Hits(self, data, None) if self.any(data) else None

    def windows(self, data: bytes) -> Iterator[list[tuple[int, int, int]]]:
        """(literal number, start, end) of every occurrence, one window's worth at a time."""
        find = self._automaton.find_matches_as_indexes
        size = len(data)
        if size <= self._window:
            yield find(data, overlapping=True)
            return
        view = memoryview(data)
        for base in range(0, size, self._window):
            stop = base + self._window
            matches = find(view[base : stop + self._overlap], overlapping=True)
            yield [
                (hint, base + start, base + end)
                for hint, start, end in matches
                if base + start < stop
            ]

    def any(self, data: bytes) -> bool:
        """Whether any literal occurs in ``data`` (stops at the first window with one)."""
        find = self._automaton.find_matches_as_indexes
        size = len(data)
        if size <= self._window:
            return bool(find(data))
        view = memoryview(data)
        for base in range(0, size, self._window):
            if find(view[base : base + self._window + self._overlap]):
                return True
        return False


class Hits:
    """Where a scanner's literals occur in one haystack.

    A haystack of one window is scanned once, at construction, and every
    question is answered from that list; a larger one is scanned window by
    window for each question, so memory stays bounded by the window.
    """

    __slots__ = ("_data", "_found", "_present", "_scanner")

    def __init__(
        self, scanner: HintScanner, data: bytes, found: list[tuple[int, int, int]] | None
    ) -> None:
        self._scanner = scanner
        self._data = data
        #: (literal number, start, end) of all occurrences, when ``data`` is one window.
        self._found = found
        self._present: frozenset[int] | None = None

    def _windows(self) -> Iterator[list[tuple[int, int, int]]]:
        if self._found is not None:
            return iter((self._found,))
        return self._scanner.windows(self._data)

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
