"""``subject_rounds``: N subjects' groups in seeded rounds."""

from __future__ import annotations

import itertools

from rotscope.plan.schedule import subject_rounds


def test_every_round_holds_every_subject_once_and_every_group_comes_once() -> None:
    order = subject_rounds([5, 5, 5], seed=7)
    assert sorted(order) == sorted(itertools.product(range(3), range(5)))
    for number in range(5):
        assert sorted(order[3 * number : 3 * number + 3]) == [(s, number) for s in range(3)]


def test_the_order_within_rounds_is_seeded_and_varies() -> None:
    assert subject_rounds([6, 6, 6], seed=1) == subject_rounds([6, 6, 6], seed=1)
    firsts = {subject_rounds([6, 6, 6], seed=seed)[0][0] for seed in range(20)}
    assert firsts == {0, 1, 2}  # no subject always goes first
    rounds = [tuple(s for s, _ in subject_rounds([6, 6, 6], seed=3)[i : i + 3]) for i in range(0, 18, 3)]
    assert len(set(rounds)) > 1


def test_groups_one_subject_has_more_of_follow_in_order() -> None:
    order = subject_rounds([1, 4, 2], seed=0)
    assert order[-2:] == [(1, 2), (1, 3)]
    assert len(order) == 7
    assert subject_rounds([], seed=0) == []
