"""The canary's probes (``rotscope canary``): the baseline run's own items, planned again for the
subject (rendered with its template and tokenizer and verified as every run's prompts are, by
``plan.workitems.build_plan``), drawn a few per length bin × position bin each check and sent to
the endpoint, each scored as a run scores it and paired with the baseline's score of that item.

What is stored, and the sequential test, are the monitor's (``monitor.canary_store``,
``monitor.sequential``); this module knows nothing of them: it hands each finished probe to a
callback, so the command composes the two rooms without either importing the other.

Bins: a length bin per length of the baseline's plan, or, given a histogram of production's prompt
lengths (``--length-histogram``: an OpenTelemetry explicit-bucket histogram of
``gen_ai.usage.input_tokens``), a bin per bucket holding traffic, each holding the plan's lengths
that fall in it (a bucket with traffic and no planned length is named in a warning; planned lengths
production never sees are not probed); times a position bin per third of the evidence depth
(0.00-0.33, 0.33-0.67, 0.67-1.00). Evidence-absent controls are not probed (they have no
position). The probes of a check are drawn from its number alone (seeded), ``calls // bins`` per
bin, uniformly from the bin's items with replacement: a check taken up again after a kill draws
the same ones. Calls are spread evenly over the bins, not by traffic: a rare bin is watched as
closely as a busy one.
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
import json
import math
import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rotscope.analysis.summary import summary_score
from rotscope.backends import create_backend
from rotscope.config.experiment import ExperimentConfig
from rotscope.config.subjects import resolve_subject, subject_label
from rotscope.errors import BadInput
from rotscope.execution.calls.cost import Budget
from rotscope.execution.calls.execute import Caller
from rotscope.execution.calls.likelihood import likelihood_columns, likelihood_request
from rotscope.execution.calls.limits import Limiters
from rotscope.execution.state.run_folder import planned_rows
from rotscope.plan.workitems import build_plan
from rotscope.rows import Row, ScoreName, on_score, value
from rotscope.scoring.deterministic import score_parts
from rotscope.store import RunStore
from rotscope.types import Backend, WorkItem

POSITION_BINS = 3


def position_bin(depth: float) -> str:
    index = min(int(depth * POSITION_BINS), POSITION_BINS - 1)
    return f"{index / POSITION_BINS:.2f}-{(index + 1) / POSITION_BINS:.2f}"


def bin_name(length: int, depth: float) -> str:
    """``LENGTH/POSITION``: ``1600/0.00-0.33``."""
    return f"{length}/{position_bin(depth)}"


@dataclass(frozen=True)
class LengthHistogram:
    """Production's prompt lengths as explicit buckets: bucket ``i`` holds lengths in
    ``(bounds[i-1], bounds[i]]`` (the first from 0, the last without end), ``counts[i]`` of them."""

    bounds: tuple[float, ...]
    counts: tuple[int, ...]

    def bucket(self, length: int) -> int:
        return bisect.bisect_left(self.bounds, length)

    def name(self, index: int) -> str:
        low = 0 if index == 0 else self.bounds[index - 1]
        high = "inf)" if index == len(self.bounds) else f"{self.bounds[index]:g}]"
        return f"({low:g}, {high}"


def _field(data: dict[str, Any], *names: str) -> Any:
    return next((data[name] for name in names if name in data), None)


def read_length_histogram(path: Path) -> LengthHistogram:
    """A histogram file: a JSON object with the bucket bounds (``explicitBounds``, as OTLP/JSON
    writes a histogram data point, or ``explicit_bounds`` or ``bounds``) and one more count than
    bounds (``bucketCounts``, ``bucket_counts`` or ``counts``; numbers or digit strings)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadInput(f"--length-histogram: {path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BadInput(f"--length-histogram: {path}: not a JSON histogram ({error})") from None
    bounds = _field(data, "explicitBounds", "explicit_bounds", "bounds") if isinstance(data, dict) else None
    counts = _field(data, "bucketCounts", "bucket_counts", "counts") if isinstance(data, dict) else None
    if not isinstance(bounds, list) or not isinstance(counts, list) or len(counts) != len(bounds) + 1:
        raise BadInput(
            f"--length-histogram: {path}: needs explicitBounds (a list) and bucketCounts (one more count)"
        )
    try:
        edges = tuple(float(bound) for bound in bounds)
        numbers = tuple(int(count) for count in counts)
    except (TypeError, ValueError):
        raise BadInput(
            f"--length-histogram: {path}: bounds must be numbers and counts whole numbers"
        ) from None
    if any(b <= a for a, b in itertools.pairwise(edges)) or any(n < 0 for n in numbers):
        raise BadInput(f"--length-histogram: {path}: bounds must increase and counts be at least 0")
    if not any(numbers):
        raise BadInput(f"--length-histogram: {path}: every bucket is empty")
    return LengthHistogram(edges, numbers)


def _key(parts: Sequence[tuple[str, str, int, float, str | None, int]]) -> str:
    """What identifies an item across subjects: its questions' task, case, length, depth, position
    and trial (not the model, the template or the token ids, which the subject may change)."""
    return json.dumps(sorted(parts), separators=(",", ":"))


@dataclass(frozen=True)
class Candidate:
    key: str
    item: WorkItem
    baseline: float
    """The baseline's score of the item: its questions' mean correctness."""


@dataclass(frozen=True)
class Probe:
    slot: int
    bin: str
    candidate: Candidate


@dataclass(frozen=True)
class ProbeResult:
    score: float | None
    """The endpoint's score (mean correctness of the item's questions); ``None`` on a failed call."""
    outcome: str
    response: str | None
    error: str | None


@dataclass
class Canary:
    """A subject's canary against one baseline run, planned and ready to probe."""

    config: ExperimentConfig
    subject: str
    baseline_dir: Path
    baseline_run: str
    backend: Backend
    bins: list[str]
    candidates: dict[str, list[Candidate]]
    calls: int
    score: ScoreName = "accuracy"
    """What a probe and the baseline score: a reply's correctness, or the gold answer's probability."""

    @property
    def per_bin(self) -> int:
        return self.calls // len(self.bins)

    def close(self) -> None:
        self.backend.close()


def _baseline_scores(baseline_dir: Path, score: str | None = None) -> tuple[str, dict[str, float], ScoreName]:
    """The baseline run's id, each finished call's score by its key (its questions' mean ``value``
    on ``score``: ``analysis.summary.summary_score``, the baseline's default where ``None``) and
    the score; a folder that is no run, a run with nothing finished, or one without the score, is
    bad input."""
    with RunStore.read(baseline_dir) as store:
        rows = store.rows()
        run_id = str(store.meta().get("run_id") or (rows[0]["run_id"] if rows else ""))
    chosen = summary_score(rows, score, f"--baseline {baseline_dir}")
    by_call: dict[str, list[Row]] = defaultdict(list)
    for row in on_score(rows, chosen):
        by_call[row["call_id"]].append(row)
    scores: dict[str, float] = {}
    for parts in by_call.values():
        if any(part["status"] != "ok" or part["control"] for part in parts):
            continue
        key = _key(
            [
                (p["task"], p["case_id"], p["length_target"], round(p["depth"], 6), p["position"], p["trial"])
                for p in parts
            ]
        )
        scores[key] = sum(value(part) for part in parts) / len(parts)
    if not scores:
        raise BadInput(f"--baseline: {baseline_dir} has no finished item to probe (run it to its end first)")
    return run_id, scores, chosen


def prepare_canary(
    experiment: ExperimentConfig,
    baseline_dir: Path,
    subject: str | None,
    calls: int,
    notice: Callable[[str], None] | None = None,
    *,
    histogram: LengthHistogram | None = None,
    warn: Callable[[str], None] | None = None,
    score: str | None = None,
) -> Canary:
    """Plan the baseline's items for ``subject`` (a subject name or a model; the experiment's own
    model when ``None``) and match them with the baseline's finished ones, binned by the plan's
    lengths or by ``histogram``'s buckets, on ``score`` (``--score``; the baseline's default)."""
    config = resolve_subject(experiment, subject, "--subject") if subject else experiment
    run_id, scores, chosen = _baseline_scores(baseline_dir, score)
    backend = create_backend(config)
    try:
        if chosen == "likelihood" and not backend.capabilities.likelihood:
            raise BadInput(
                f"--score likelihood: {subject_label(config)} cannot read an answer's likelihood; "
                "watch it with --score accuracy"
            )
        plan = build_plan(config, backend)
        candidates: dict[str, list[Candidate]] = defaultdict(list)
        order: dict[str, tuple[float, float]] = {}
        planned: set[int] = set()
        for item in plan.items:
            parts = planned_rows(item, 0, "", "")
            if any(part["control"] for part in parts):
                continue
            key = _key(
                [
                    (
                        p["task"], p["case_id"], p["length_target"], round(p["depth"], 6),
                        p["position"], p["trial"],
                    )
                    for p in parts
                ]
            )  # fmt: skip
            length = item.layout.length_tokens
            if key not in scores:
                continue
            if histogram is None:
                name = bin_name(length, item.layout.depth)
                order[name] = (length, item.layout.depth)
            else:
                bucket = histogram.bucket(length)
                planned.add(bucket)
                if not histogram.counts[bucket]:
                    continue  # a length production never sends
                name = f"{histogram.name(bucket)}/{position_bin(item.layout.depth)}"
                order[name] = (bucket, item.layout.depth)
            candidates[name].append(Candidate(key, item, scores[key]))
        if not candidates:
            raise BadInput(
                f"--baseline: no item of {baseline_dir} is in this experiment's plan "
                "(the baseline must be a run of the same experiment)"
            )
        if histogram is not None and warn is not None:
            unwatched = [i for i, count in enumerate(histogram.counts) if count and i not in planned]
            if unwatched:
                share = sum(histogram.counts[i] for i in unwatched) / sum(histogram.counts)
                names = ", ".join(histogram.name(i) for i in unwatched)
                warn(
                    f"--length-histogram: no planned length in {names} ({share:.0%} of production's "
                    "prompts): the canary does not watch them; add lengths there to the experiment"
                )
        bins = sorted(candidates, key=lambda name: order[name])
        if calls < len(bins):
            raise BadInput(f"--calls: {calls} is fewer than the {len(bins)} bins (at least one probe each)")
        if notice is not None:
            matched = sum(len(found) for found in candidates.values())
            notice(
                f"canary: {subject_label(config)} against {baseline_dir}: {matched} of its items in "
                f"{len(bins)} bins, {calls // len(bins)} probes per bin per check"
            )
        label = subject_label(config)
        return Canary(config, label, baseline_dir, run_id, backend, bins, dict(candidates), calls, chosen)
    except BaseException:
        backend.close()
        raise


def check_probes(canary: Canary, number: int) -> list[Probe]:
    """The probes of check ``number``: ``per_bin`` per bin, drawn from the number alone."""
    rng = random.Random(f"canary:{canary.baseline_run}:{number}")
    probes: list[Probe] = []
    for name in canary.bins:
        for _ in range(canary.per_bin):
            probes.append(Probe(len(probes), name, rng.choice(canary.candidates[name])))
    return probes


def _result(completion_text: str | None, error: str | None, outcomes: list[str]) -> ProbeResult:
    if error is not None or "error" in outcomes:
        return ProbeResult(None, "error", completion_text, error or "scoring error")
    score = sum(outcome == "correct" for outcome in outcomes) / len(outcomes)
    return ProbeResult(score, "correct" if score == 1 else outcomes[0], completion_text, None)


async def _run(canary: Canary, probes: Sequence[Probe], record: Callable[[Probe, ProbeResult], None]) -> None:
    backend = canary.backend
    limiter = None
    if not backend.capabilities.local:
        limiter = Limiters(canary.config.limits).for_provider(backend.describe().get("backend", ""))
    # no response cache: a canary asks the endpoint as it is now
    caller = Caller(backend, price=None, budget=Budget(None), limiter=limiter)
    concurrency = limiter.limits.concurrency if limiter is not None else 1
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(probe: Probe) -> None:
        item = probe.candidate.item
        async with gate:
            if canary.score == "likelihood":
                record(probe, await _read(caller, item))
                return
            try:
                called = await caller.call(item.request(), item.trial)
            except BadInput:
                raise
            except Exception as failure:  # the endpoint failed: a probe without a score
                result = ProbeResult(None, "error", None, f"{type(failure).__name__}: {failure}"[:500])
            else:
                completion = called.completion if called is not None else None
                if completion is None:
                    result = ProbeResult(None, "error", None, "not sent")
                else:
                    scores = score_parts(item.case, completion, filler=item.prompt.filler_text())
                    result = _result(completion.text, completion.error, [s.outcome for s in scores])
        record(probe, result)

    await asyncio.gather(*(one(probe) for probe in probes))


async def _read(caller: Caller, item: WorkItem) -> ProbeResult:
    """A probe on the likelihood: the gold answer's probability after the item's prompt."""
    request = likelihood_request(item, caller.backend.tokenizer())
    if request is None:
        return ProbeResult(None, "error", None, "no answer to read")
    try:
        found = await caller.read(request)
    except BadInput:
        raise
    except Exception as failure:  # the endpoint failed: a probe without a score
        return ProbeResult(None, "error", None, f"{type(failure).__name__}: {failure}"[:500])
    if found is None:
        return ProbeResult(None, "error", None, "not sent")
    read, _ = found
    logprob = likelihood_columns(read, request.scored_from)["answer_logprob"]
    if logprob is None:
        return ProbeResult(None, "error", None, read.error or "nothing read")
    return ProbeResult(math.exp(logprob), "read", None, None)


def run_probes(canary: Canary, probes: Sequence[Probe], record: Callable[[Probe, ProbeResult], None]) -> None:
    """Send ``probes`` to the endpoint, handing each to ``record`` the moment it is scored."""
    asyncio.run(_run(canary, probes, record))
