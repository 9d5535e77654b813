from __future__ import annotations

import json
import math

import pytest

from rotscope._util.json_out import json_text, non_finite_key, record_text
from rotscope.errors import BadInput


def test_non_finite_numbers_become_null_at_any_depth() -> None:
    value = {"a": [1.0, math.inf, {"b": -math.inf, "c": (math.nan, 2)}], "d": "Infinity"}
    text = json_text(value, indent=2)
    assert json.loads(text) == {"a": [1.0, None, {"b": None, "c": [None, 2]}], "d": "Infinity"}


def test_a_record_names_the_key_of_its_first_non_finite_number() -> None:
    assert non_finite_key({"rows": [{"x": 1.0}, {"x": math.nan}]}) == "rows.1.x"
    with pytest.raises(BadInput, match=r"comparison: leaderboard\.0\.cost_usd is not a finite number"):
        record_text({"leaderboard": [{"cost_usd": math.inf}]}, "comparison")
    assert json.loads(record_text({"x": [1.5]}, "comparison")) == {"x": [1.5]}
