"""The frozen plan's comparison (``rotscope.plan.manifest``): paths read by the digest that covers
their file's content whatever component's prefix stands before them, and a plan frozen before the
slice counts compared without them; the reply budgets a plan was frozen with."""

from __future__ import annotations

from rotscope.backends import create_backend
from rotscope.config.experiment import build_config
from rotscope.plan.manifest import build_manifest, by_content, deviations, with_frozen_defaults
from rotscope.plan.workitems import build_plan


def test_an_absolute_path_after_any_component_prefix_reads_as_its_digest() -> None:
    assert by_content("/models/a.gguf", "subject.model_digest") == "<content: subject.model_digest>"
    assert by_content("llamacpp//models/a.gguf", "d") == "llamacpp/<content: d>"
    assert by_content("acme-engine//srv/m.bin", "d") == "acme-engine/<content: d>"
    assert by_content("text:/docs/*.md", "filler.digest") == "text:<content: filler.digest>"
    assert by_content("lorem.v2:/corpus", "d") == "lorem.v2:<content: d>"


def test_a_name_that_is_no_absolute_path_is_compared_as_it_is() -> None:
    for value in ("openai/gpt-4o-mini", "hf/bundled", "bundled", "text:docs/*.md", "cmd/agent", 3, None):
        assert by_content(value, "d") == value


def test_moved_files_do_not_deviate_but_changed_content_does() -> None:
    planned = {"subject": {"model": "llamacpp//a/m.gguf", "model_digest": "x"}}
    moved = {"subject": {"model": "llamacpp//b/m.gguf", "model_digest": "x"}}
    changed = {"subject": {"model": "llamacpp//b/m.gguf", "model_digest": "y"}}
    assert deviations(planned, moved) == []
    assert [found.field for found in deviations(planned, changed)] == ["subject.model_digest"]


def test_a_plan_frozen_before_the_cluster_counts_is_compared_without_them() -> None:
    old = {"planned": {"work_items": 4, "slices": 2}}
    today = {"planned": {"work_items": 4, "slices": 3, "instances_per_slice": 1, "clusters": 2}}
    assert deviations(old, today) == []
    assert [found.field for found in deviations(old, {"planned": {"work_items": 5}})] == [
        "planned.work_items"
    ]
    newer = {"planned": {**today["planned"], "clusters": 3}}
    assert [found.field for found in deviations(today, newer)] == ["planned.clusters"]


def test_a_config_without_variants_takes_the_frozen_plans_and_one_that_sets_them_keeps_its_own() -> None:
    """Issue 48: the default became one haystack per case; a plan frozen when it was 3 keeps 3."""
    unset = build_config({"model": "fake/lexical"})
    old = {"config": {"filler": {"kind": "code", "variants": 3}}}
    assert unset.filler.variants is None
    assert with_frozen_defaults(unset, old).filler.variants == 3
    assert with_frozen_defaults(unset, {"config": {"filler": {"kind": "code"}}}).filler.variants == 1
    assert with_frozen_defaults(unset, {"config": {"filler": {"variants": None}}}).filler.variants is None
    assert with_frozen_defaults(unset, None) is unset
    chosen = build_config({"model": "fake/lexical", "filler": {"variants": 5}})
    assert with_frozen_defaults(chosen, old).filler.variants == 5


def test_a_config_without_a_budget_under_a_plan_of_one_budget_takes_it() -> None:
    """Issue 53: budgets per answer kind; a plan whose decoding names no ``reply_budgets`` sent
    every item the old default, so a run under it sends that too."""
    unset = build_config({"model": "fake/lexical"})
    assert unset.generation.max_tokens is None
    old = {"decoding": {"temperature": 0.0, "max_tokens": 32}}
    assert with_frozen_defaults(unset, old).generation.max_tokens == 32
    sized = {"decoding": {"temperature": 0.0, "max_tokens": 256, "reply_budgets": {"number": 256}}}
    assert with_frozen_defaults(unset, sized).generation.max_tokens is None  # frozen per kind
    other = {"decoding": {"temperature": 0.0, "max_tokens": 64}}  # a budget the plan was given
    assert with_frozen_defaults(unset, other).generation.max_tokens is None  # so it deviates
    chosen = build_config({"model": "fake/lexical", "generation": {"max_tokens": 24}})
    assert with_frozen_defaults(chosen, old).generation.max_tokens == 24


def test_the_manifest_names_budgets_per_kind_only_where_they_differ_from_the_one_budget() -> None:
    def decoding(**fields: object) -> object:
        config = build_config(
            {"model": "fake/lexical", "lengths": [400], "depths": [0.5], "limit": 1, **fields}
        )
        backend = create_backend(config)
        return build_manifest(config, build_plan(config, backend), backend)["decoding"]

    assert decoding(tasks=["niah"]) == {"temperature": 0.0, "max_tokens": 32}  # as plans frozen before
    assert decoding(tasks=["niah", "variable_tracking"]) == {
        "temperature": 0.0,
        "max_tokens": 96,
        "reply_budgets": {"phrase": 32, "set": 96},
    }
    given = decoding(tasks=["niah", "variable_tracking"], generation={"max_tokens": 24})
    assert given == {"temperature": 0.0, "max_tokens": 24}
