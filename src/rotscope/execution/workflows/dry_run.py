"""Planning without running: a frozen manifest, and the dry run's counts, cost and a local
engine's time and memory."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from rotscope import registry
from rotscope.backends import create_backend
from rotscope.config.experiment import ExperimentConfig, ProviderLimits
from rotscope.execution.calls.cachecheck import require_clearable
from rotscope.execution.calls.cost import CostEstimate, estimate_plan
from rotscope.execution.calls.likelihood import run_score
from rotscope.execution.calls.response_cache import ResponseCache, default_cache_path
from rotscope.execution.workflows.planned import check_plan, refuse_no_case
from rotscope.execution.workflows.self_session import self_written
from rotscope.plan.manifest import Deviation, build_manifest, write_manifest
from rotscope.plan.session_prompts import stand_in
from rotscope.plan.workitems import Plan, build_plan
from rotscope.types import Backend, Manifest


def planned_manifest(config: ExperimentConfig) -> tuple[Manifest, Plan]:
    """Plan ``config`` without calling a model: its manifest and the plan it describes."""
    backend = create_backend(config)
    try:
        if config.cache_control:
            require_clearable(backend)
        plan = build_plan(config, backend)
        refuse_no_case(plan, config)
        manifest = build_manifest(config, plan, backend)
    finally:
        backend.close()
    return manifest, plan


def freeze_plan(config: ExperimentConfig, output: Path) -> tuple[Manifest, str]:
    """Plan ``config`` without calling a model and write its manifest to ``output``."""
    manifest, _ = planned_manifest(config)
    return manifest, write_manifest(manifest, output)


@dataclass(frozen=True)
class LocalEstimate:
    """A local run's model time and the engine worker's peak memory, before it runs."""

    peak_memory_bytes: int
    prefill_tps: float | None = None
    """Measured by ``rotscope doctor`` for this model file on this machine; ``None`` if not."""
    seconds: float | None = None
    """Prefill of the distinct prefixes plus at most each call's ``max_tokens``, at measured speeds."""
    threads: int | None = None
    """The engine threads the run will use (``llamacpp.n_threads``, else doctor's tuned count)."""


@dataclass(frozen=True)
class OverheadCheck:
    """A harness overhead measured on an earlier run's first call, against the model's window."""

    model: str
    tokens: int | None
    """``None``: no run of this command has measured it yet."""
    window: int | None
    """``None``: the window is unknown (``cmd.context_window`` unset)."""
    too_long: tuple[tuple[int, int], ...] = ()
    """(planned length, prompt tokens plus overhead plus the item's ``max_tokens``) of lengths whose
    longest call exceeds it."""


@dataclass(frozen=True)
class TokenCounts:
    """How the dry run's prompt tokens were counted: ``exact`` on the model's own tokenizer, or
    ``approximate`` (an estimate, e.g. the regex estimate of a remote model without a tokenizer)."""

    method: str = "exact"
    tokenizer: str | None = None
    option: str = "remote.tokenizer"
    """The setting that names the model's tokenizer (``remote.tokenizer``, ``cmd.tokenizer``)."""

    @property
    def approximate(self) -> bool:
        return self.method == "approximate"


@dataclass(frozen=True)
class WallTime:
    """A remote run's wall time estimated from its provider's configured rate limits: the calls
    the response cache cannot answer at ``requests_per_minute``, their prompt tokens plus
    ``max_tokens`` each at ``tokens_per_minute``, whichever takes longer. Latency is unknown
    before a call, so it is a lower estimate; ``minutes`` is ``None`` when neither limit is set."""

    provider: str
    limits: ProviderLimits
    calls: int
    charged_tokens: int
    minutes: float | None


def wall_time(provider: str, limits: ProviderLimits, calls: int, charged_tokens: int) -> WallTime:
    bounds = []
    if limits.requests_per_minute:
        bounds.append(calls / limits.requests_per_minute)
    if limits.tokens_per_minute:
        bounds.append(charged_tokens / limits.tokens_per_minute)
    return WallTime(provider, limits, calls, charged_tokens, max(bounds) if bounds else None)


@dataclass(frozen=True)
class DryRun:
    plan: Plan
    estimate: CostEstimate
    judge_model: str | None = None
    local: LocalEstimate | None = None
    overhead: OverheadCheck | None = None
    self_written: bool = False
    """The model writes its session first (``filler.assistant: model``): calls not in ``estimate``."""
    token_counts: TokenCounts = TokenCounts()
    wall_time: WallTime | None = None
    """A remote run's time from its provider's ``limits:``; ``None`` for a local engine."""


def overhead_check(backend: Backend, plan: Plan) -> OverheadCheck | None:
    """For a backend behind a harness that remembers its overhead (``cmd/PATH``): the planned
    lengths with a prompt that, with that overhead and its reply budget, would not fit the window."""
    measured = getattr(backend, "measured_overhead", None)
    if measured is None:
        return None
    tokens: int | None = measured()
    window = backend.describe().get("context_window")
    longest: dict[int, int] = {}
    for item in plan.items:
        length = item.layout.length_tokens
        longest[length] = max(longest.get(length, 0), item.prompt.prompt_tokens + item.params.max_tokens)
    too_long: tuple[tuple[int, int], ...] = ()
    if tokens is not None and window is not None:
        needed = ((length, call + tokens) for length, call in sorted(longest.items()))
        too_long = tuple((length, total) for length, total in needed if total > window)
    return OverheadCheck(backend.model_id, tokens, window, too_long)


def local_estimate(backend: Backend, plan: Plan) -> LocalEstimate | None:
    """Time and memory of a local engine's run, from the speed ``rotscope doctor`` measured."""
    memory = getattr(backend, "peak_memory_bytes", None)
    if memory is None:
        return None
    backend.reserve(plan.max_prompt_tokens, plan.max_reply_tokens)
    speed = backend.measured_speed()  # type: ignore[attr-defined]
    if speed is None:
        return LocalEstimate(memory())
    replies = sum(item.params.max_tokens for item in plan.items)
    seconds = plan.lower_bound / speed.prefill_tps + replies / speed.decode_tps
    return LocalEstimate(memory(), speed.prefill_tps, seconds, speed.threads)


def tokenizer_option(backend: Backend) -> str:
    """The setting that names ``backend``'s tokenizer (``SECTION.tokenizer`` of its options
    section, e.g. ``remote.tokenizer``), for the line that says how to make counts exact."""
    options = getattr(backend, "options", None)
    if not isinstance(options, BaseModel) or "tokenizer" not in type(options).model_fields:
        return "the backend's tokenizer option"
    for section in registry.sections().values():
        if isinstance(options, section.model):
            return f"{section.name}.tokenizer"
    return "the backend's tokenizer option"


def dry_run(
    config: ExperimentConfig,
    frozen_plan: dict[str, Any] | None = None,
    allow_deviation: bool = False,
    intended: Callable[[Deviation], bool] = lambda deviation: False,
) -> DryRun:
    """Plan and verify without calling a model; estimate calls, tokens and cost. With a frozen
    plan, a deviating run is refused here as it would be by ``run_experiment`` (``intended``: the
    deviations a paired subject makes on purpose)."""
    backend = create_backend(config)
    try:
        run_score(config.score, backend)  # a likelihood the backend cannot read: refused here too
        # a session the model writes is planned with the generator's invented notes in its place
        writer = stand_in(config) if self_written(config) else None
        plan = build_plan(config, backend, writer)
        refuse_no_case(plan, config)
        if frozen_plan is not None:
            check_plan(frozen_plan, build_manifest(config, plan, backend), allow_deviation, intended)
        resources = local_estimate(backend, plan)
        overhead = overhead_check(backend, plan)
        description = backend.describe()
        option = tokenizer_option(backend)
    finally:
        backend.close()
    local = backend.capabilities.local
    cache = None
    if not local and config.cache.enabled:
        path = Path(config.cache.path).expanduser() if config.cache.path else default_cache_path()
        cache = ResponseCache(path) if path.is_file() else None
    try:
        judge = config.judge.model if config.judge else None
        estimate = estimate_plan(config, plan, local=local, cache=cache)
        provider = str(description.get("backend", ""))
        counts = TokenCounts(
            str(description.get("token_count", "exact")),
            description.get("tokenizer"),
            option,
        )
        timing = None
        if not local:
            calls = estimate.calls - estimate.cached_calls
            charged = estimate.prompt_tokens_to_call + estimate.max_output_tokens_to_call
            timing = wall_time(provider, config.limits.get(provider, ProviderLimits()), calls, charged)
        return DryRun(plan, estimate, judge, resources, overhead, writer is not None, counts, timing)
    finally:
        if cache is not None:
            cache.close()
