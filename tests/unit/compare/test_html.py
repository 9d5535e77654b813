"""The comparison's plotly figures: one overlaid trace per model with its interval bars, and the
same against each model's fraction of its window only where windows are known."""

from __future__ import annotations

from rotscope.compare.html import overlay_figure, window_figure
from rotscope.compare.record import Comparison, EffectiveEntry, LeaderboardEntry, LengthEntry


def _entry(label: str, window: int | None, accuracies: list[float]) -> LeaderboardEntry:
    lengths = [
        LengthEntry(length=length, fraction_of_window=length / window if window else None, accuracy=accuracy,
                    ci_low=accuracy / 2, ci_high=min(1.0, accuracy + 0.1), instances=16)
        for length, accuracy in zip((1000, 4000), accuracies, strict=True)
    ]  # fmt: skip
    effective = EffectiveEntry(
        definition=None, value=None, state=None, bracket_low=None, bracket_high=None, bracket_state=None
    )
    return LeaderboardEntry(
        rank=1, task="niah", run=label, label=label, model=None, imported=False, window=window,
        effective_length=effective, base_score=None, worst_position=None, lengths=lengths, prompt_tokens=0,
        completion_tokens=0, cost_usd=0.0, priced=True,
    )  # fmt: skip


def _comparison(*entries: LeaderboardEntry) -> Comparison:
    return Comparison(
        comparison_version=1, runs=[], tasks=["niah"], lengths=[1000, 4000], confidence=0.95, alpha=0.05,
        pair_method="", leaderboard=list(entries), pairs=[], rows=[],
    )  # fmt: skip


def test_one_trace_per_model_with_its_interval() -> None:
    comparison = _comparison(_entry("a", None, [1.0, 0.8]), _entry("b", None, [0.9, 0.2]))
    figure = overlay_figure(comparison, "niah")
    assert [trace.name for trace in figure.data] == ["a", "b"]
    assert list(figure.data[1].y) == [0.9, 0.2]
    assert [round(v, 6) for v in figure.data[1].error_y.arrayminus] == [0.45, 0.1]
    assert window_figure(comparison, "niah") is None  # no window known: no fraction to show


def test_the_window_figure_puts_each_model_at_its_own_fraction() -> None:
    comparison = _comparison(_entry("small", 8000, [1.0, 0.5]), _entry("big", 128000, [1.0, 1.0]))
    figure = window_figure(comparison, "niah")
    assert figure is not None
    assert [list(trace.x) for trace in figure.data] == [[0.125, 0.5], [1000 / 128000, 4000 / 128000]]
