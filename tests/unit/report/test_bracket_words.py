"""How the views word a bracket (``report.effective``): each state, when the data cannot place the
effective length, and the lengths that formed the base (issue 31, items 1 and 3)."""

from __future__ import annotations

from typing import Any

import pytest

from rotscope.records.effective import Bracket, LeadCalibration
from rotscope.report.effective import band_text, base_lengths_text, bracket_text, effective_text, is_wide

LENGTHS = (256, 512, 1024)


def _test(length: int) -> dict[str, Any]:
    """A tested length; the words read only its length."""
    return {"length": length, "passes": False, "fails": False, "estimate": None, "lower": None, "upper": None,
            "fail_upper": None, "pairs": 0}  # fmt: skip


def _bracket(state: str, low: int | None, high: int | None) -> Bracket:
    return Bracket.model_validate(
        {
            "state": state,
            "confidence": 0.95,
            "low": {"length": low, "state": "passes" if low else "below-shortest", "confidence": 0.975},
            "high": {"length": high, "state": "fails" if high else "beyond-longest", "confidence": 0.975},
            "method": "",
            "tests": [_test(length) for length in LENGTHS],
            "point_near_threshold": False,
        }
    )


@pytest.mark.parametrize(
    ("state", "low", "high", "words", "wide"),
    [
        ("value", 512, 1024, "95% bracket: 512 to under 1,024 tokens", False),
        ("value", 256, 1024, "95% bracket: 256 to under 1,024 tokens", True),
        ("at-least", 256, None, "95% bracket: 256 to beyond 1,024 tokens", True),
        ("at-least-longest", 1024, None, "95% bracket: at least 1,024 tokens, the longest tested", False),
        ("below", None, 1024, "95% bracket: under 1,024 tokens, not shown to reach 256", True),
        ("below-shortest", None, 256, "95% bracket: under 256 tokens, the shortest tested", False),
        ("cannot-bound", None, None, "95% bracket: cannot bound it between 256 and 1,024 tokens", True),
    ],
)
def test_each_state_in_words(state: str, low: int | None, high: int | None, words: str, wide: bool) -> None:
    bracket = _bracket(state, low, high)
    assert bracket_text(bracket) == words
    assert is_wide(bracket) is wide


def test_no_bracket_for_an_older_summary_and_none_without_data() -> None:
    assert bracket_text(None) == "" and not is_wide(None)
    assert bracket_text(_bracket("no-signal", None, None)) == "no bracket (no signal)"


def test_the_base_lengths_and_why_a_task_has_no_score() -> None:
    assert base_lengths_text([256]) == " at 256"
    assert base_lengths_text([250, 500, 1000]) == " over 250, 500, 1,000"
    assert base_lengths_text([]) == ""
    assert effective_text(None, "no-data", "all-rejected") == "no data: the verifier rejected every prompt"
    assert effective_text(None, "no-data") == "no data"


def test_the_band_is_read_from_the_interval_with_the_point_beside_an_overlap() -> None:
    overlap = {"length": 256, "verdict": "too hard", "band_verdict": "overlaps the band",
               "instance_accuracy": 0.8125, "ci_low": 0.57, "ci_high": 0.93}  # fmt: skip
    assert (
        band_text(LeadCalibration.model_validate(overlap))
        == "overlaps the band (point too hard: accuracy 0.81 [0.57, 0.93]; band 0.90-0.95)"
    )
    below = {**overlap, "band_verdict": "below the band", "ci_high": 0.85}
    assert band_text(LeadCalibration.model_validate(below)).startswith("below the band (accuracy 0.81")
    older = {"length": 256, "verdict": "saturated", "instance_accuracy": 1.0}
    assert band_text(LeadCalibration.model_validate(older)) == "saturated (accuracy 1.00; band 0.90-0.95)"
