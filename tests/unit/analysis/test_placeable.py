"""Whether a design lets the bracket place a length (``analysis.placeable``) and the sentence the
dry run and ``plan`` print where it cannot (``report.placement``; issue 48)."""

from __future__ import annotations

from rotscope.analysis.placeable import Placeable, placed
from rotscope.report.placement import placement_line


def _design(cases: int, variants: int | None) -> dict[str, int | None]:
    return {f"c{i}": i if variants is None else i % variants for i in range(cases)}


def test_a_perfect_model_is_placed_from_fifteen_cases_of_their_own_haystacks() -> None:
    # below 15 clusters the adjusted t's pseudo-pair keeps it from passing (at 15 it just does);
    # from 16 (stats.SIGN_FLIP_FROM) the sign-flip test gives about 1 / 2^16 < 0.025
    assert not placed(_design(14, None), 3, "right")
    assert placed(_design(15, None), 3, "right") and placed(_design(16, None), 3, "right")


def test_a_model_that_loses_everything_past_the_base_fails_from_six_cases() -> None:
    assert not placed(_design(5, None), 3, "lost")
    assert placed(_design(6, None), 3, "lost")


def test_three_shared_haystacks_keep_a_perfect_model_from_passing_at_thirty_cases() -> None:
    assert not placed(_design(30, 3), 3, "right")
    assert placed(_design(30, 3), 3, "lost")
    assert not placed(_design(30, None), 1, "right")  # one length: nothing to place


def test_the_sentence_says_what_it_would_take_and_nothing_where_both_are_placed() -> None:
    small = Placeable("niah", 3, None, 3, False, False, {"right": 12, "lost": 6}, {})
    line = placement_line(small)
    assert line is not None and line.startswith(
        "niah: at this size (3 cases, 3 lengths) the bracket can place a cliff of 0.85× only if it "
        "had more cases"
    )
    assert line.endswith(
        "12 cases per task could place a model right on every item, 6 cases per task could place one "
        "that loses every item past the base length"
    )
    shared = Placeable("niah", 16, 3, 3, False, True, {"right": None}, {"right": 12})
    words = placement_line(shared)
    assert words is not None and "clustered on the 3 haystack variants they share" in words
    assert words.endswith(
        "with a haystack of its own per case (leave filler.variants unset), 12 cases per task could "
        "place a model right on every item"
    )
    assert placement_line(Placeable("niah", 16, None, 3, True, True, {}, {})) is None
