"""A depth's label (issue 51): two places where they name it exactly, more where two places would
make two positions of an imported grid print, key and pair alike."""

from __future__ import annotations

from rotscope.position import Position, fraction_label


def test_two_places_where_they_are_exact_and_more_where_they_would_merge_two_depths() -> None:
    assert [fraction_label(value) for value in (0.0, 0.5, 0.25, 1.0)] == ["0.00", "0.50", "0.25", "1.00"]
    assert fraction_label(0.011) != fraction_label(0.014)
    assert (fraction_label(0.011), fraction_label(0.014), fraction_label(0.0137)) == (
        "0.011",
        "0.014",
        "0.0137",
    )
    assert fraction_label(1 / 3) == "0.3333"  # at most four places
    assert fraction_label(None) == "unknown"
    # a sigmoid-spaced 35-depth grid, as the classic needle harness writes it: 35 labels
    grid = [round(1 / (1 + 2.718281828 ** (-(step - 17) / 3)), 3) for step in range(35)]
    assert len({Position(depth).label for depth in set(grid)}) == len(set(grid))
    assert Position.parse("midpoint").label == "midpoint"
