"""Analysis statistics worked out by hand: Wilson vs Clopper-Pearson, instance-level intervals,
paired cluster-bootstrap gaps, calibration, RULER-style effective length, sign test and
Benjamini-Hochberg, and the failure categories of the scorer."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import stats as scipy_stats

from rotscope.rows import instance_means
from rotscope.scoring.deterministic import score
from rotscope.stats.band import calibration
from rotscope.stats.intervals import adjusted_t_interval, proportion_interval
from rotscope.stats.length_scan import absolute_effective_length, effective_length
from rotscope.stats.multiplicity import benjamini_hochberg
from rotscope.stats.paired import MIN_PAIRS, Gap, paired_gap, sign_test
from rotscope.types import Completion, Oracle, Score

Z95 = 1.959963984540054  # two-sided 95% normal quantile
ALPHA = 0.05


# --- proportion_interval: Wilson vs Clopper-Pearson ------------------------------------------


def test_wilson_30_of_30_by_hand() -> None:
    low, high = proportion_interval(30, 30, method="wilson")
    # k = n: lower bound n / (n + z^2) = 30 / (30 + 3.8415) = 30 / 33.8415 = 0.88649.
    assert low == pytest.approx(30 / (30 + Z95**2), abs=1e-9)
    assert low == pytest.approx(0.8865, abs=1e-4)
    assert high == pytest.approx(1.0)


def test_clopper_pearson_30_of_30_by_hand() -> None:
    low, high = proportion_interval(30, 30, method="clopper-pearson")
    # k = n: the exact lower bound solves p^30 = alpha/2, so p = 0.025^(1/30)
    # = exp(ln 0.025 / 30) = exp(-3.68888 / 30) = exp(-0.122963) = 0.88430.
    assert low == pytest.approx(0.025 ** (1 / 30), abs=1e-9)
    assert low == pytest.approx(0.8843, abs=1e-4)
    assert high == 1.0


def test_clopper_pearson_0_of_10_by_hand() -> None:
    low, high = proportion_interval(0, 10, method="clopper-pearson")
    # k = 0: the exact upper bound solves (1 - p)^10 = alpha/2, so p = 1 - 0.025^(1/10)
    # = 1 - exp(-0.368888) = 1 - 0.69150 = 0.30850.
    assert low == 0.0
    assert high == pytest.approx(1 - 0.025 ** (1 / 10), abs=1e-9)
    assert high == pytest.approx(0.3085, abs=1e-4)


def test_clopper_pearson_is_wider_than_wilson_at_the_edge() -> None:
    # 30/30: exact 0.8843 < Wilson 0.8865 (Clopper-Pearson is conservative).
    assert proportion_interval(30, 30, method="clopper-pearson")[0] < proportion_interval(30, 30)[0]
    # 0/10: exact upper 0.3085 > Wilson upper z^2 / (10 + z^2) = 3.8415 / 13.8415 = 0.2775.
    wilson_high = proportion_interval(0, 10)[1]
    assert wilson_high == pytest.approx(Z95**2 / (10 + Z95**2), abs=1e-9)
    assert proportion_interval(0, 10, method="clopper-pearson")[1] > wilson_high


@pytest.mark.parametrize(("k", "n"), [(3, 10), (7, 20), (1, 4)])
def test_clopper_pearson_matches_beta_quantiles(k: int, n: int) -> None:
    # Exact interval: [Beta(a/2; k, n-k+1), Beta(1-a/2; k+1, n-k)] quantiles.
    expected = (
        scipy_stats.beta.ppf(ALPHA / 2, k, n - k + 1),
        scipy_stats.beta.ppf(1 - ALPHA / 2, k + 1, n - k),
    )
    assert proportion_interval(k, n, method="clopper-pearson") == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("method", ["wilson", "clopper-pearson"])
@pytest.mark.parametrize(
    ("k", "n"), [(0, 1), (1, 1), (0, 10), (10, 10), (0.5, 1), (2.5, 3), (29.9, 30), (0, 30), (30, 30)]
)
def test_both_methods_are_bounded(method: Any, k: float, n: float) -> None:
    low, high = proportion_interval(k, n, method=method)
    assert 0.0 <= low <= high <= 1.0
    # The point estimate lies inside (Wilson's upper bound at k = n is 1 up to rounding).
    assert low <= k / n + 1e-12 and k / n <= high + 1e-12
    assert math.isfinite(low) and math.isfinite(high)


@pytest.mark.parametrize("method", ["wilson", "clopper-pearson"])
def test_no_instances_is_uninformative(method: Any) -> None:
    assert proportion_interval(0, 0, method=method) == (0.0, 1.0)


def _rows(instances: int, items: int, correct: int | None = None) -> list[dict[str, Any]]:
    """``items`` scored rows per instance; the first ``correct`` of each are right (all by default)."""
    right = items if correct is None else correct
    return [
        {"instance_id": f"i{i:02d}", "status": "ok", "outcome": "correct" if j < right else "incorrect"}
        for i in range(instances)
        for j in range(items)
    ]


def test_270_of_270_items_over_30_instances_is_judged_on_30() -> None:
    rows = _rows(30, 9)
    assert len(rows) == 270
    means = instance_means(rows)
    assert len(means) == 30 and set(means.values()) == {1.0}
    low, high = proportion_interval(sum(means.values()), len(means))
    # 30 instances: 30 / (30 + z^2) = 0.8865 -> 0.886 ...
    assert round(low, 3) == 0.886
    assert high == pytest.approx(1.0)
    # ... not 270 / (270 + z^2) = 270 / 273.8415 = 0.98597 -> 0.986, what the items would claim.
    naive_low = proportion_interval(270, 270)[0]
    assert naive_low == pytest.approx(270 / (270 + Z95**2), abs=1e-9)
    assert round(naive_low, 3) == 0.986
    assert low < naive_low


def test_instance_means_are_fractional_and_skip_errors() -> None:
    rows = _rows(2, 9, correct=6)  # each instance 6 of 9 right -> 2/3
    rows.append({"instance_id": "i00", "status": "error", "outcome": "error"})
    rows.append({"instance_id": "i02", "status": "pending", "outcome": None})
    means = instance_means(rows)
    assert means == pytest.approx({"i00": 2 / 3, "i01": 2 / 3})
    # k = 2 x 2/3 = 4/3 of 2 instances.
    assert proportion_interval(sum(means.values()), len(means)) == pytest.approx(
        proportion_interval(4 / 3, 2)
    )


# --- paired_gap ------------------------------------------------------------------------------


def test_paired_gap_mean_and_interval_by_hand() -> None:
    short = {"a": 1.0, "b": 1.0, "c": 0.0, "d": 1.0, "e": 1.0}
    long = {"a": 0.0, "b": 1.0, "c": 0.0, "d": 0.5, "e": 1.0}
    gap = paired_gap(short, long)
    # long - short: a -1, b 0, c 0, d -0.5, e 0 -> mean -1.5 / 5 = -0.3.
    assert gap.estimate == pytest.approx(-0.3)
    assert gap.pairs == 5
    assert gap.method == "adjusted t"
    assert not gap.too_few
    # Adjusted t: the 5 differences plus +1 and -1 weighted 1/2 each, 6 in all. Centre -1.5 / 6 =
    # -0.25; squares about it: 0.75^2 + 3 x 0.25^2 + 0.25^2 + (1.25^2 + 0.75^2) / 2 = 1.875;
    # SE = sqrt(1.875 / 5 / 6) = 0.25; t(5, 0.975) = 2.5706 -> -0.25 -/+ 0.64265.
    half = scipy_stats.t.ppf(0.975, 5) * 0.25
    assert gap.low == pytest.approx(-0.25 - half)
    assert gap.high == pytest.approx(-0.25 + half)
    assert gap.low < gap.estimate < gap.high


def test_paired_gap_all_equal_differences_has_positive_width() -> None:
    # A model scoring 0 everywhere: every difference 0, no longer "[0.00, 0.00]".
    zeros = {f"c{i}": 0.0 for i in range(5)}
    gap = paired_gap(zeros, zeros)
    assert gap.estimate == 0.0
    assert gap.low is not None and gap.high is not None
    assert gap.high - gap.low > 0.5
    assert gap.low < 0.0 < gap.high
    # All -1: clipped at -1 below, but still of positive width and containing the estimate.
    drop = paired_gap(dict.fromkeys(zeros, 1.0), zeros)
    assert drop.estimate == -1.0
    assert drop.low == -1.0
    assert drop.high is not None and drop.high > -1.0


def test_paired_gap_symmetric_differences_give_a_symmetric_interval() -> None:
    short = dict.fromkeys("abcdef", 0.5)
    long = {"a": 0.0, "b": 1.0, "c": 0.25, "d": 0.75, "e": 0.5, "f": 0.5}
    gap = paired_gap(short, long)
    assert gap.estimate == pytest.approx(0.0)
    assert gap.low is not None and gap.high is not None
    assert gap.low == pytest.approx(-gap.high)
    assert gap.high > 0.0


def test_paired_gap_below_the_minimum_pairs_is_too_few() -> None:
    assert MIN_PAIRS == 5
    short = {f"c{i}": 1.0 for i in range(MIN_PAIRS - 1)}
    long = {f"c{i}": 0.0 for i in range(MIN_PAIRS - 1)}
    assert paired_gap(short, long) == Gap(-1.0, None, None, 4, "too few pairs", too_few=True)
    assert paired_gap({"x": 0.25}, {"x": 0.75}) == Gap(0.5, None, None, 1, "too few pairs", too_few=True)
    # The threshold can be set by a caller.
    assert not paired_gap(short, long, min_pairs=4).too_few


def test_the_old_four_pair_significant_gap_is_too_few() -> None:
    # The run that printed "+0.25 [0.08, 0.33]": 3 items per instance, differences 0, 1/3, 1/3, 1/3.
    short = dict.fromkeys("abcd", 0.0)
    long = {"a": 0.0, "b": 1 / 3, "c": 1 / 3, "d": 1 / 3}
    gap = paired_gap(short, long)
    assert gap.estimate == pytest.approx(0.25)
    assert gap.too_few and gap.low is None and gap.high is None
    # One more such instance gives an interval, and it includes no drop at all.
    short["e"], long["e"] = 0.0, 1 / 3
    five = paired_gap(short, long)
    assert five.low is not None and five.low < 0.0 < five.estimate


def test_paired_gap_pairs_only_shared_instances() -> None:
    short = {"a": 1.0, "b": 1.0, "c": 0.0, "x": 1.0}
    long = {"b": 0.0, "c": 0.0, "d": 1.0}
    gap = paired_gap(short, long, min_pairs=2)
    # Shared: b (0 - 1 = -1) and c (0 - 0 = 0) -> mean -0.5 on 2 pairs; a, x and d are ignored.
    assert gap.pairs == 2
    assert gap.estimate == pytest.approx(-0.5)


def test_paired_gap_without_shared_instances() -> None:
    assert paired_gap({"a": 1.0}, {"b": 0.0}) == Gap(None, None, None, 0, "none", too_few=True)


def _item_rows(outcomes: dict[str, int], copies: int) -> list[dict[str, Any]]:
    return [
        {"case_id": key, "status": "ok", "outcome": "correct" if value else "incorrect"}
        for key, value in outcomes.items()
        for _ in range(copies)
    ]


def test_cluster_interval_is_wider_than_item_interval_on_duplicated_items() -> None:
    # 20 instances right at the short length; 12 stay right at the long one, 8 turn wrong.
    keys = [f"c{i:02d}" for i in range(20)]
    short_outcomes = dict.fromkeys(keys, 1)
    long_outcomes = {key: int(i < 12) for i, key in enumerate(keys)}
    plain = paired_gap(
        {k: float(v) for k, v in short_outcomes.items()}, {k: float(v) for k, v in long_outcomes.items()}
    )
    # Estimate: 8 of 20 differences are -1 -> -8 / 20 = -0.4.
    assert plain.estimate == pytest.approx(-0.4)
    assert plain.low is not None and plain.high is not None

    # Each instance answered 9 times with identical results: the instance means do not change,
    # so the interval on instances is exactly the same.
    short = instance_means(_item_rows(short_outcomes, 9), "case_id")
    long = instance_means(_item_rows(long_outcomes, 9), "case_id")
    clustered = paired_gap(short, long)
    assert clustered == plain

    # Treating the 180 duplicated item differences as independent shrinks the interval by about
    # sqrt(9) = 3: the false precision pairing on instances avoids.
    differences = np.repeat([long_outcomes[k] - short_outcomes[k] for k in keys], 9).astype(float)
    low, high = adjusted_t_interval(differences)
    assert clustered.low is not None and clustered.high is not None
    assert float(high - low) < 0.6 * (clustered.high - clustered.low)
    assert low <= -0.4 <= high
    assert clustered.low <= -0.4 <= clustered.high


def test_paired_gap_is_deterministic() -> None:
    short = {f"c{i}": (i % 3) / 2 for i in range(12)}
    long = {f"c{i}": ((i * 7) % 5) / 4 for i in range(12)}
    assert paired_gap(short, long) == paired_gap(short, long)


def test_adjusted_t_is_vectorised_like_paired_gap() -> None:
    rows = np.array([[0.0, 1.0, -1.0, 0.5, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0, 0.0]])
    low, high = adjusted_t_interval(rows)
    for row, lo, hi in zip(rows, low, high, strict=True):
        gap = paired_gap({str(i): 0.0 for i in range(6)}, {str(i): v for i, v in enumerate(row)})
        assert (gap.low, gap.high) == (pytest.approx(lo), pytest.approx(hi))


def _clustered_differences(
    rng: np.random.Generator, p_short: float, p_long: float, n: int, items: int, datasets: int
) -> np.ndarray:
    """Beta instance accuracies (ICC 0.25) tied across conditions by a Gaussian copula (0.6)."""
    z = rng.standard_normal((datasets, n, 2))
    z[..., 1] = 0.6 * z[..., 0] + 0.8 * z[..., 1]
    u = scipy_stats.norm.cdf(z)
    short = rng.binomial(items, scipy_stats.beta.ppf(u[..., 0], 3 * p_short, 3 * (1 - p_short)))
    long = rng.binomial(items, scipy_stats.beta.ppf(u[..., 1], 3 * p_long, 3 * (1 - p_long)))
    return np.asarray((long - short) / items, dtype=float)


def test_adjusted_t_covers_in_the_hard_setting() -> None:
    # Where the old bootstrap covered 0.74 (benchmarks/gap_coverage.py): accuracy 0.95 -> 0.85,
    # one item per instance, 10 instances. 400 seeded datasets.
    differences = _clustered_differences(np.random.default_rng(15), 0.95, 0.85, 10, 1, 400)
    low, high = adjusted_t_interval(differences)
    truth = 0.85 - 0.95
    coverage = np.mean((low <= truth + 1e-12) & (truth - 1e-12 <= high))
    assert coverage >= 0.9
    assert np.all(high - low > 0)


# --- calibration ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("point", "verdict"),
    [
        (12 / 12, "saturated"),  # 1.0 > 0.95 (the old rule, Wilson low 0.757 > 0.99, said in band)
        (16 / 16, "saturated"),
        (20 / 21, "saturated"),  # 0.952 > 0.95
        (19 / 20, "in band"),  # 0.95 is not above 0.95
        (15 / 16, "in band"),  # 0.9375
        (9 / 10, "in band"),  # 0.90 is not below 0.90
        (14 / 16, "too hard"),  # 0.875 < 0.90
        (0.0, "too hard"),
        (None, "no data"),
    ],
)
def test_calibration(point: float | None, verdict: str) -> None:
    assert calibration(point) == verdict


# --- effective length with thresholds --------------------------------------------------------

# A RULER-style table (scores by length); threshold 0.856.
RULER_ROW = {4000: 0.962, 8000: 0.940, 16000: 0.889, 32000: 0.856, 64000: 0.812, 128000: 0.870}


def test_absolute_effective_length_on_a_ruler_row() -> None:
    # 4K .962, 8K .940, 16K .889 and 32K .856 (equal: not below) pass; 64K .812 < .856 is the
    # first failure; 128K's .870 recovers but the scan has stopped.
    assert absolute_effective_length(RULER_ROW, 0.856) == 32000


def test_absolute_effective_length_stops_at_first_failure() -> None:
    assert absolute_effective_length({1000: 0.9, 2000: 0.5, 4000: 0.95}, 0.856) == 1000


def test_absolute_effective_length_none_when_shortest_fails_or_empty() -> None:
    assert absolute_effective_length({1000: 0.85, 2000: 0.99}, 0.856) is None
    assert absolute_effective_length({}, 0.856) is None


def test_absolute_effective_length_scans_in_length_order() -> None:
    assert absolute_effective_length({8000: 0.1, 1000: 0.9, 4000: 0.9}, 0.856) == 4000


def test_conservative_effective_length_from_lower_bounds() -> None:
    # 30 instances per length: 30/30, 28/30, 25/30, 20/30.
    counts = {1000: 30, 2000: 28, 4000: 25, 8000: 20}
    points = {length: k / 30 for length, k in counts.items()}
    lows = {length: proportion_interval(k, 30)[0] for length, k in counts.items()}
    # Lower bounds by the Wilson formula: 30/30 -> 30/(30+z^2) = 0.8865; 28/30 -> 0.7868;
    # 25/30 -> 0.6644; 20/30 -> 0.4878.
    for length, k in counts.items():
        p = k / 30
        centre = (p + Z95**2 / 60) / (1 + Z95**2 / 30)
        half = Z95 / (1 + Z95**2 / 30) * math.sqrt(p * (1 - p) / 30 + Z95**2 / 3600)
        assert lows[length] == pytest.approx(centre - half, abs=1e-9)
    assert lows[2000] == pytest.approx(0.7868, abs=1e-4)

    # RULER threshold 0.856 on points: 1.0, 0.933 pass, 0.833 fails -> 2000.
    assert absolute_effective_length(points, 0.856) == 2000
    # On lower bounds: 0.8865 passes, 0.7868 fails -> 1000.
    assert absolute_effective_length(lows, 0.856) == 1000

    # NoLiMa with base 1.0 (the 1K point): threshold 0.85 -> points give 2000 (0.833 < 0.85);
    # lower bounds 0.8865 passes, 0.7868 < 0.85 fails -> 1000.
    assert effective_length(points, base=1.0) == 2000
    assert effective_length(lows, base=1.0) == 1000


# --- sign test and Benjamini-Hochberg --------------------------------------------------------


def test_sign_test_five_positive() -> None:
    # Two-sided exact binomial, 5 of 5: 2 x 0.5^5 = 0.0625.
    assert sign_test([1, 1, 1, 1, 1]) == pytest.approx(0.0625)
    assert sign_test([-0.5] * 5) == pytest.approx(0.0625)


def test_sign_test_drops_zeros() -> None:
    # The two zeros are dropped: still 5 positive of 5 -> 0.0625, not a test on 7.
    assert sign_test([0.2, 1, 0, 0.5, 0, 1, 0.1]) == pytest.approx(0.0625)


def test_sign_test_all_zeros_is_one() -> None:
    assert sign_test([0, 0, 0]) == 1.0
    assert sign_test([]) == 1.0


def test_sign_test_by_hand_six_of_eight() -> None:
    # 6 positive, 2 negative: P(X <= 2) for Bin(8, 1/2) = (1 + 8 + 28) / 256 = 37 / 256;
    # two-sided: 74 / 256 = 0.2890625.
    assert sign_test([1, 1, 1, 1, 1, 1, -1, -1]) == pytest.approx(74 / 256)
    # A balanced sample: 1 vs 1 -> p = 1.
    assert sign_test([1, -1]) == pytest.approx(1.0)


def test_sign_test_sixteen_of_sixteen() -> None:
    # 2 x 0.5^16 = 2^-15 = 3.0518e-5.
    assert sign_test([-1.0] * 16) == pytest.approx(2**-15)


def test_benjamini_hochberg_by_hand() -> None:
    reject, adjusted = benjamini_hochberg([0.01, 0.04, 0.03, 0.5])
    # Sorted 0.01, 0.03, 0.04, 0.5; p x m / rank: 0.04, 0.06, 0.05333, 0.5; running minimum from
    # the top: 0.5, 0.05333, min(0.06, 0.05333) = 0.05333, 0.04. Back in input order:
    assert adjusted == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.5])
    # Only 0.04 <= 0.05.
    assert reject == [True, False, False, False]


def test_benjamini_hochberg_is_not_holm_or_sidak() -> None:
    _, adjusted = benjamini_hochberg([0.01, 0.04, 0.03, 0.5])
    # Holm would give 0.03 x 3 = 0.09 for the second smallest; Holm-Sidak 1 - 0.97^3 = 0.0873;
    # Sidak on the smallest 1 - 0.99^4 = 0.0394.
    assert adjusted[2] != pytest.approx(0.09)
    assert adjusted[2] != pytest.approx(1 - 0.97**3)
    assert adjusted[0] != pytest.approx(1 - 0.99**4)


def test_benjamini_hochberg_rejects_more_than_holm() -> None:
    reject, adjusted = benjamini_hochberg([0.01, 0.02, 0.03, 0.04])
    # p x 4 / rank = 0.04 for every rank -> all adjusted 0.04, all rejected
    # (Holm would stop after the first: 0.02 x 3 = 0.06 > 0.05).
    assert adjusted == pytest.approx([0.04] * 4)
    assert reject == [True] * 4


def test_benjamini_hochberg_empty() -> None:
    assert benjamini_hochberg([]) == ([], [])


# --- failure categories of the scorer ---------------------------------------------------------


# Decoys are traps of category "decoy": a wrong answer naming one is scored as such.
ORACLE = Oracle(answer="4817", aliases=("4,817",), traps=(("decoy", "4871"), ("decoy", "Kestra")))
CONTEXT = "Line one.\nThe old code for the Vellmoor annex was 9132.\nvalve 3 checked.\n"


def test_decoy_category() -> None:
    assert score(ORACLE, Completion(text="The code is 4871.")) == Score("incorrect", "decoy")
    # The decoy wins even when the reply is also copied from the context.
    assert score(ORACLE, Completion(text="4871"), filler="x 4871 y") == Score("incorrect", "decoy")


def test_context_value_category() -> None:
    # "9132" appears as a whole word in the context: a value copied from the filler.
    assert score(ORACLE, Completion(text="9132"), filler=CONTEXT) == Score("incorrect", "context_value")
    # Only the first line of a reply is compared; normalisation drops the final full stop.
    reply = Completion(text="valve 3 checked.\nbecause it says so")
    assert score(ORACLE, reply, filler=CONTEXT) == Score("incorrect", "context_value")


def test_wrong_answer_category() -> None:
    assert score(ORACLE, Completion(text="9132")) == Score("incorrect", "wrong_answer")  # no context
    assert score(ORACLE, Completion(text="5555"), filler=CONTEXT) == Score("incorrect", "wrong_answer")
    # Part of a word in the context is not a copied value: "913" is not a whole word there.
    assert score(ORACLE, Completion(text="913"), filler=CONTEXT) == Score("incorrect", "wrong_answer")


def test_right_answer_is_never_categorised() -> None:
    assert score(ORACLE, Completion(text="4,817"), filler=CONTEXT) == Score("correct")
