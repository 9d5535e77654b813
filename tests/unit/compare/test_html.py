"""The comparison's plotly figures: one overlaid trace per model with its interval bars, and the
same against each model's fraction of its window only where windows are known."""

from __future__ import annotations

from typing import Any

from rotscope.compare.html import overlay_figure, window_figure


def _entry(label: str, window: int | None, accuracies: list[float]) -> dict[str, Any]:
    lengths = [
        {"length": length, "fraction_of_window": length / window if window else None, "accuracy": accuracy,
         "ci_low": accuracy / 2, "ci_high": min(1.0, accuracy + 0.1), "instances": 16}
        for length, accuracy in zip((1000, 4000), accuracies, strict=True)
    ]  # fmt: skip
    return {"task": "niah", "label": label, "window": window, "lengths": lengths}


def test_one_trace_per_model_with_its_interval() -> None:
    comparison = {"leaderboard": [_entry("a", None, [1.0, 0.8]), _entry("b", None, [0.9, 0.2])]}
    figure = overlay_figure(comparison, "niah")
    assert [trace.name for trace in figure.data] == ["a", "b"]
    assert list(figure.data[1].y) == [0.9, 0.2]
    assert [round(v, 6) for v in figure.data[1].error_y.arrayminus] == [0.45, 0.1]
    assert window_figure(comparison, "niah") is None  # no window known: no fraction to show


def test_the_window_figure_puts_each_model_at_its_own_fraction() -> None:
    comparison = {"leaderboard": [_entry("small", 8000, [1.0, 0.5]), _entry("big", 128000, [1.0, 1.0])]}
    figure = window_figure(comparison, "niah")
    assert figure is not None
    assert [list(trace.x) for trace in figure.data] == [[0.125, 0.5], [1000 / 128000, 4000 / 128000]]
