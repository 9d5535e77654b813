"""The release gate: pairing a baseline with a candidate, and the verdict."""

from rotscope.gate.pairing import (
    EVIDENCE_ONLY,
    RunData,
    Slice,
    build_slices,
    check_against_plan,
    check_pairable,
    load_run,
)
from rotscope.gate.verdict import (
    CLAIM_FIELDS,
    EXIT_CODES,
    Verdict,
    analysis_settings,
    binding,
    claim_counts,
    compare,
    evaluate,
    judge_slices,
    overall_verdict,
    worst_positions,
)

__all__ = [
    "CLAIM_FIELDS",
    "EVIDENCE_ONLY",
    "EXIT_CODES",
    "RunData",
    "Slice",
    "Verdict",
    "analysis_settings",
    "binding",
    "build_slices",
    "check_against_plan",
    "check_pairable",
    "claim_counts",
    "compare",
    "evaluate",
    "judge_slices",
    "load_run",
    "overall_verdict",
    "worst_positions",
]
