"""core/ids.py: request id keys and the id history."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mcpsniff.core.ids import IdHistory, coerced_keys, id_key, id_value


@given(
    st.lists(
        st.one_of(
            st.integers(min_value=-5, max_value=60),
            st.text(max_size=2),
            st.floats(allow_nan=False, allow_infinity=False, min_value=-5, max_value=60),
            st.booleans(),
        ),
        max_size=80,
    )
)
def test_check_and_add_is_contains_then_add(ids: list[object]) -> None:
    fast, plain = IdHistory(), IdHistory()
    for value in ids:
        key = id_key(value)
        seen = key in plain
        plain.add(key)
        assert fast.check_and_add(key) is seen
    for value in range(-6, 62):
        assert (id_key(value) in fast) == (id_key(value) in plain)
    assert fast.interval_count == plain.interval_count


def test_integer_ids_are_their_own_key_and_stay_apart_from_other_types() -> None:
    assert id_key(7) == 7 and id_key(7.0) == 7
    keys = [id_key(v) for v in (1, "1", True, 1.5, None, [1], {"a": 1})]
    assert len(set(map(repr, keys))) == len(keys)
    assert len(set(keys)) == len(keys)  # as dict keys, too: True is not 1
    assert [id_value(k) for k in keys[:5]] == [1, "1", True, 1.5, None]
    assert coerced_keys("1") == [id_key(1)]
    assert coerced_keys(1) == [id_key("1")]
