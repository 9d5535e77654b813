"""Accuracy and the answer's likelihood side by side (``records.scores``): per task, both scores
per length over the rows that have both, the rank correlation of the two over the task's cells,
and the rows on which they disagree (a likely answer replied wrong, a right reply to an unlikely
one). The run's verdicts stand on one score (``Summary.score``); this is how a reader sees whether
the other would have said the same."""

from __future__ import annotations

from collections import Counter

import numpy as np

from rotscope.analysis.cells import cell_stats
from rotscope.records.scores import Mismatch, ScoreAgreement, ScoreLength
from rotscope.rows import Row, answer_probability, group_by, on_score, scored

HIGH = 0.5
"""An answer the model gives at least even odds is likely: a wrong reply to it lost a fact the
model still sees."""
LOW = 0.1
"""An answer below this probability is unlikely: a right reply to it did not come from reading it."""
MIN_CELLS = 3
"""The fewest cells a rank correlation is given over."""


def both_scores(rows: list[Row]) -> list[Row]:
    """The scored rows with a reply's outcome and the answer's likelihood."""
    return [
        row for row in scored(rows) if row["outcome"] is not None and row.get("answer_logprob") is not None
    ]


def _ranks(values: list[float]) -> np.ndarray:
    """Ranks from 1, ties given their mean rank."""
    array = np.asarray(values, dtype=float)
    order = np.argsort(array, kind="stable")
    ranks = np.empty(len(array))
    ranks[order] = np.arange(1, len(array) + 1)
    for tied in np.unique(array):
        where = array == tied
        ranks[where] = ranks[where].mean()
    return ranks


def spearman(first: list[float], second: list[float]) -> float | None:
    """The rank correlation of two paired lists; ``None`` with fewer than ``MIN_CELLS`` pairs or where
    either list is constant (no ranking to correlate)."""
    if len(first) < MIN_CELLS or len(set(first)) < 2 or len(set(second)) < 2:
        return None
    a, b = _ranks(first), _ranks(second)
    a, b = a - a.mean(), b - b.mean()
    found = float((a * b).sum() / np.sqrt((a * a).sum() * (b * b).sum()))
    return max(-1.0, min(1.0, round(found, 12)))


def _interval(low: float | None, high: float | None) -> list[float] | None:
    return None if low is None or high is None else [low, high]


def _score_length(length: int, rows: list[Row]) -> ScoreLength:
    accuracy = cell_stats(rows)
    likelihood = cell_stats(on_score(rows, "likelihood"))
    return ScoreLength(
        length=length,
        n=len(rows),
        instances=len({row["instance_id"] for row in rows}),
        accuracy=accuracy.instance_accuracy,
        accuracy_ci=_interval(accuracy.ci_low, accuracy.ci_high),
        likelihood=likelihood.instance_accuracy,
        likelihood_ci=_interval(likelihood.ci_low, likelihood.ci_high),
    )


def _mismatch(rows: list[Row]) -> Mismatch:
    categories = Counter(row["category"] for row in rows if row["category"] and row["outcome"] != "correct")
    return Mismatch(
        n=len(rows),
        categories=dict(sorted(categories.items(), key=lambda item: (-item[1], item[0]))),
        case_ids=sorted({row["case_id"] for row in rows}),
    )


def task_agreement(task: str, probes: list[Row]) -> ScoreAgreement | None:
    """The task's two scores side by side, over its probe rows that have both; ``None`` where none has."""
    rows = both_scores(probes)
    if not rows:
        return None
    cells = group_by(rows, "length_target", "depth", "position", "filler")
    accuracies = [sum(row["outcome"] == "correct" for row in group) / len(group) for group in cells.values()]
    probabilities = [
        sum(answer_probability(row) or 0.0 for row in group) / len(group) for group in cells.values()
    ]
    by_length = group_by(rows, "length_target")
    return ScoreAgreement(
        task=task,
        lengths=[_score_length(length, group) for (length,), group in by_length.items()],
        cells=len(cells),
        spearman=spearman(accuracies, probabilities),
        high=HIGH,
        low=LOW,
        likely_but_wrong=_mismatch(
            [row for row in rows if row["outcome"] != "correct" and (answer_probability(row) or 0.0) >= HIGH]
        ),
        right_but_unlikely=_mismatch(
            [row for row in rows if row["outcome"] == "correct" and (answer_probability(row) or 0.0) < LOW]
        ),
    )


def agreements(probes: list[Row]) -> list[ScoreAgreement]:
    """Each task's ``task_agreement``, by task; empty where the run keeps one score."""
    found = [task_agreement(task, group) for (task,), group in group_by(probes, "task").items()]
    return [entry for entry in found if entry is not None]
