"""Per task, the longest length a candidate may still claim (``supported_up_to``): a fixed-sequence
scan up the lengths, each holding when its slices have their minimum counts, none FAILs and the
pooled non-inferiority test over them passes."""

from __future__ import annotations

from collections.abc import Sequence

from rotscope.config.experiment import GateConfig
from rotscope.gate.judgement import pooled_test
from rotscope.gate.pairing import (
    Slice,
)
from rotscope.gate.record import Support, SupportStep


def supported_up_to(slices: Sequence[Slice], settings: GateConfig) -> dict[str, Support]:
    """Per task, the longest length L such that at L and every shorter length every slice has its
    minimum counts, no slice FAILs and the pooled non-inferiority test over that length's slices
    passes. Lengths are tested in order from the shortest and the scan stops at the first that
    does not hold (a fixed-sequence procedure: the claim keeps the gate's alpha without
    adjustment). Evidence-only slices (length 0) belong to no length."""
    result: dict[str, Support] = {}
    for task in dict.fromkeys(s.task for s in slices):
        lengths = sorted({s.length for s in slices if s.task == task and s.length > 0})
        supported: int | None = None
        first: SupportStep | None = None
        steps: list[SupportStep] = []
        for length in lengths:
            here = [s for s in slices if s.task == task and s.length == length]
            pooled = pooled_test(here, settings)
            failing = [s for s in here if s.verdict == "FAIL"]
            small = [s for s in here if s.verdict == "INCONCLUSIVE" and "fewer than" in s.reason]
            if failing:
                why = "fails at " + ", ".join(_where(s) for s in failing)
            elif small:
                why = "has too few instances at " + ", ".join(_where(s) for s in small)
            elif not pooled.passes:
                lower = "-" if pooled.lower is None else f"{pooled.lower:+.3f}"
                why = f"is not shown within the margin (pooled lower bound {lower})"
            else:
                why = ""
            steps.append(SupportStep(length=length, pooled=pooled, holds=not why, why=why))
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


def _where(item: Slice) -> str:
    extra = "".join(f" {key}={value}" for key, value in item.fields.items())
    place = item.position if item.position in ("absent",) else f"the {item.position}"
    return f"{place}{extra}"
