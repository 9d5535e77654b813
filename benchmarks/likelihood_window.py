"""A run's two scores side by side, length by length (issue 49). Run by hand:

    python benchmarks/likelihood_window.py RUN_DIR

``RUN_DIR`` is a run that kept both scores (``benchmarks/likelihood_window.yaml``, or the quick
grid run with ``--score both``). Prints, per length, accuracy and the gold answer's mean probability
on the same instances, each with its interval; the answer's probability in the evidence-absent
controls; each score's effective length with its 95% bracket (the summary's own analysis, on
``load_summary(run, score=...)``); and the two scores' agreement (the summary's ``agreement``). The
numbers are written up in benchmarks/results/likelihood_window.md.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from rotscope.analysis.summary import load_summary
from rotscope.records.effective import EffectiveLength
from rotscope.store import RunStore


def _bracket(effective: EffectiveLength) -> str:
    bracket = effective.bracket
    if bracket is None:
        return f"{effective.value} (no bracket)"
    low = bracket.low.length if bracket.low.length is not None else "below the shortest"
    high = bracket.high.length if bracket.high.length is not None else "beyond the longest"
    return f"{effective.value} (95% bracket {low} to {high}: {bracket.state})"


def main(run_dir: Path) -> None:
    accuracy, likelihood = (load_summary(run_dir, score=score) for score in ("accuracy", "likelihood"))
    with RunStore.read(run_dir) as store:
        rows = store.rows()
    absent: dict[int, list[float]] = {}
    for row in rows:
        if row["control"] and row["answer_logprob"] is not None:
            absent.setdefault(row["length_target"], []).append(row["answer_logprob"])
    for agreement in accuracy.agreement or []:
        print(f"## {agreement.task}")
        print()
        print(
            "| length | instances | accuracy [95%] | answer probability [95%] | without the evidence (max) |"
        )
        print("|---|---|---|---|---|")
        for length in agreement.lengths:
            control = absent.get(length.length)
            worst = f"{math.exp(max(control)):.1e}" if control else "no control"
            print(
                f"| {length.length:,} | {length.instances} | {length.accuracy:.2f} "
                f"[{length.accuracy_ci[0]:.2f}, {length.accuracy_ci[1]:.2f}] | {length.likelihood:.2f} "
                f"[{length.likelihood_ci[0]:.2f}, {length.likelihood_ci[1]:.2f}] | {worst} |"
            )
        print()
        spearman = "none" if agreement.spearman is None else f"{agreement.spearman:+.2f}"
        print(
            f"rank correlation of cell accuracy and cell probability {spearman} "
            f"over {agreement.cells} cells; "
            f"wrong replies with p >= {agreement.high}: {agreement.likely_but_wrong.n} "
            f"{dict(agreement.likely_but_wrong.categories)}; right replies with p < {agreement.low}: "
            f"{agreement.right_but_unlikely.n}"
        )
        print()
    for name, summary in (("accuracy", accuracy), ("likelihood", likelihood)):
        for task in summary.tasks:
            print(f"effective length on {name} ({task.task}): {_bracket(task.effective_length)}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(Path(sys.argv[1]))
