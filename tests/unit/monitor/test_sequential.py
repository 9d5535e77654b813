"""The canary's sequential test: no change stays OK, a large drop in one bin ALERTs naming it, a
moderate one WARNs; the alpha split; the false-alarm rate of noisy unchanged runs stays under alpha
however often it is checked (simulated through ``DropSequence``, vectorised)."""

from __future__ import annotations

import numpy as np
import pytest

from rotscope.monitor.sequential import POOLED, DropSequence, Margins, mapped, sequential_test

BINS = ["200/0.00-0.33", "200/0.67-1.00", "800/0.00-0.33", "800/0.67-1.00"]


def _probes(rng: np.random.Generator, rounds: int, drops: dict[str, float]) -> list[tuple[str, float, float]]:
    probes = []
    for _ in range(rounds):
        for name in BINS:
            base = float(rng.random() < 0.95)
            canary = 0.0 if base and rng.random() < drops.get(name, 0.0) / 0.95 else base
            probes.append((name, base, canary))
    return probes


def test_no_change_stays_ok() -> None:
    verdict = sequential_test(_probes(np.random.default_rng(1), 200, {}), BINS)
    assert verdict.status == "OK" and verdict.responsible == ()
    assert all(result.status == "OK" and result.probes > 0 for result in verdict.bins)
    assert verdict.bins[-1].name == POOLED and verdict.bins[-1].probes == 800


def test_big_drop_alerts_naming_its_bin() -> None:
    verdict = sequential_test(_probes(np.random.default_rng(2), 40, {"800/0.00-0.33": 0.6}), BINS)
    assert verdict.status == "ALERT"
    assert "800/0.00-0.33" in verdict.responsible
    assert not set(verdict.responsible) - {"800/0.00-0.33", POOLED}
    dropped = next(result for result in verdict.bins if result.name == "800/0.00-0.33")
    assert dropped.lower > Margins().fail and dropped.canary < dropped.baseline


def test_moderate_drop_warns_below_the_failure_margin() -> None:
    margins = Margins(warn=0.0, fail=0.5)
    verdict = sequential_test(_probes(np.random.default_rng(3), 150, {"200/0.00-0.33": 0.3}), BINS, margins)
    assert verdict.status == "WARN" and "200/0.00-0.33" in verdict.responsible
    assert all(result.status != "ALERT" for result in verdict.bins)


def test_alpha_is_split_over_the_bins_and_the_pooled_sequence() -> None:
    verdict = sequential_test([], BINS, Margins(alpha=0.05))
    assert verdict.alpha_per_bin == pytest.approx(0.05 / 5)
    assert verdict.status == "OK" and all(result.probes == 0 for result in verdict.bins)


def test_unknown_bin_and_bad_margins_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown bin"):
        sequential_test([("nowhere", 1.0, 1.0)], BINS)
    with pytest.raises(ValueError, match="margins"):
        Margins(warn=0.2, fail=0.1)


@pytest.mark.parametrize("bets", ["growth", "plugin"])
def test_unchanged_noisy_runs_alarm_at_most_alpha_checked_after_every_probe(bets: str) -> None:
    """Baseline and canary independent draws of one chance: the drop is 0, and the share of runs
    whose sequence ever rules in a drop above 0 stays within alpha (its Monte Carlo slack)."""
    rng = np.random.default_rng(4)
    runs, probes, alpha = 400, 1500, 0.1
    sequence = DropSequence((runs,), alpha, [0.0], bets=bets)  # type: ignore[arg-type]
    chance = rng.uniform(0.6, 0.95, runs)
    for _ in range(probes):
        sequence.update(mapped(rng.random(runs) < chance, rng.random(runs) < chance))
    assert sequence.crossed(0.0).mean() <= alpha + 0.03


def test_lower_bound_covers_a_known_drop() -> None:
    rng = np.random.default_rng(5)
    runs = 300
    sequence = DropSequence((runs,), 0.05, np.linspace(-1, 1, 201).tolist())
    for _ in range(400):
        base = rng.random(runs) < 0.9
        canary = base & (rng.random(runs) >= 0.2 / 0.9)  # a drop of 0.2 exactly in expectation
        sequence.update(mapped(base, canary))
    lower = sequence.lower_bound()
    assert (lower <= 0.2).mean() >= 0.95  # the bound stays below the truth
    assert np.median(lower) > 0.1  # and is informative


def test_plugin_bets_at_half_alpha_reproduce_confseqs_lower_bound() -> None:
    """The one-sided sequence is confseq's capital that bets upwards: with the same bets and the
    limit of one side of a two-sided level, its lower bound is confseq's, grid point for grid point."""
    from rotscope.search.confseq import _M_GRID, _MS, confidence_sequence

    rng = np.random.default_rng(6)
    for chance in (0.3, 0.8):
        x = (rng.random(200) < chance).astype(float)
        lower, _ = confidence_sequence(list(x), 0.1)
        sequence = DropSequence((), 0.05, list(2 * _MS - 1), bets="plugin")
        for value in x:
            sequence.update(np.array(value))
        assert (float(sequence.lower_bound()) + 1) / 2 - 0.5 / _M_GRID == pytest.approx(lower, abs=1e-9)
