"""The gate's verdict on synthetic paired runs whose right answer is known by construction."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console
from statsmodels.stats.multitest import multipletests

from rotscope.config.experiment import GateConfig
from rotscope.errors import BadInput
from rotscope.gate.judgement import EXIT_CODES
from rotscope.gate.margin_test import MarginData, p_value
from rotscope.gate.pairing import RunData
from rotscope.gate.verdict import compare
from rotscope.gate.view import print_record
from rotscope.stats.multiplicity import holm

Outcome = Callable[[str, int], bool]
"""Whether (position, instance number) is answered correctly."""


def _row(position: str, number: int, correct: bool, **extra: Any) -> dict[str, Any]:
    row = {
        "task": "niah",
        "case_id": f"case-{number:02d}",
        "instance_id": f"case-{number:02d}",
        "length_target": 300,
        "depth": {"beginning": 0.0, "midpoint": 0.5, "end": 1.0}.get(position, 0.0),
        "position": position,
        "trial": 0,
        "control": 0,
        "question": f"question {number}",
        "expected": f"answer {number}",
        "seed": 0,
        "spans": json.dumps(
            [{"evidence_id": "e", "text": f"evidence {number}", "token_start": 100, "token_end": 104}]
        ),
        "prompt_tokens": 300,
        "status": "ok",
        "outcome": "correct" if correct else "incorrect",
    }
    row.update(extra)
    return row


def make_run(
    outcome: Outcome,
    *,
    instances: int = 100,
    positions: tuple[str, ...] = ("beginning", "midpoint", "end"),
    gate: dict[str, Any] | None = None,
    name: str = "run",
    extra: Callable[[str, int], dict[str, Any]] | None = None,
) -> RunData:
    rows = [
        _row(position, number, outcome(position, number), **(extra(position, number) if extra else {}))
        for position in positions
        for number in range(instances)
    ]
    meta = {"run_id": name, "config": {"seed": 0, "generation": {"seed": 0}, "gate": gate or {}}}
    return RunData(Path(name), meta, rows)


def always(position: str, number: int) -> bool:
    return True


def ninety(position: str, number: int) -> bool:
    return number % 10 != 0


def verdict(baseline: RunData, candidate: RunData) -> str:
    return str(compare(baseline, candidate).verdict)


def test_few_identical_instances_do_not_prove_non_inferiority() -> None:
    """Seven cases answered alike by both runs: no loss seen, but seven cases cannot rule out
    losing one in ten; the pseudo-instances keep the interval from collapsing to a point."""
    gate = {"min_instances": 5, "margin": 0.1}
    record = compare(make_run(always, instances=7, gate=gate), make_run(always, instances=7, gate=gate))
    assert all(item.lower < -0.1 for item in record.slices)
    assert record.verdict == "INCONCLUSIVE"


def test_identical_runs_pass_with_exit_0() -> None:
    record = compare(make_run(ninety), make_run(ninety, name="cand"))
    assert record.verdict == "PASS"
    assert record.exit_code == EXIT_CODES["PASS"] == 0
    assert all(item.verdict == "not shown to fail" for item in record.slices)
    assert all(item.lower > -0.05 for item in record.slices)


def test_evidence_lost_at_one_position_fails_that_slice() -> None:
    candidate = make_run(lambda position, number: position != "midpoint", name="cand")
    record = compare(make_run(always), candidate)
    assert record.verdict == "FAIL" and record.exit_code == 1
    by_position = {item.position: item for item in record.slices}
    assert by_position["midpoint"].verdict == "FAIL"
    assert by_position["midpoint"].upper < -0.05
    assert by_position["beginning"].verdict == "not shown to fail"
    assert record.worst_positions[0].worst_position == "midpoint"
    assert record.worst_positions[0].range == 1.0
    assert record.worst_positions[0].baseline_range == 0.0


def test_a_small_loss_in_one_slice_neither_fails_it_nor_blocks_a_pooled_pass() -> None:
    """The candidate loses 3 of 30 instances at the midpoint: -0.10 against a margin of 0.10 there,
    an interval straddling -margin, so no FAIL; pooled over the three slices (each case once) the
    loss is a third of that and non-inferiority is shown."""
    gate = {"margin": 0.1}
    candidate = make_run(
        lambda position, number: not (position == "midpoint" and number < 3),
        instances=30,
        gate=gate,
        name="cand",
    )
    record = compare(make_run(always, instances=30, gate=gate), candidate)
    midpoint = next(item for item in record.slices if item.position == "midpoint")
    assert midpoint.lower < -0.1 < midpoint.upper
    assert midpoint.verdict == "not shown to fail" and midpoint.within_margin is False
    assert "neither shown to fail nor shown within the margin" in midpoint.reason
    console = Console(record=True, width=200)
    print_record(record, console)
    named = [line for line in console.export_text().splitlines() if line.startswith("neither shown to fail")]
    # 30 cases per slice at Holm's level show no slice within 0.1, not even the unchanged ones
    assert len(named) == 1 and "(3 of 3 slices" in named[0] and "niah 300 midpoint" in named[0]
    pooled = record.tests.pooled_noninferiority
    assert pooled.clusters == 30 and pooled.difference == pytest.approx(-0.1 / 3)
    assert pooled.lower > -0.1
    assert record.verdict == "PASS" and record.decided_by == ["pooled non-inferiority"]


def test_the_same_small_loss_everywhere_is_inconclusive_on_the_pooled_test() -> None:
    gate = {"margin": 0.1}
    candidate = make_run(lambda position, number: number >= 3, instances=30, gate=gate, name="cand")
    record = compare(make_run(always, instances=30, gate=gate), candidate)
    assert all(item.verdict == "not shown to fail" for item in record.slices)
    pooled = record.tests.pooled_noninferiority
    assert pooled.lower < -0.1 < pooled.upper
    assert record.verdict == "INCONCLUSIVE" and record.decided_by == ["pooled non-inferiority"]
    assert record.exit_code == 3


def test_a_slice_below_the_minimum_is_inconclusive_and_never_pooled() -> None:
    """The case file's ``slices`` field makes a 'risk=high' slice of 3 instances next to large
    clean ones; the gate does not fold it into them to pass."""

    def risk(position: str, number: int) -> dict[str, Any]:
        return {"slices": json.dumps({"risk": "high" if number < 3 else "low"})}

    record = compare(make_run(always, extra=risk), make_run(always, extra=risk, name="cand"))
    small = [item for item in record.slices if item.fields == {"risk": "high"}]
    assert [item.instances for item in small] == [3, 3, 3]
    assert all(item.verdict == "INCONCLUSIVE" and "fewer than" in item.reason for item in small)
    large = [item for item in record.slices if item.fields == {"risk": "low"}]
    assert [item.instances for item in large] == [97, 97, 97]
    assert all(item.verdict == "not shown to fail" for item in large)
    assert record.verdict == "INCONCLUSIVE"


def test_slice_fields_can_be_chosen() -> None:
    def fields(position: str, number: int) -> dict[str, Any]:
        return {"slices": json.dumps({"risk": "high" if number < 15 else "low", "hops": str(number % 2)})}

    def sliced(gate: dict[str, Any]) -> list[dict[str, str]]:
        record = compare(make_run(always, extra=fields, gate=gate), make_run(always, extra=fields, gate=gate))
        return [item.fields for item in record.slices if item.position == "end"]

    assert len(sliced({})) == 4  # every field, crossed
    assert sliced({"slice_fields": ["risk"]}) == [{"risk": "high"}, {"risk": "low"}]
    assert sliced({"slice_fields": []}) == [{}]


def test_rows_without_slice_fields_slice_by_task_length_and_position() -> None:
    record = compare(make_run(always), make_run(always, name="cand"))
    assert [(item.task, item.length, item.position, item.fields) for item in record.slices] == [
        ("niah", 300, "beginning", {}),
        ("niah", 300, "end", {}),
        ("niah", 300, "midpoint", {}),
    ]


def _lose(count: int) -> Outcome:
    return lambda position, number: number >= count


def test_holm_withholds_a_slice_fail_that_the_pooled_fail_test_catches() -> None:
    """Five slices each losing 10 of 40 instances (different cases in each) against a margin of
    0.1: each slice's one-sided p-value of inferiority is near 0.03, below alpha alone but not
    below Holm's first level alpha / 5, so no slice FAILs; pooled over the five slices the same
    loss is shown beyond the margin, and the pooled FAIL test decides."""
    positions = ("p1", "p2", "p3", "p4", "p5")
    gate = {"margin": 0.1}

    def spread(position: str, number: int) -> bool:
        return not 10 * positions.index(position) <= number % 40 < 10 * positions.index(position) + 10

    baseline = make_run(always, instances=40, positions=positions, gate=gate)
    candidate = make_run(  # p5 loses the first ten cases again (5 x 10 > 40)
        lambda position, number: spread(position, number) if position != "p5" else number >= 10,
        instances=40,
        positions=positions,
        gate=gate,
        name="cand",
    )
    record = compare(baseline, candidate)
    raw = [item.p_inferior for item in record.slices]
    assert all(0.01 < p < 0.05 for p in raw)
    assert all(item.p_inferior_holm > 0.05 and item.verdict != "FAIL" for item in record.slices)
    assert record.verdict == "FAIL" and record.decided_by == ["pooled FAIL test"]
    one = compare(
        make_run(always, instances=40, positions=("p1",), gate=gate),
        make_run(_lose(10), instances=40, positions=("p1",), gate=gate, name="cand"),
    )
    assert one.slices[0].verdict == "FAIL"
    assert one.decided_by == ["pooled FAIL test", "slice FAIL test"]


def test_holm_is_holm_not_the_statsmodels_default() -> None:
    p_values = [0.01, 0.02, 0.03]
    assert holm(p_values, 0.05) == pytest.approx([0.03, 0.04, 0.04])
    sidak = multipletests(p_values, alpha=0.05)[1]
    assert list(sidak) != pytest.approx([0.03, 0.04, 0.04])


def test_a_candidate_clearly_below_the_floor_fails_even_without_a_difference() -> None:
    gate = {"floor": 0.8}

    def low(position: str, number: int) -> bool:
        return number % 5 == 0

    record = compare(make_run(low, gate=gate), make_run(low, gate=gate, name="cand"))
    assert all(item.verdict == "FAIL" and "floor" in item.reason for item in record.slices)
    assert record.verdict == "FAIL"


def test_floor_met_on_the_point_but_not_clearly_missed_is_inconclusive() -> None:
    gate = {"floor": 0.8}

    def most(position: str, number: int) -> bool:
        return number % 4 != 0  # 0.73 of 30: below 0.8, Wilson upper bound above it

    record = compare(make_run(most, gate=gate), make_run(most, gate=gate, name="cand"))
    assert all(item.verdict == "INCONCLUSIVE" for item in record.slices)


def test_error_rows_are_excluded_counted_and_too_many_make_it_inconclusive() -> None:
    def broken(position: str, number: int) -> dict[str, Any]:
        return {"status": "error", "outcome": "error"} if number < 10 else {}

    record = compare(make_run(always), make_run(always, extra=broken, name="cand"))
    assert record.errors.candidate_errors == 30
    assert record.errors.pairs_excluded == 30
    assert all(item.instances == 90 for item in record.slices)
    assert record.verdict == "INCONCLUSIVE"
    assert "error" in record.reasons[0]
    tolerant = {"max_error_rate": 0.2}
    record = compare(make_run(always, gate=tolerant), make_run(always, extra=broken, gate=tolerant, name="c"))
    assert record.verdict == "PASS"


def test_a_slices_bounds_invert_its_score_t_at_holms_levels() -> None:
    """One slice: Holm's level is alpha itself, so its one-sided bounds are where the slice's score
    t (``gate.margin_test``) of the 100 differences has p = alpha on each side."""
    record = compare(
        make_run(always, positions=("end",)), make_run(_lose(5), positions=("end",), name="cand")
    )
    item = record.slices[0]
    data = MarginData(
        means=np.array([-1.0] * 5 + [0.0] * 95), present=np.ones(100, dtype=bool), items=np.ones(100),
        loss=np.array(5.0), gain=np.array(0.0),
    )  # fmt: skip
    assert item.lower is not None and item.upper is not None and item.lower < -0.05 < item.upper
    assert float(p_value(data, item.lower, "above")) == pytest.approx(0.05, abs=1e-4)
    assert float(p_value(data, item.upper, "below")) == pytest.approx(0.05, abs=1e-4)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda row: row.update(case_id="other", instance_id="other"), "not the candidate"),
        (lambda row: row.update(question="another question"), "question"),
        (lambda row: row.update(seed=5), "seed"),
        (lambda row: row.update(spans=json.dumps([{"text": "other evidence"}])), "evidence"),
    ],
)
def test_runs_that_do_not_share_cases_layouts_and_seeds_are_refused(
    change: Callable[[dict[str, Any]], None], named: str
) -> None:
    candidate = make_run(always, name="cand")
    change(candidate.rows[4])
    with pytest.raises(BadInput, match=named):
        compare(make_run(always), candidate)


def test_runs_with_different_layout_seeds_are_refused() -> None:
    candidate = make_run(always, name="cand")
    candidate.meta["config"]["seed"] = 1
    with pytest.raises(BadInput, match="different seeds"):
        compare(make_run(always), candidate)


def test_runs_with_different_gate_settings_need_a_plan() -> None:
    with pytest.raises(BadInput, match="--plan"):
        compare(make_run(always), make_run(always, gate={"margin": 0.2}, name="cand"))


def test_a_plans_analysis_overrides_the_runs_settings() -> None:
    plan = {"analysis": GateConfig(min_instances=150).model_dump(mode="json")}
    baseline, candidate = make_run(always), make_run(always, name="cand")
    for run in (baseline, candidate):
        run.meta["manifest"] = {"analysis": plan["analysis"]}
    record = compare(baseline, candidate, plan)
    assert record.analysis.min_instances == 150
    assert record.verdict == "INCONCLUSIVE"


def test_claim_reports_are_counted_when_rows_carry_them() -> None:
    def claims(position: str, number: int) -> dict[str, Any]:
        report = {"missing": ["window-23"] if number < 2 else [], "forbidden": [], "cited": ["policy-7"]}
        return {"claim_report": json.dumps({**report, "wrong_citations": ["faq-2"] if number == 5 else []})}

    record = compare(make_run(always), make_run(always, extra=claims, name="cand"))
    assert record.claims.candidate == {
        "missing": {"window-23": 6},
        "forbidden": {},
        "wrong_citations": {"faq-2": 3},
        "missing_citations": {},
    }
    assert record.claims.baseline == {}


def test_evidence_only_rows_pair_by_case_whatever_their_unpadded_length() -> None:
    """The evidence-only control's length is its unpadded prompt's, which another template
    changes; such rows still pair, and form one slice per task."""

    def evidence_only(length: int) -> Callable[[str, int], dict[str, Any]]:
        return lambda position, number: {"length_target": length + number, "control": 1}

    baseline = make_run(always, positions=("evidence-only",), extra=evidence_only(40))
    candidate = make_run(always, positions=("evidence-only",), extra=evidence_only(55), name="cand")
    record = compare(baseline, candidate)
    assert [(item.position, item.length, item.instances) for item in record.slices] == [
        ("evidence-only", 0, 100)
    ]
    assert record.verdict == "PASS"


def test_absolute_offsets_pair_on_the_offset_not_the_depth_it_reached() -> None:
    baseline = make_run(always, positions=("@40",), extra=lambda position, number: {"depth": 0.31})
    candidate = make_run(always, positions=("@40",), extra=lambda position, number: {"depth": 0.29}, name="c")
    record = compare(baseline, candidate)
    assert [item.position for item in record.slices] == ["@40"]


def test_each_filler_type_pairs_and_slices_on_its_own() -> None:
    """A reasoning layout run with two fillers is two cells: rows pair within one filler, and a
    loss under one filler is not diluted by the other."""

    def two_fillers(outcome: Outcome, name: str) -> RunData:
        rows = [
            _row("middle", number, outcome(filler, number), task="reasoning", filler=filler)
            for filler in ("with_solutions", "questions_only")
            for number in range(100)
        ]
        meta = {"run_id": name, "config": {"seed": 0, "generation": {"seed": 0}, "gate": {}}}
        return RunData(Path(name), meta, rows)

    baseline = two_fillers(lambda filler, number: True, "base")
    candidate = two_fillers(lambda filler, number: filler == "with_solutions", "cand")
    record = compare(baseline, candidate)
    verdicts = {item.position: (item.instances, item.verdict) for item in record.slices}
    assert verdicts == {
        "questions_only/middle": (100, "FAIL"),
        "with_solutions/middle": (100, "not shown to fail"),
    }


def test_the_terminal_view_lists_claims_worst_positions_and_the_verdict() -> None:
    def claims(position: str, number: int) -> dict[str, Any]:
        return {"claim_report": json.dumps({"missing": ["window-23"] if number < 2 else []})}

    candidate = make_run(lambda position, number: position != "midpoint", extra=claims, name="cand")
    console = Console(record=True, width=200)
    print_record(compare(make_run(always), candidate), console)
    text = console.export_text()
    assert "candidate missing claims: 6 (window-23 x6)" in text
    assert "case-00: worst midpoint (0.00), range 1.00 (baseline range 0.00)" in text
    assert "FAIL (exit 1)" in text


def test_a_plan_frozen_for_the_bootstrap_is_judged_with_the_new_tests_and_says_so() -> None:
    old = GateConfig().model_dump(mode="json") | {"interval": "cluster-bootstrap-percentile"}
    del old["primary_metric"]  # an older plan need not carry every field of today's
    plan = {"analysis": old}
    baseline, candidate = make_run(always), make_run(always, name="cand")
    for run in (baseline, candidate):
        run.meta["manifest"] = {"analysis": old}
    record = compare(baseline, candidate, plan)
    assert record.verdict == "PASS"
    assert "judged with this version's tests" in record.tests.note
    console = Console(record=True, width=250)
    print_record(record, console)
    assert "note: the plan asked for the per-slice cluster bootstrap" in console.export_text()


def test_a_setting_left_at_its_default_equals_the_same_value_given() -> None:
    record = compare(
        make_run(always), make_run(always, gate={"margin": 0.05, "slice_fields": None}, name="c")
    )
    assert record.verdict == "PASS"


def test_slice_values_are_shown_as_written_not_as_markup() -> None:
    def bracketed(position: str, number: int) -> dict[str, Any]:
        return {"slices": json.dumps({"team": "[/x]" if number % 2 else "[bold]"})}

    record = compare(make_run(always, extra=bracketed), make_run(always, extra=bracketed, name="c"))
    console = Console(record=True, width=250)
    print_record(record, console)
    shown = console.export_text()
    assert "team=[/x]" in shown and "team=[bold]" in shown


@pytest.mark.parametrize("width", [80, 100])
def test_the_slice_table_keeps_every_column_and_whole_slices_in_a_log(width: int) -> None:
    """Issue 35: at 80 columns the slice column read "cas… / 300 / beg… / ris…"; now every column
    keeps its head and each slice its words (on one line at 100 columns)."""

    def risk(position: str, number: int) -> dict[str, Any]:
        return {"slices": json.dumps({"risk": "high" if number % 2 else "low"})}

    record = compare(make_run(always, extra=risk), make_run(always, extra=risk, name="c"))
    console = Console(record=True, width=width)
    print_record(record, console)
    lines = console.export_text().splitlines()
    assert max(len(line.rstrip()) for line in lines) <= width
    head = next(line for line in lines if line.startswith("slice"))
    assert head.split() == ["slice", "inst.", "base", "cand.", "diff", "bounds", "Holm", "p", "verdict"]
    assert "…" not in "\n".join(lines)
    rows = [line for line in lines if line.startswith("niah 300")]
    assert len(rows) == len(record.slices) == 6 and all(line.rstrip().endswith("not shown") for line in rows)
    if width == 100:
        assert "niah 300 beginning risk=high" in "\n".join(rows)


def test_cases_sharing_three_haystack_variants_are_clustered_on_them_and_the_change_is_said_once() -> None:
    """Identical runs whose 100 cases read 3 haystack texts: three clusters cannot show
    non-inferiority, so the gate is INCONCLUSIVE where counting cases as independent PASSed; the
    record and the view name the clusters and say the verdict changed, once."""

    def shared(position: str, number: int) -> dict[str, Any]:
        return {"haystack_variant": number % 3}

    record = compare(make_run(always, extra=shared), make_run(always, extra=shared, name="cand"))
    assert record.verdict == "INCONCLUSIVE"
    assert record.tests.clustered_on == "3 haystack variants"
    assert record.tests.pooled_noninferiority.clusters == 3
    assert "clustered on 3 haystack variants" in record.tests.pooled_noninferiority.method
    assert record.tests.cluster_note is not None and "would be PASS" in record.tests.cluster_note
    assert any("3 haystack variants" in reason for reason in record.reasons)
    console = Console(record=True, width=200)
    print_record(record, console)
    assert console.export_text().count("would be PASS") == 1


def test_cases_with_their_own_haystack_stay_the_clusters() -> None:
    def own(position: str, number: int) -> dict[str, Any]:
        return {"haystack_variant": number}

    record = compare(make_run(always, extra=own), make_run(always, extra=own, name="cand"))
    assert record.verdict == "PASS"
    assert record.tests.clustered_on == "100 cases" and record.tests.cluster_note is None
