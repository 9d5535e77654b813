"""The release gate: pairing a baseline with a candidate, and the verdict."""

from rotscope.gate.judgement import EXIT_CODES, judge_slices, overall_verdict
from rotscope.gate.pairing import (
    EVIDENCE_ONLY,
    RunData,
    Slice,
    build_slices,
    check_against_plan,
    check_pairable,
    load_run,
)
from rotscope.gate.record import GateRecord, Verdict
from rotscope.gate.run_record import CLAIM_FIELDS, binding, claim_counts, worst_positions
from rotscope.gate.verdict import analysis_settings, compare, evaluate

__all__ = [
    "CLAIM_FIELDS",
    "EVIDENCE_ONLY",
    "EXIT_CODES",
    "GateRecord",
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
