"""Request-id identity and bounded memory of ids already used.

JSON-RPC ids are compared by JSON type *and* value: a response to ``1`` must
carry ``1``, not ``"1"`` (JSON-RPC §5: "It MUST be the same as the value of
the id member in the Request Object"; catalogue trap 8). Python would treat
``True == 1`` and hash them alike, so ids are keyed by a tagged tuple,
except integers (the ids real clients use), which are their own key: no
tuple equals an int, and an int key costs no allocation and hashes fast,
which counts because every request and response is looked up by its key.

MSG-ID-REUSE needs every id a requestor ever used in the session (V1–V4: an
id "MUST NOT have been previously used by the requestor within the same
session"). Keeping them all in a set would make memory grow with the length
of the trace, so integer ids, which real clients hand out in increasing
order, are kept as merged intervals, and other ids in a bounded window.
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from typing import Any

#: An integer id's key is the int; any other id's is (JSON type tag, value).
IdKey = int | tuple[str, Any]

#: How many non-integer ids (strings, fractions) each direction remembers for
#: reuse detection. Beyond this, reuse of a very old string id goes unnoticed:
#: the price of memory that does not grow with the length of a session.
STRING_ID_WINDOW = 8192


def id_key(value: Any) -> IdKey:
    """The identity of a JSON-RPC id: its JSON type and its value."""
    kind = type(value)
    if kind is int:  # the common case first: this runs for every message
        return value
    if kind is str:
        return ("s", value)
    if isinstance(value, str):
        return ("s", value)
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        # 1.0 and 1 are the same JSON number.
        return int(value) if value.is_integer() else ("n", value)
    if value is None:
        return ("z", None)
    # Objects and arrays are invalid ids (JR-ID-TYPE) but still need a key.
    return ("o", repr(value))


def id_value(key: IdKey) -> Any:
    """The id a key was made from (an integral float comes back as an int)."""
    return key if type(key) is int else key[1]


def coerced_keys(value: Any) -> list[IdKey]:
    """Keys an id would have after the type confusions real peers commit.

    ``"1"`` for ``1`` and ``1`` for ``"1"``: the classic id-echo bug.
    """
    if isinstance(value, str):
        text = value.strip()
        try:
            return [int(text)]
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                return []
            return [id_key(number)]
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        if isinstance(value, float) and value.is_integer():
            return [("s", str(int(value))), ("s", str(value))]
        return [("s", str(value))]
    return []


def show_id(value: Any) -> str:
    """An id as JSON would spell it, for messages ("1" vs 1 matters)."""
    if isinstance(value, str):
        return f'"{value}"'
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class IdHistory:
    """The ids one requestor has used: exact for integers, windowed otherwise."""

    __slots__ = ("_ends", "_others", "_starts")

    def __init__(self) -> None:
        # Disjoint, sorted, non-adjacent closed intervals [start, end].
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._others: OrderedDict[IdKey, None] = OrderedDict()

    def __contains__(self, key: IdKey) -> bool:
        if type(key) is int:
            i = bisect.bisect_right(self._starts, key) - 1
            return i >= 0 and key <= self._ends[i]
        return key in self._others

    def add(self, key: IdKey) -> None:
        """Remember ``key`` as used."""
        if type(key) is int:
            self._add_int(key)
            return
        others = self._others
        others[key] = None
        if len(others) > STRING_ID_WINDOW:
            others.popitem(last=False)

    def check_and_add(self, key: IdKey) -> bool:
        """Whether ``key`` was used before; remembers it either way.

        One call instead of ``in`` then ``add``: every request does both.
        """
        if type(key) is int:
            ends = self._ends
            # Fast path: an id beyond every interval (real clients count up).
            if ends and key > ends[-1]:
                if ends[-1] + 1 == key:
                    ends[-1] = key
                else:
                    self._starts.append(key)
                    ends.append(key)
                return False
            seen = key in self
            if not seen:
                self._add_int(key)
            return seen
        others = self._others
        if key in others:
            return True  # as in add(): a repeat keeps its place in the window
        others[key] = None
        if len(others) > STRING_ID_WINDOW:
            others.popitem(last=False)
        return False

    def _add_int(self, value: int) -> None:
        starts, ends = self._starts, self._ends
        # Fast path: the next id in sequence extends the last interval.
        if ends and ends[-1] + 1 == value:
            ends[-1] = value
            return
        i = bisect.bisect_right(starts, value) - 1
        if i >= 0 and value <= ends[i]:
            return
        joins_left = i >= 0 and ends[i] + 1 == value
        joins_right = i + 1 < len(starts) and starts[i + 1] - 1 == value
        if joins_left and joins_right:
            ends[i] = ends[i + 1]
            del starts[i + 1], ends[i + 1]
        elif joins_left:
            ends[i] = value
        elif joins_right:
            starts[i + 1] = value
        else:
            starts.insert(i + 1, value)
            ends.insert(i + 1, value)

    @property
    def interval_count(self) -> int:
        """How many integer intervals are stored (memory grows with this)."""
        return len(self._starts)


class BoundedMap(OrderedDict[Any, Any]):
    """An insertion-ordered map that forgets its oldest entries past ``limit``."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def put(self, key: Any, value: Any) -> None:
        """Insert or refresh ``key``, evicting the oldest entry when full."""
        self[key] = value
        self.move_to_end(key)
        if len(self) > self.limit:
            self.popitem(False)  # positional: measurably cheaper than last=False
