"""A new search's defaults, resolved once before its first step and written into its
``config.yaml`` (a resumed search keeps what it started with):

- ``search.cap`` unset: the most instances a length may get is ``DEFAULT_CAP`` or every case the
  task can make (within the experiment's ``limit``), whichever is smaller, and a generated family
  is asked for that many cases (``cases_per_task``). A default below ``MIN_DEFAULT_CAP`` (a family
  with few cases, such as nolima's 16) is refused: at so few instances a length near the threshold
  is never decided (``benchmarks/search_accuracy.py``). A cap the user set is honoured, with a
  warning when it is below that.
- ``filler.variants`` unset: one haystack variant per instance (``variants`` = the cap). Instances
  that share a haystack share its effect on the score, and the search's confidence sequences take
  instances as independent; clustering on a shared variant would leave a handful of clusters
  (3 by default), too few for any sequence to decide, so each instance gets its own haystack
  instead. A ``variants`` the user set below the cap is kept, with a warning that the bounds then
  speak for those haystacks only.

It also states the most a search could spend, for ``run --search --dry-run``.
"""

from __future__ import annotations

from dataclasses import dataclass

from rotscope.config.experiment import ExperimentConfig, SearchConfig, build_config
from rotscope.errors import BadInput
from rotscope.execution.calls.cost import call_cost, find_price, price_table
from rotscope.execution.workflows.dry_run import DryRun
from rotscope.execution.workflows.dry_run import dry_run as plan_dry_run
from rotscope.execution.workflows.self_session import self_written
from rotscope.plan import longest_reply, select_cases
from rotscope.search.decisions import BASE, SearchSettings, Threshold, log_grid
from rotscope.tasks import TASKS
from rotscope.types import Case

DEFAULT_CAP = 512
"""Instances a length may get when ``search.cap`` is unset (fewer when the task has fewer cases)."""
MIN_DEFAULT_CAP = 128
"""The smallest default cap a search starts with; below it the search is refused (a cap the user
sets is honoured with a warning)."""


@dataclass(frozen=True)
class PreparedSearch:
    config: ExperimentConfig
    """The experiment with ``search.cap``, ``cases_per_task`` and ``filler.variants`` resolved."""
    warnings: tuple[str, ...] = ()


def _search_cases(config: ExperimentConfig) -> list[Case]:
    """The search's cases from the first, without controls."""
    data = config.model_dump(mode="json")
    data.update(case_offset=0, search=None, controls=False, evidence_only=False)
    return [case for case in select_cases(build_config(data, "search")) if not case.control]


def search_reply_budget(config: ExperimentConfig) -> int:
    """The largest reply budget of the search's calls (``plan.longest_reply``)."""
    if config.generation.max_tokens is not None:
        return config.generation.max_tokens
    return longest_reply(_search_cases(config), None)


def case_ids(config: ExperimentConfig, cap: int | None) -> list[str]:
    """The ids of the first ``cap`` cases (within the experiment's ``limit``; every one when
    ``cap`` is ``None``), or bad input when the task has fewer."""
    cases = _search_cases(config)
    if cap is None:
        return [case.case_id for case in cases]
    if len(cases) < cap:
        raise BadInput(
            f"search.cap: {cap} instances per length, but task {config.tasks[0]} has {len(cases)} cases"
            + (f" (within limit {config.limit})" if config.limit is not None else "")
        )
    return [case.case_id for case in cases[:cap]]


def prepare_search(config: ExperimentConfig) -> PreparedSearch:
    """The search's cap, the cases it needs and its haystack variants (see the module docstring)."""
    search = config.search
    if search is None:
        raise BadInput("--search needs a search: section in the experiment file (range: [MIN, MAX] at least)")
    if len(config.tasks) != 1:
        raise BadInput(f"search: searches one task family at a time, got tasks {config.tasks}")
    task = config.tasks[0]
    wanted = search.cap if search.cap is not None else DEFAULT_CAP
    counted = TASKS.get(task).most_cases
    most = counted() if counted is not None else None
    data = config.model_dump(mode="json", exclude_unset=True)
    data["cases_per_task"] = max(config.cases_per_task, wanted if most is None else min(wanted, most))
    widened = build_config(data, "search")
    warnings: list[str] = []
    if search.cap is None:
        available = len(case_ids(widened, None))
        cap = min(DEFAULT_CAP, available)
        if cap < MIN_DEFAULT_CAP:
            within = f" within limit {config.limit}" if config.limit is not None else ""
            raise BadInput(
                f"search.cap: task {task} has {available} cases{within}, fewer than the {MIN_DEFAULT_CAP} "
                "instances per length a search needs to decide lengths near the threshold; search a "
                "family that generates more (niah makes up to 1,000), or set search.cap to run it anyway"
            )
    else:
        cap = search.cap
        case_ids(widened, cap)  # bad input when the task has fewer
        if cap < MIN_DEFAULT_CAP:
            warnings.append(
                f"search.cap {cap} is below {MIN_DEFAULT_CAP}: a length near the threshold will likely "
                "stay undecided, so the search may end UNDECIDED"
            )
    data["search"] = {**search.model_dump(mode="json", exclude_unset=True), "cap": cap}
    filler = dict(data.get("filler") or {})
    if "variants" not in config.filler.model_fields_set:
        filler["variants"] = cap
    elif config.filler.variants is not None and config.filler.variants < cap:
        warnings.append(
            f"filler.variants {config.filler.variants}: the {cap} instances share {config.filler.variants} "
            "haystacks, which the search's bounds take as independent; they speak for these haystacks, "
            "not for the filler source (leave variants unset for one per instance)"
        )
    data["filler"] = filler
    return PreparedSearch(build_config(data, "search"), tuple(warnings))


def settings_of(config: ExperimentConfig) -> SearchSettings:
    """The search's settings from its experiment: the cap as the folder's config states it (a
    folder from before the cap's default: every case the task has, within ``limit``)."""
    assert config.search is not None
    return search_settings(config, config.search, len(case_ids(config, config.search.cap)))


def search_settings(config: ExperimentConfig, search: SearchConfig, cap: int) -> SearchSettings:
    if len(config.tasks) != 1:
        raise BadInput(f"search: searches one task family at a time, got tasks {config.tasks}")
    if self_written(config):
        raise BadInput(
            "search: filler.assistant: model would write a new session in every step; "
            "search on generated or transcript session filler"
        )
    lo, hi = search.range
    base = search.base_length if search.base_length is not None else min(config.lengths)
    per_instance = (
        len(config.parsed_positions()) * config.trials * (1 + config.controls + config.evidence_only)
    )
    return SearchSettings(
        lengths=tuple(log_grid(lo, hi, search.resolution, 2)),
        resolution=search.resolution,
        base_length=base,
        threshold=Threshold.parse(search.definition),
        confidence=search.confidence,
        batch=search.batch,
        cap=cap,
        calls_per_instance=per_instance,
        max_calls=search.max_calls,
        max_tokens=search.max_tokens,
    )


@dataclass(frozen=True)
class WorstCase:
    """The most a search could spend: every grid length and the base (a relative definition) at
    the cap, before any budget stops it."""

    lengths: int
    """Grid lengths it could measure."""
    base: bool
    """Whether it measures the base as well (a relative definition)."""
    cap: int
    calls_per_instance: int
    calls: int
    prompt_tokens: int
    """Estimated as each prompt's length."""
    max_output_tokens: int
    cost: float | None
    """USD at list prices, every prompt token uncached and every reply as long as allowed;
    ``None`` when the model has no price."""


def worst_case(config: ExperimentConfig, settings: SearchSettings, *, priced: bool) -> WorstCase:
    """``priced``: the ordinary dry run could price the model (a local engine is free)."""
    indices = list(range(len(settings.lengths))) + ([BASE] if settings.threshold.relative else [])
    calls = tokens = 0
    for index in indices:
        more_calls, more_tokens = settings.cost(index, settings.cap)
        calls, tokens = calls + more_calls, tokens + more_tokens
    output = calls * search_reply_budget(config)
    price = find_price(config.model, price_table(config), local=priced)
    cost = None if price is None else call_cost(price, tokens, output, 0)
    relative = settings.threshold.relative
    return WorstCase(
        len(settings.lengths),
        relative,
        settings.cap,
        settings.calls_per_instance,
        calls,
        tokens,
        output,
        cost,
    )


@dataclass(frozen=True)
class SearchDryRun:
    """What ``run --search --dry-run`` prints: the worst case, then the ordinary dry run of the
    search's first batch at the base and the range's ends (its prompts built and verified)."""

    worst: WorstCase
    probe: DryRun
    probe_lengths: tuple[int, ...]
    probe_instances: int
    budgets: dict[str, float | int | None]
    warnings: tuple[str, ...]


def search_dry_run(config: ExperimentConfig) -> SearchDryRun:
    """Resolve and check a search, and plan its first batch at the lengths it could reach; no
    model is called and no folder written."""
    prepared = prepare_search(config)
    config = prepared.config
    assert config.search is not None
    resolved = settings_of(config)
    ends = {resolved.lengths[0], resolved.lengths[-1]}
    lengths = sorted(ends | {resolved.base_length} if resolved.threshold.relative else ends)
    instances = min(resolved.batch, resolved.cap)
    data = config.model_dump(mode="json", exclude_unset=True)
    data.update(lengths=lengths, case_offset=0, limit=instances, search=None, out=None)
    probe = plan_dry_run(build_config(data, "search dry run"))
    worst = worst_case(config, resolved, priced=probe.estimate.cost is not None)
    budgets = {
        "max_calls": resolved.max_calls,
        "max_tokens": resolved.max_tokens,
        "max_cost": config.max_cost,
    }
    return SearchDryRun(worst, probe, tuple(lengths), instances, budgets, prepared.warnings)
