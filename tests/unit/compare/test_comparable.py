"""Which runs compare: the first manifest field that differs is named; subjects may differ; runs
without a manifest are compared on their config; an imported run is not checked on a grid."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from rotscope.compare.comparable import check_comparable, common_lengths, first_difference
from rotscope.errors import BadInput

MANIFEST: dict[str, Any] = {
    "manifest_version": 2,
    "grid": {"tasks": ["niah"], "lengths": [200, 400], "positions": ["beginning", "end"], "limit": 16},
    "seeds": {"layout": 0, "generation": 0},
    "cases": {"digest": "aaaa", "count": 16},
    "filler": {"source": "text:corpus/*.txt", "digest": "bbbb"},
    "subject": {"model": "fake/lexical", "template_digest": "t1", "system_prompt_digest": None},
}


def _meta(**changes: Any) -> dict[str, Any]:
    manifest = copy.deepcopy(MANIFEST)
    for dotted, value in changes.items():
        group, key = dotted.split("__")
        manifest[group][key] = value
    return {"manifest": manifest}


def test_subjects_may_differ() -> None:
    other = _meta(
        subject__model="fake/curve-600", subject__template_digest="t2", subject__system_prompt_digest="s"
    )
    assert first_difference(_meta(), other) is None
    check_comparable(["a", "b"], [_meta(), other])


def test_the_first_differing_field_is_named() -> None:
    other = _meta(grid__lengths=[200, 800], seeds__layout=3, filler__digest="cccc")
    assert first_difference(_meta(), other) == ("grid.lengths", [200, 400], [200, 800])
    with pytest.raises(
        BadInput, match=r"^compare: b is not comparable with a: grid\.lengths differs"
    ) as raised:
        check_comparable(["a", "b"], [_meta(), other])
    assert "seeds" not in str(raised.value)
    assert first_difference(_meta(), _meta(seeds__generation=1))[0] == "seeds.generation"  # type: ignore[index]
    assert first_difference(_meta(), _meta(cases__digest="zzzz"))[0] == "cases.digest"  # type: ignore[index]
    assert first_difference(_meta(), _meta(filler__digest="cccc"))[0] == "filler.digest"  # type: ignore[index]


def test_runs_without_a_manifest_compare_on_their_config() -> None:
    left = {"config": {"tasks": ["niah"], "lengths": [200], "depths": [0.5], "seed": 0}}
    right = {"config": {"tasks": ["niah"], "lengths": [200], "depths": [0.5], "seed": 1}}
    assert first_difference(left, right) == ("config.seed", 0, 1)


def test_an_imported_run_is_not_checked_on_a_grid_and_compares_on_common_lengths() -> None:
    assert first_difference(_meta(), {"imported": {"source": "x.csv"}}) is None
    assert common_lengths([[200, 400, 800], [400, 800, 1600], [800, 400]]) == [400, 800]


def test_one_run_is_refused() -> None:
    with pytest.raises(BadInput, match="two or more"):
        check_comparable(["a"], [_meta()])
