"""The first screen's last lines (issue 53): the headline's bracket in words, the rough size that
would place an open bracket, the next step's folder as typed (no path of the machine), and the
escaping every Markdown view shares."""

from __future__ import annotations

from pathlib import Path

import pytest

from rotscope._util.safe_text import markdown_safe
from rotscope.records.effective import Bracket, BracketEnd, BracketTest
from rotscope.report.first_lines import MOST_CASES, cases_to_place, next_step, shown_folder


def _test(length: int, estimate: float | None, lower: float | None, fail_upper: float | None) -> BracketTest:
    return BracketTest(
        length=length,
        passes=lower is not None and lower > 0,
        fails=fail_upper is not None and fail_upper < 0,
        estimate=estimate,
        lower=lower,
        upper=fail_upper,
        fail_upper=fail_upper,
        pairs=16,
    )


def _bracket(*tests: BracketTest, near: list[int] | None = None) -> Bracket:
    base = BracketTest(
        length=256, passes=True, fails=False, estimate=None, lower=None, upper=None, fail_upper=None,
        pairs=0, by_definition=True,
    )  # fmt: skip
    return Bracket(
        state="at-least",
        confidence=0.95,
        low=BracketEnd(length=256, state="passes", confidence=0.975),
        high=BracketEnd(length=None, state="beyond-longest", confidence=0.975),
        method="sign-flip",
        tests=[base, *tests],
        point_near_threshold=bool(near),
        near_lengths=near,
    )


def test_the_size_keeps_each_open_margin_and_shrinks_its_bound() -> None:
    # the quick run's: 512 at +0.059 with a lower bound -0.067 needs (0.126/0.059)^2 = 4.5x its 16
    bracket = _bracket(_test(512, 0.059375, -0.0666667, 0.15), _test(1024, -0.253125, -0.56, 0.1125))
    assert cases_to_place(bracket, 16) == 73
    # the length that fails needs fewer: (0.366/0.253)^2 = 2.09x
    assert cases_to_place(_bracket(_test(1024, -0.253125, -0.56, 0.1125)), 16) == 34


def test_no_size_where_nothing_is_open_a_margin_is_zero_or_it_is_beyond_reach() -> None:
    assert cases_to_place(_bracket(_test(512, 0.3, 0.1, 0.5)), 16) is None  # 512 passes
    assert cases_to_place(_bracket(_test(512, 0.0, -0.1, 0.1)), 16) is None  # no size decides 0
    assert cases_to_place(_bracket(_test(512, 0.001, -0.2, 0.2)), 16) == MOST_CASES + 1


def test_the_next_step_names_the_folder_as_typed_and_no_path_of_the_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert next_step("runs/quick") == "Next: rotscope report runs/quick (every table and plot)"
    assert next_step("my run") == "Next: rotscope report 'my run' (every table and plot)"
    assert shown_folder(str(tmp_path / "runs" / "a")) == "runs/a"  # inside the working directory
    assert shown_folder("/elsewhere/deep/run") == "…/run"


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("a|b", "a\\|b"),
        ("`x`", "\\`x\\`"),
        ("<script>", "&lt;script&gt;"),
        ("m\x1b[2J", "m\\\\x1b\\[2J"),
        ("one\u2028two", "one two"),
        ("a\rb", "a b"),
    ],
)
def test_markdown_safe_escapes_what_markdown_html_and_a_terminal_act_on(name: str, shown: str) -> None:
    assert markdown_safe(name) == shown
