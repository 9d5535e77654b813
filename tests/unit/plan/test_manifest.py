"""The frozen plan's comparison (``rotscope.plan.manifest``): paths read by the digest that covers
their file's content whatever component's prefix stands before them, and a plan frozen before the
slice counts compared without them."""

from __future__ import annotations

from rotscope.plan.manifest import by_content, deviations


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
