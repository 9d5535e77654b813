"""Per task, the longest length a candidate may still claim (``supported_up_to``): a fixed-sequence
scan up the lengths, each holding when every position there passes and the pooled non-inferiority
test over that length's slices passes.

A position passes when its slice is neither FAIL nor INCONCLUSIVE: a slice with too few instances,
or below the floor on its point estimate, has not shown the candidate works there, so it blocks the
claim at its length as a FAIL does (the gate study's rule: no length is claimed that has not passed
at its worst position). Each blocking position is named in the step (``SupportStep.blocked_by``)
and in the task's sentence, with its length, position and reason; the layouts the candidate could not
place at a length are counted in its step (``SupportStep.unplaced``) and named in the sentence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rotscope.config.experiment import GateConfig
from rotscope.gate.judgement import pooled_test
from rotscope.gate.pairing import (
    Slice,
)
from rotscope.gate.record import Blocked, Support, SupportStep
from rotscope.gate.record_checks import Unplaced


def supported_up_to(
    slices: Sequence[Slice], settings: GateConfig, unplaced: Unplaced | None = None
) -> dict[str, Support]:
    """Per task, the longest length L such that at L and every shorter length every position passes
    (no slice FAILs or is INCONCLUSIVE), the candidate placed every layout there (``unplaced``: a
    layout it could not place has not passed) and the pooled non-inferiority test over that length's
    slices passes. Lengths are tested in order from the shortest and the scan stops at the first
    that does not hold (a fixed-sequence procedure: the claim keeps the gate's alpha without
    adjustment). Evidence-only slices (length 0) belong to no length."""
    result: dict[str, Support] = {}
    for task in dict.fromkeys(s.task for s in slices):
        unplaced_here = [
            layout
            for layout in (unplaced.layouts if unplaced is not None else [])
            if layout.unplaced_in == "candidate" and layout.task == task
        ]
        lengths = sorted(
            {s.length for s in slices if s.task == task and s.length > 0}
            | {layout.length for layout in unplaced_here}
        )
        supported: int | None = None
        first: SupportStep | None = None
        steps: list[SupportStep] = []
        for length in lengths:
            here = [s for s in slices if s.task == task and s.length == length]
            pooled = pooled_test(here, settings)
            failing = [s for s in here if s.verdict == "FAIL"]
            undecided = [s for s in here if s.verdict == "INCONCLUSIVE"]
            parts = []
            if failing:
                parts.append("fails at " + ", ".join(_where(s) for s in failing))
            if undecided:
                parts.append(
                    "is blocked by INCONCLUSIVE positions: "
                    + "; ".join(f"{_where(s)} ({s.reason})" for s in undecided)
                )
            missing = [layout for layout in unplaced_here if layout.length == length]
            if missing:
                parts.append(
                    f"has {len(missing)} layout(s) the candidate could not place: "
                    + ", ".join(dict.fromkeys(f"the {layout.position}" for layout in missing))
                )
            if not parts and not pooled.passes:
                lower = "-" if pooled.lower is None else f"{pooled.lower:+.3f}"
                parts.append(f"is not shown within the margin (pooled lower bound {lower})")
            why = "; ".join(parts)
            steps.append(
                SupportStep(
                    length=length,
                    pooled=pooled,
                    holds=not why,
                    why=why,
                    blocked_by=[_blocked(s) for s in failing + undecided],
                    **({"unplaced": len(missing)} if missing else {}),  # a key left out when none
                )
            )
            if first is None:
                if why:
                    first = steps[-1]
                else:
                    supported = length
        if supported is None:
            sentence = "no tested length supported"
        elif first is None:
            sentence = f"supported up to {supported:,} tokens (the longest tested)"
        else:
            sentence = f"supported up to {supported:,} tokens"
        if first is not None:
            sentence += f"; {first.length:,} {first.why}"
        result[task] = Support(
            supported_up_to=supported,
            first_unsupported=None if first is None else first.length,
            sentence=sentence,
            lengths=steps,
        )
    return result


def window_reasons(support: Mapping[str, Support]) -> list[str]:
    """The verdict's lines for each task whose window an INCONCLUSIVE position or a layout the
    candidate could not place cuts short: the length, the position and why (a FAIL is named by the
    tests' own reasons)."""
    lines = []
    for task, entry in support.items():
        step = next((step for step in entry.lengths if not step.holds), None)
        if step is not None and (
            any(blocked.verdict == "INCONCLUSIVE" for blocked in step.blocked_by) or step.unplaced
        ):
            lines.append(f"supported window: {task}: {entry.sentence}")
    return lines


def _blocked(item: Slice) -> Blocked:
    assert item.verdict in ("FAIL", "INCONCLUSIVE")
    return Blocked(position=item.position, fields=dict(item.fields), verdict=item.verdict, reason=item.reason)


def _where(item: Slice) -> str:
    extra = "".join(f" {key}={value}" for key, value in item.fields.items())
    place = item.position if item.position in ("absent",) else f"the {item.position}"
    return f"{place}{extra}"
