"""Statistics on independent instances: intervals, paired gaps, effective length, position effects.

An instance is the unit that varies independently (a case in a cell; questions that share one
prompt are one instance). Items of one instance are averaged before any interval is computed,
so repeated trials never shrink an interval by themselves.

One module per job: ``intervals`` (a proportion's, a cell's, the paired gap's adjusted t and its
parts), ``length_scan`` (NoLiMa's and RULER's), ``band`` (the control length against the
reference band), ``paired`` (paired gaps, the sign test), ``bracket_ends`` (an effective-length
bracket's ends), ``multiplicity`` (Benjamini-Hochberg, Holm) and ``accuracy_floor`` (the exact
binomial test against a floor). The release gate's tests are built from these pieces, all
vectorised so that a simulation runs the very same code on thousands of datasets.

Every public name is importable from ``rotscope.stats`` itself (the library's API:
``rotscope.stats.wilson``); rotscope's own modules import from the module that defines it.
"""

from __future__ import annotations

from rotscope.stats.accuracy_floor import below_floor_p, floor_upper_bound
from rotscope.stats.band import SATURATED_POINT, TOO_HARD_POINT, BandVerdict, band_verdict, calibration
from rotscope.stats.bracket_ends import (
    BRACKET_CONFIDENCE,
    SIGN_FLIP_FROM,
    SIGN_FLIP_FROM_CONTINUOUS,
    BracketState,
    bracket_indices,
    bracket_state,
    cluster_margin_bounds,
    cluster_score_bounds,
    cluster_totals,
    end_confidence,
    instance_score_bounds,
    margin_bounds,
    score_bounds,
    sign_flip_margin_bounds,
    sign_flip_margin_tests,
    threshold_margins,
    uses_sign_flip,
)
from rotscope.stats.intervals import (
    CELL_PSEUDO_WEIGHT,
    PSEUDO_PAIR_WEIGHT,
    IntervalMethod,
    TParts,
    adjusted_t_interval,
    adjusted_t_parts,
    cluster_t_interval,
    mean_interval,
    proportion_interval,
    wilson,
)
from rotscope.stats.length_scan import (
    BASE_LENGTHS,
    EffectiveState,
    absolute_effective_length,
    base_score,
    choose_base_lengths,
    effective_length,
    scan_effective,
)
from rotscope.stats.multiplicity import benjamini_hochberg, holm, holm_array, step_levels, step_levels_array
from rotscope.stats.paired import MIN_PAIRS, Gap, paired_gap, sign_test

__all__ = [
    "BASE_LENGTHS",
    "BRACKET_CONFIDENCE",
    "CELL_PSEUDO_WEIGHT",
    "MIN_PAIRS",
    "PSEUDO_PAIR_WEIGHT",
    "SATURATED_POINT",
    "SIGN_FLIP_FROM",
    "SIGN_FLIP_FROM_CONTINUOUS",
    "TOO_HARD_POINT",
    "BandVerdict",
    "BracketState",
    "EffectiveState",
    "Gap",
    "IntervalMethod",
    "TParts",
    "absolute_effective_length",
    "adjusted_t_interval",
    "adjusted_t_parts",
    "band_verdict",
    "base_score",
    "below_floor_p",
    "benjamini_hochberg",
    "bracket_indices",
    "bracket_state",
    "calibration",
    "choose_base_lengths",
    "cluster_margin_bounds",
    "cluster_score_bounds",
    "cluster_t_interval",
    "cluster_totals",
    "effective_length",
    "end_confidence",
    "floor_upper_bound",
    "holm",
    "holm_array",
    "instance_score_bounds",
    "margin_bounds",
    "mean_interval",
    "paired_gap",
    "proportion_interval",
    "scan_effective",
    "score_bounds",
    "sign_flip_margin_bounds",
    "sign_flip_margin_tests",
    "sign_test",
    "step_levels",
    "step_levels_array",
    "threshold_margins",
    "uses_sign_flip",
    "wilson",
]
