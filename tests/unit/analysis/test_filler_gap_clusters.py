"""The static-vs-session gap clusters by the one rule on the static side's shared haystack
variants, and its method names them (issue 48)."""

from __future__ import annotations

from typing import cast

import pytest

from rotscope.analysis.fillers import SESSION, filler_gaps
from rotscope.rows import Row


def _rows(variants: int) -> list[Row]:
    """12 cases at one length and depth: right on static filler; on session filler the even ones."""
    rows = []
    for n in range(12):
        common = {"task": "niah", "case_id": f"c{n:02d}", "instance_id": f"c{n:02d}", "length_target": 512,
                  "position": None, "depth": 0.5, "status": "ok"}  # fmt: skip
        rows.append({**common, "filler": None, "outcome": "correct", "haystack_variant": n % variants})
        rows.append({**common, "filler": SESSION, "outcome": "correct" if n % 2 == 0 else "incorrect",
                     "haystack_variant": None})  # fmt: skip
    return cast(list[Row], rows)


def test_shared_static_haystacks_cluster_the_gap_and_name_it() -> None:
    pooled, _ = filler_gaps(_rows(3))
    assert pooled.gap == pytest.approx(-0.5)
    assert pooled.method == "cluster adjusted t, clustered on 3 haystack variants"
    own, _ = filler_gaps(_rows(12))
    assert own.method == "adjusted t"
    assert own.gap == pytest.approx(-0.5)
