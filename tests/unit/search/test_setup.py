"""A new search's resolved defaults (``execution.workflows.search_setup``): the cap, the cases the task is
asked for, one haystack per instance, and the worst case a dry run prints. No model is called."""

from __future__ import annotations

from typing import Any

import pytest

from rotscope.config.experiment import ExperimentConfig, build_config
from rotscope.errors import BadInput
from rotscope.execution.calls.cost import call_cost
from rotscope.plan import select_cases
from rotscope.search.setup import (
    DEFAULT_CAP,
    MIN_DEFAULT_CAP,
    case_ids,
    prepare_search,
    search_reply_budget,
    settings_of,
    worst_case,
)
from rotscope.tasks.join import MAX_CASES as JOIN_CASES


def experiment(**fields: Any) -> ExperimentConfig:
    search = {"range": [1000, 8000], **fields.pop("search", {})}
    return build_config({"model": "fake/curve-4000", "lengths": [500], "search": search, **fields})


def test_a_generated_family_gets_the_default_cap_and_the_cases_and_haystacks_for_it() -> None:
    prepared = prepare_search(experiment())
    config = prepared.config
    assert config.search is not None and config.search.cap == DEFAULT_CAP
    assert config.cases_per_task >= DEFAULT_CAP
    assert len(case_ids(config, None)) >= DEFAULT_CAP
    assert config.filler.variants == DEFAULT_CAP  # one haystack per instance
    assert prepared.warnings == ()


def test_the_default_cap_is_the_most_a_family_makes_when_that_is_fewer() -> None:
    prepared = prepare_search(experiment(tasks=["join"]))
    assert prepared.config.search is not None
    assert JOIN_CASES < DEFAULT_CAP and prepared.config.search.cap == JOIN_CASES
    assert len(case_ids(prepared.config, JOIN_CASES)) == JOIN_CASES


def test_widening_the_family_keeps_the_cases_a_grid_run_has() -> None:
    grid = [case.case_id for case in select_cases(build_config({"controls": False}))]
    searched = case_ids(prepare_search(experiment(controls=False)).config, None)
    assert len(grid) == 16 and searched[:16] == grid


@pytest.mark.parametrize(
    ("fields", "fragments"),
    [
        ({"tasks": ["nolima"]}, ("nolima has 16 cases", str(MIN_DEFAULT_CAP), "search.cap")),
        ({"limit": 50}, ("niah has 50 cases within limit 50", "search.cap")),
    ],
)
def test_a_default_cap_below_the_minimum_is_refused_naming_why(
    fields: dict[str, Any], fragments: tuple[str, ...]
) -> None:
    with pytest.raises(BadInput) as refused:
        prepare_search(experiment(**fields))
    for fragment in fragments:
        assert fragment in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_cap_the_user_set_is_honoured_with_a_warning_below_the_minimum() -> None:
    prepared = prepare_search(experiment(tasks=["nolima"], search={"cap": 16}))
    assert prepared.config.search is not None and prepared.config.search.cap == 16
    assert len(prepared.warnings) == 1 and "search.cap 16 is below 128" in prepared.warnings[0]
    with pytest.raises(BadInput, match="has 16 cases"):
        prepare_search(experiment(tasks=["nolima"], search={"cap": 17}))
    assert prepare_search(experiment(search={"cap": 200})).warnings == ()


def test_variants_the_user_set_are_kept_with_a_warning() -> None:
    prepared = prepare_search(experiment(filler={"variants": 3}))
    assert prepared.config.filler.variants == 3
    assert any("share 3" in line for line in prepared.warnings)
    assert prepare_search(experiment(filler={"variants": 600})).warnings == ()


def test_the_worst_case_is_every_grid_length_and_the_base_at_the_cap() -> None:
    config = experiment(
        search={"cap": 200}, prices={"fake/curve-4000": {"input": 2.0, "output": 10.0}}, controls=False
    )
    settings = settings_of(prepare_search(config).config)
    worst = worst_case(config, settings, priced=True)
    per_instance = 3  # three depths, one trial, no controls
    assert worst.calls == (len(settings.lengths) + 1) * 200 * per_instance
    tokens = sum(settings.lengths) * 200 * per_instance + 500 * 200 * per_instance
    assert worst.prompt_tokens == tokens
    assert search_reply_budget(config) == 32  # unset: a niah phrase's budget
    assert worst.max_output_tokens == worst.calls * 32
    with_budget = experiment(search={"cap": 200}, controls=False, generation={"max_tokens": 7})
    assert worst_case(with_budget, settings, priced=True).max_output_tokens == worst.calls * 7
    price = config.prices["fake/curve-4000"]
    assert worst.cost == pytest.approx(call_cost(price, tokens, worst.max_output_tokens, 0))
    absolute = experiment(search={"cap": 200, "definition": "absolute-0.5"}, controls=False)
    no_base = worst_case(absolute, settings_of(prepare_search(absolute).config), priced=False)
    assert no_base.calls == len(settings.lengths) * 200 * per_instance and not no_base.base
    assert no_base.cost is None  # no price for the model, and not known to be free
