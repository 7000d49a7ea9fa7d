"""Pairing responses with requests within a session: per POST first, then by id."""

from __future__ import annotations

from mcpsniff.replay.pairing import Pairer


def test_two_clients_with_the_same_id_are_told_apart_by_their_post() -> None:
    pairer = Pairer()
    pairer.opened(5, (10, None), post=10)
    pairer.opened(5, (11, None), post=11)
    # The second POST's answer arrives first: it is still that POST's request.
    assert pairer.answer(5, post=11) == (11, None)
    assert pairer.answer(5, post=10) == (10, None)
    assert pairer.answer(5, post=10) is None


def test_a_null_id_error_answers_the_request_of_its_post() -> None:
    pairer = Pairer()
    pairer.opened(1, (3, None), post=3)
    pairer.opened(2, (4, None), post=4)
    assert pairer.answer(None, post=4) == (4, None)
    # Without a POST a null id answers nothing: no request had a null id.
    assert pairer.answer(None, post=None) is None


def test_without_posts_ids_pair_in_order_and_keep_their_json_type() -> None:
    pairer = Pairer()
    pairer.opened(1, (1, None), post=None)
    pairer.opened("1", (2, None), post=None)
    pairer.opened(1, (3, 0), post=None)
    assert pairer.answer("1", post=None) == (2, None)
    assert pairer.answer(1, post=None) == (1, None)
    assert pairer.answer(1, post=None) == (3, 0)
    assert pairer.answer(1, post=None) is None


def test_an_answer_on_another_stream_falls_back_to_the_id() -> None:
    pairer = Pairer()
    pairer.opened(7, (20, None), post=20)
    assert pairer.answer(7, post=99) == (20, None)
    assert pairer.answer(7, post=20) is None
