"""``monitor show --baseline-window`` under simulation with a known truth: production records in
conversations, in time order, with nothing changed (false ALERTs after 2,500-20,000 records
watched) and with a drop of 0.10 in one bin (how many records and conversations until ALERT).
Run by hand (results in ``benchmarks/results/monitor_window.md``):

    python benchmarks/monitor_window.py [--datasets 2000] [--means 5,8,20] [--sds 1,2]
                                        [--watched 20000] [--window 5000] [--today] [--seed 48]

The world (per dataset): conversations one after another in time (the requests of one all
together), sizes geometric with mean ``m`` (5, 8 or 20), each with a conversation effect
``u ~ N(0, sd²)`` on the logit (sd 1 or 2). Each record falls in one of 9 bins (3 lengths × 3
positions, uniformly); its chance of being answered is ``expit(logit 0.85 + b_bin + u)``,
``b`` from -0.5 to 0.5 over the bins. The first conversations, until ``--window`` records, are
the baseline window; the sequence then watches ``--watched`` records more. The drop: from the
first watched conversation on, every answered record of bin 0 (``--everywhere``: of every bin) is
turned unanswered with chance ``0.10 / E[the bin's per-conversation rate]`` (that expectation by
Monte Carlo, 10^6 draws), so that rate (and the record rate) falls by exactly 0.10.

The new rule is run through the tool's own parts: ``monitor.window.reference_low`` (the cluster t
on the window's conversation means, ``stats.cluster_t_from_totals``), ``monitor.sequential``'s
``DropSequence`` (the update ``run_sequences`` applies), ``Margins`` and the alpha split, one
value per conversation, conversations in the order they began. Before the study it checks this
vectorised path against ``monitor.units.group_units`` + ``monitor.window.window_test`` (what
``show --baseline-window`` runs) on a few datasets: the same references and the same crossings.
``--today`` also runs the rule before issue 48 (each record one value, the window's record rate at
its Wilson bound), rebuilt from the same ``DropSequence`` and ``stats.wilson``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit, logit

from rotscope.monitor.sequential import DropSequence, Margins
from rotscope.monitor.units import group_units
from rotscope.monitor.window import reference_low, window_test
from rotscope.stats import wilson

BINS = 9
BASE = float(logit(0.85))
BIN_EFFECT = np.linspace(-0.5, 0.5, BINS)
CHECKPOINTS = (2_500, 5_000, 10_000, 20_000)


@dataclass
class World:
    """``datasets`` simulated streams of ``C`` conversations each (more than enough)."""

    sizes: NDArray[np.int64]  # (datasets, C)
    counts: NDArray[np.int64]  # (datasets, C, bins): records per bin
    answered: NDArray[np.int64]  # (datasets, C, bins)
    window: NDArray[np.int64]  # (datasets,): conversations in the window


def world(
    rng: np.random.Generator,
    datasets: int,
    mean: float,
    sd: float,
    window: int,
    watched: int,
    drop: float,
    everywhere: bool = False,
) -> World:
    total = window + watched
    conversations = int(total / mean * 1.3 + 50)
    sizes = rng.geometric(1.0 / mean, (datasets, conversations))
    while (sizes.sum(axis=1) < total + mean).any():  # never short of records
        sizes = np.concatenate([sizes, rng.geometric(1.0 / mean, (datasets, 100))], axis=1)
    counts = rng.multinomial(sizes, np.full(BINS, 1.0 / BINS))
    effect = rng.normal(0.0, sd, sizes.shape)
    chance = expit(BASE + BIN_EFFECT[None, None, :] + effect[..., None])
    # the window: whole conversations until it holds `window` records
    before = np.cumsum(sizes, axis=1) - sizes
    in_window = before < window
    window_count = in_window.sum(axis=1)
    if drop:
        for b in range(BINS if everywhere else 1):
            rate = float(expit(BASE + BIN_EFFECT[b] + rng.normal(0.0, sd, 1_000_000)).mean())
            lowered = chance[..., b] * (1.0 - drop / rate)
            chance[..., b] = np.where(in_window, chance[..., b], lowered)
    answered = rng.binomial(counts, chance)
    return World(sizes, counts, answered, window_count)


@dataclass
class Outcome:
    """Per dataset the watched records (and conversations) at the first WARN and first ALERT
    (``inf`` when never), and whether the drop's bin was among the bins at the first ALERT."""

    warn_records: NDArray[np.float64]
    alert_records: NDArray[np.float64]
    alert_conversations: NDArray[np.float64]
    named: NDArray[np.bool_]


def references(w: World, alpha: float) -> NDArray[np.float64]:
    """(datasets, bins + 1) the window's reference per bin and pooled, by ``reference_low``."""
    out = np.zeros((w.sizes.shape[0], BINS + 1))
    for d in range(w.sizes.shape[0]):
        k = int(w.window[d])
        counts, answered = w.counts[d, :k], w.answered[d, :k]
        for b in range(BINS):
            seen = counts[:, b] > 0
            out[d, b] = reference_low(answered[seen, b] / counts[seen, b], alpha)
        out[d, BINS] = reference_low(answered.sum(axis=1) / counts.sum(axis=1), alpha)
    return out


def run_units(w: World, margins: Margins, watched: int) -> tuple[Outcome, NDArray[np.float64]]:
    """The new rule, vectorised over datasets: one value per conversation."""
    datasets = w.sizes.shape[0]
    alpha = margins.alpha / (BINS + 1)
    reference = references(w, alpha)
    tested = [margins.warn, margins.fail]
    per_bin = DropSequence((datasets, BINS), alpha / 2, tested)
    pooled = DropSequence((datasets,), alpha / 2, tested)
    rows = np.arange(datasets)
    seen_records = np.zeros(datasets)
    warn_at = np.full(datasets, np.inf)
    alert_at = np.full(datasets, np.inf)
    alert_conv = np.full(datasets, np.inf)
    named = np.zeros(datasets, dtype=bool)
    step = 0
    while True:
        index = w.window + step
        if index.max() >= w.sizes.shape[1]:
            break
        live = seen_records < watched
        if not live.any():
            break
        counts = w.counts[rows, index]
        answered = w.answered[rows, index]
        observed = (counts > 0) & live[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(counts > 0, answered / np.maximum(counts, 1), 0.5)
        per_bin.update((reference[:, :BINS] - share + 1.0) / 2.0, observed)
        whole = answered.sum(axis=1) / counts.sum(axis=1)
        pooled.update((reference[:, BINS] - whole + 1.0) / 2.0, live)
        seen_records = seen_records + np.where(live, w.sizes[rows, index], 0)
        step += 1
        alerted_bins = per_bin.crossed(margins.fail)
        alerted = (alerted_bins.any(axis=1) | pooled.crossed(margins.fail)) & live
        warned = (per_bin.crossed(margins.warn).any(axis=1) | pooled.crossed(margins.warn)) & live
        first = alerted & np.isinf(alert_at)
        named |= first & alerted_bins[:, 0]
        alert_at = np.where(first, seen_records, alert_at)
        alert_conv = np.where(first, step, alert_conv)
        warn_at = np.where(warned & np.isinf(warn_at), seen_records, warn_at)
    return Outcome(warn_at, alert_at, alert_conv, named), reference


def run_records(w: World, margins: Margins, watched: int, rng: np.random.Generator) -> Outcome:
    """The rule before issue 48, rebuilt: every record one value, in a random order within its
    conversation, the window's record rate at its Wilson bound as the reference."""
    datasets = w.sizes.shape[0]
    alpha = margins.alpha / (BINS + 1)
    reference = np.zeros((datasets, BINS + 1))
    for d in range(datasets):
        k = int(w.window[d])
        hits, n = w.answered[d, :k].sum(axis=0), w.counts[d, :k].sum(axis=0)
        for b in range(BINS):
            reference[d, b] = wilson(float(hits[b]), float(n[b]), confidence=1 - alpha)[0]
        reference[d, BINS] = wilson(float(hits.sum()), float(n.sum()), confidence=1 - alpha)[0]
    tested = [margins.warn, margins.fail]
    per_bin = DropSequence((datasets, BINS), alpha / 2, tested)
    pooled = DropSequence((datasets,), alpha / 2, tested)
    rows = np.arange(datasets)
    alert_at = np.full(datasets, np.inf)
    warn_at = np.full(datasets, np.inf)
    # each dataset's watched records as (bin, answered), conversation after conversation
    streams = []
    for d in range(datasets):
        k = int(w.window[d])
        bins_of, hits_of = [], []
        for c in range(k, w.sizes.shape[1]):
            record_bins = np.repeat(np.arange(BINS), w.counts[d, c])
            record_hits = np.concatenate(
                [np.arange(w.counts[d, c, b]) < w.answered[d, c, b] for b in range(BINS)]
            )
            order = rng.permutation(record_bins.size)
            bins_of.append(record_bins[order])
            hits_of.append(record_hits[order])
            if sum(len(x) for x in bins_of) >= watched:
                break
        streams.append((np.concatenate(bins_of)[:watched], np.concatenate(hits_of)[:watched].astype(float)))
    record_bins = np.stack([s[0] for s in streams])
    record_hits = np.stack([s[1] for s in streams])
    for t in range(watched):
        where = record_bins[:, t]
        x = (reference[rows, where] - record_hits[:, t] + 1.0) / 2.0
        values = np.broadcast_to(x[:, None], (datasets, BINS))
        per_bin.update(values, np.arange(BINS)[None, :] == where[:, None])
        pooled.update((reference[:, BINS] - record_hits[:, t] + 1.0) / 2.0)
        if (t + 1) % 250 == 0:
            alerted = per_bin.crossed(margins.fail).any(axis=1) | pooled.crossed(margins.fail)
            warned = per_bin.crossed(margins.warn).any(axis=1) | pooled.crossed(margins.warn)
            alert_at = np.where(alerted & np.isinf(alert_at), t + 1, alert_at)
            warn_at = np.where(warned & np.isinf(warn_at), t + 1, warn_at)
    return Outcome(warn_at, alert_at, np.full(datasets, np.inf), np.zeros(datasets, dtype=bool))


def check_against_the_tool(w: World, margins: Margins, watched: int, datasets: int) -> None:
    """The vectorised path against ``group_units`` + ``window_test`` on the first datasets: each
    conversation's records a second apart, conversations a minute apart, every watched one complete
    (a last record an hour later, of a conversation of its own, is the store's newest)."""
    fast, reference = run_units(
        World(w.sizes[:datasets], w.counts[:datasets], w.answered[:datasets], w.window[:datasets]),
        margins,
        watched,
    )
    for d in range(datasets):
        epochs, clusters, bins, hits = [], [], [], []
        clock = 0.0
        seen = 0
        k = int(w.window[d])
        for c in range(w.sizes.shape[1]):
            if c >= k and seen >= watched:
                break
            seen += int(w.sizes[d, c]) if c >= k else 0
            for b in range(BINS):
                for j in range(int(w.counts[d, c, b])):
                    epochs.append(clock)
                    clock += 1.0
                    clusters.append(f"c{c}")
                    bins.append(b)
                    hits.append(float(j < w.answered[d, c, b]))
            if c == k - 1:
                end = clock + 30.0
            clock += 60.0
        epochs.append(clock + 3600.0)
        clusters.append("last")
        bins.append(0)
        hits.append(1.0)
        units = group_units(np.array(epochs), clusters, 0.0, end)
        valid = units.unit >= 0
        from rotscope.monitor.units import Units

        test = window_test(
            Units(units.unit[valid], units.side[valid], units.order, 0, 0, 0, 0),
            np.array(bins)[valid],
            np.array(hits)[valid],
            BINS,
            margins,
            unit_count=int(units.unit.max()) + 1,
        )
        assert np.allclose(test.reference, reference[d], atol=1e-12), (test.reference, reference[d])
        assert bool(test.alerted.any()) == bool(np.isfinite(fast.alert_records[d])), d
        assert bool(test.warned.any()) == bool(np.isfinite(fast.warn_records[d])), d
    print(f"checked: the vectorised path gives window_test's references and crossings on {datasets} datasets")


def share(hits: int, n: int) -> str:
    p = hits / n
    return f"{p:.3f} (se {np.sqrt(max(p * (1 - p), 1e-12) / n):.3f}; {hits}/{n})"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--datasets", type=int, default=2000)
    parser.add_argument("--means", default="5,8,20")
    parser.add_argument("--sds", default="1,2")
    parser.add_argument("--window", type=int, default=5000)
    parser.add_argument("--watched", type=int, default=20000)
    parser.add_argument("--today", action="store_true", help="also the rule before issue 48")
    parser.add_argument("--today-datasets", type=int, default=500)
    parser.add_argument("--only", choices=["null", "drop", "both"], default="both")
    parser.add_argument("--check", type=int, default=3, help="datasets checked against window_test")
    parser.add_argument("--everywhere", action="store_true", help="the drop in every bin, not one")
    parser.add_argument("--seed", type=int, default=48)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    margins = Margins()
    print(
        f"window {args.window} records, watched up to {args.watched}, {BINS} bins + pooled, margins warn "
        f"{margins.warn} fail {margins.fail}, alpha {margins.alpha}; {args.datasets} datasets per setting"
    )
    checked = False
    for mean in [float(v) for v in args.means.split(",")]:
        for sd in [float(v) for v in args.sds.split(",")]:
            if args.only in ("null", "both"):
                w = world(rng, args.datasets, mean, sd, args.window, args.watched, 0.0)
                if not checked and args.check:
                    check_against_the_tool(w, margins, min(args.watched, 3000), args.check)
                    checked = True
                found, _ = run_units(w, margins, args.watched)
                parts = [
                    f"<= {c}: {share(int((found.alert_records <= c).sum()), args.datasets)}"
                    for c in CHECKPOINTS
                    if c <= args.watched
                ]
                warns = int((found.warn_records <= args.watched).sum())
                print(
                    f"mean {mean:g} sd {sd:g} no drift: false ALERT "
                    + "; ".join(parts)
                    + f"; WARN by the end {warns}"
                )
                if args.today:
                    n = args.today_datasets
                    small = World(w.sizes[:n], w.counts[:n], w.answered[:n], w.window[:n])
                    old = run_records(small, margins, args.watched, rng)
                    parts = [
                        f"<= {c}: {share(int((old.alert_records <= c).sum()), n)}"
                        for c in CHECKPOINTS
                        if c <= args.watched
                    ]
                    print(
                        "  today's rule (each record a value, Wilson reference): false ALERT "
                        + "; ".join(parts)
                    )
            if args.only in ("drop", "both"):
                w = world(rng, args.datasets, mean, sd, args.window, args.watched, 0.10, args.everywhere)
                found, _ = run_units(w, margins, args.watched)
                caught = np.isfinite(found.alert_records)
                records = found.alert_records[caught]
                conv = found.alert_conversations[caught]
                median = (
                    f"median {np.median(records):.0f} records ({np.median(conv):.0f} conversations), "
                    f"90th percentile {np.percentile(records, 90):.0f}"
                    if caught.any()
                    else "-"
                )
                print(
                    f"mean {mean:g} sd {sd:g} drop 0.10 in {'every bin' if args.everywhere else 'bin 0'} "
                    "from the first watched record: ALERTed "
                    f"within {args.watched} in {share(int(caught.sum()), args.datasets)}; {median}; "
                    f"bin 0 named at the first ALERT in {int(found.named[caught].sum())}/{int(caught.sum())}"
                )


if __name__ == "__main__":
    main()
