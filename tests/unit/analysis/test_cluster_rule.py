"""The one cluster rule (rotscope.types.clusters) and clusters_of over rows."""

from __future__ import annotations

from typing import Any

from rotscope.analysis.clusters import clusters_of
from rotscope.types.clusters import case_cluster, cluster_of, shares_variants


def test_a_case_and_its_controls_are_one_cluster() -> None:
    assert case_cluster("needle", "c1~absent") == case_cluster("needle", "c1") == "needle/c1"
    assert case_cluster("needle", "c1~evidence") == "needle/c1"
    assert case_cluster("other", "c1") != case_cluster("needle", "c1")


def test_variants_share_only_when_fewer_than_cases_and_more_than_one() -> None:
    assert shares_variants({"a": 0, "b": 1, "c": 0})
    assert not shares_variants({"a": 0, "b": 1})  # one per case
    assert not shares_variants({"a": 0, "b": 0})  # one haystack for all
    assert not shares_variants({"a": 0, "b": None, "c": 0})  # unknown
    assert cluster_of("t", "c1", 2, shared=True) == "variant 2"
    assert cluster_of("t", "c1~absent", 2, shared=False) == "t/c1"


def _row(instance: str, variant: int | None, task: str = "t") -> dict[str, Any]:
    return {
        "task": task,
        "instance_id": instance,
        "case_id": instance.split("~")[0],
        "haystack_variant": variant,
        "status": "ok",
        "correct": 1.0,
        "backend": "fake",
    }


def test_clusters_of_rows_follows_the_rule() -> None:
    shared = clusters_of([_row("c1", 0), _row("c2", 1), _row("c3", 0), _row("c3~absent", 0)])
    assert shared.unit == "variant" and shared.count == 2
    assert shared.of["c3~absent"] == shared.of["c1"] == "variant 0"
    assert "clustered on 2 haystack variants" in shared.label("sign-flip")
    own = clusters_of([_row("c1", 0), _row("c2", 1), _row("c2~absent", 1)], key="case_id")
    assert own.unit == "instance" and own.count == 2 and own.of["c2"] == "t/c2"
    one = clusters_of([_row("c1", 0), _row("c2", 0)])
    assert one.note is not None and "one haystack" in one.note


def test_an_imported_instance_is_one_cluster_across_tasks() -> None:
    rows = [{**_row("d1", None, task), "backend": "import"} for task in ("ruler", "longbench")]
    imported = clusters_of(rows)
    assert imported.count == 1 and set(imported.of.values()) == {"d1"}
    native = clusters_of([{**_row("d1", None, task), "backend": "fake"} for task in ("a", "b")])
    assert native.of["d1"] == "a/d1"  # a run's case ids are each family's own: named with the task
