"""How every view names the score its verdicts stand on (``Summary.score``), what the run kept,
and how far accuracy and the answer's likelihood agree (``Summary.agreement``): a likelihood
verdict never replaces an accuracy verdict silently."""

from __future__ import annotations

from rotscope.records.scores import ScoreAgreement, ScoreLength
from rotscope.records.summary import Summary
from rotscope.report.numbers import score as _fmt

LIKELIHOOD = "answer probability"
"""The likelihood score as a column or a line names it: the mean probability the model gave the
gold answer."""


def score_label(score: str) -> str:
    """``accuracy`` or ``answer probability``: what a heat map's or a line's numbers are."""
    return LIKELIHOOD if score == "likelihood" else "accuracy"


def other_label(score: str) -> str:
    """The label of the score a summary does not stand on."""
    return score_label("accuracy" if score == "likelihood" else "likelihood")


def agreement_of(summary: Summary, task: str) -> ScoreAgreement | None:
    """The task's two scores side by side, where the run has both."""
    return next((entry for entry in summary.agreement or [] if entry.task == task), None)


def other_value(line: ScoreLength, score: str) -> tuple[float | None, list[float] | None]:
    """The value and interval of a length under the score the summary does not stand on."""
    if score == "likelihood":
        return line.accuracy, line.accuracy_ci
    return line.likelihood, line.likelihood_ci


def other_text(line: ScoreLength, score: str) -> str:
    """``answer probability 0.74 [0.44, 0.93]`` (or ``accuracy ...`` on a likelihood summary)."""
    value, interval = other_value(line, score)
    shown = "" if interval is None else f" [{_fmt(interval[0])}, {_fmt(interval[1])}]"
    return f"{other_label(score)} {_fmt(value)}{shown}"


def kept_line(summary: Summary) -> str | None:
    """What the run kept and what the verdicts stand on; ``None`` for a run from before (nothing
    kept is recorded) that is on accuracy."""
    kept = summary.kept
    on = f"verdicts on {score_label(summary.score)}"
    if kept == "both" and summary.likelihood_unread:
        return (
            "score kept: accuracy only (a likelihood is read for a prompt of one question with a gold "
            f"answer, and these prompts have none to read); {on}"
        )
    if kept == "both":
        other = _other(summary.score)
        return f"scores kept: accuracy and the answer's likelihood; {on} (--score {other} for the other)"
    if kept == "likelihood":
        return f"score kept: the answer's likelihood only (run --score likelihood, no replies); {on}"
    if kept == "accuracy":
        asked = (summary.config or {}).get("score")
        backend = (summary.backend or {}).get("backend") or "its"
        why = "run --score accuracy" if asked else f"the {backend} backend cannot read an answer's likelihood"
        return f"score kept: accuracy only ({why}); {on}"
    return None if summary.score == "accuracy" else on


def _other(score: str) -> str:
    return "accuracy" if score == "likelihood" else "likelihood"


def agreement_line(entry: ScoreAgreement) -> str:
    """``scores agree: rank correlation 0.83 over 6 cells; 2 wrong replies to a likely answer
    (p >= 0.50: wrong_answer 2), 0 right replies to an unlikely one (p < 0.10)``."""
    rho = "none (under 3 cells, or a flat score)" if entry.spearman is None else f"{entry.spearman:+.2f}"
    wrong = entry.likely_but_wrong
    categories = ", ".join(f"{name} {count}" for name, count in wrong.categories.items())
    named = f": {categories}" if categories else ""
    right = entry.right_but_unlikely
    return (
        f"  accuracy and answer probability: rank correlation {rho} over {entry.cells} cells; "
        f"{wrong.n} wrong replies to a likely answer (p >= {entry.high:.2f}{named}), "
        f"{right.n} right replies to an unlikely one (p < {entry.low:.2f})"
    )


def score_headline(summary: Summary, task: str | None) -> str:
    """The line before the closing sentence: the score its verdict stands on, and the other score
    on the same task where the run has both (its value at the shortest and the longest length,
    and the rank correlation)."""
    on = (
        "Verdicts on accuracy (the replies)"
        if summary.score == "accuracy"
        else "Verdicts on the answer's likelihood (the gold answer's mean probability), not on replies"
    )
    entry = agreement_of(summary, task) if task else None
    if entry is None or not entry.lengths:
        return f"{on}."
    ends = [entry.lengths[0], entry.lengths[-1]] if len(entry.lengths) > 1 else entry.lengths[:1]
    values = ", ".join(f"{_fmt(other_value(line, summary.score)[0])} at {line.length:,}" for line in ends)
    rho = (
        "" if entry.spearman is None else f", rank correlation {entry.spearman:+.2f} over {entry.cells} cells"
    )
    return f"{on}; {other_label(summary.score)} on {task}: {values} tokens{rho}."
