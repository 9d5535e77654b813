"""The analysis part of the summary (per-task degradation gaps, calibration, position effects,
effective-length definitions, failure categories, controls), from runs of the fake backend whose
replies depend on the needle's depth and the prompt's length; expected values worked out by hand."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from scipy import stats as scipy_stats

from rotscope import load_summary
from rotscope.backends.fake import FakeBackend
from rotscope.config.experiment import build_config
from rotscope.execution.workflows.runner import run_experiment
from rotscope.tasks.needles import load_needle_cases
from rotscope.types import Case, GenerateRequest
from tests.support.cli_helpers import valve_corpus

PAIRED = "adjusted t on paired instance differences (one haystack: conditional on it)"
NEEDLES: dict[str, Case] = {case.evidence[0].text: case for case in load_needle_cases("niah")}
FILLER_LINE = re.compile(r"valve \d+ checked\.")
WRONG = "Zorblat Quimby"  # names nothing in any prompt
# Replier(case or None for a control, depth bin 0.0 / 0.5 / 1.0, length bin 200 / 400, request) -> reply
Replier = Callable[[Case | None, float | None, int, GenerateRequest], str]


def _context_lines(request: GenerateRequest) -> list[str]:
    user = request.messages[-1]["content"]
    context = user.split("<context>", 1)[1].split("</context>", 1)[0]
    return [line.strip() for line in context.splitlines() if line.strip()]


def _responder(reply: Replier) -> Callable[[GenerateRequest], str]:
    """Finds the needle line in the context: its index over the lines gives the depth bin, the
    prompt's token count the length bin (200 or 400)."""

    def respond(request: GenerateRequest) -> str:
        lines = _context_lines(request)
        case, depth = None, None
        for index, line in enumerate(lines):
            if line in NEEDLES:
                case = NEEDLES[line]
                depth = round(2 * index / (len(lines) - 1)) / 2
        length = 200 if len(request.token_ids) < 300 else 400
        return reply(case, depth, length, request)

    return respond


def _run(tmp_path: Path, reply: Replier, **fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "analysis",
        "model": "fake/lexical",
        "tasks": ["niah"],
        "lengths": [200, 400],
        "depths": [0.0, 0.5, 1.0],
        "limit": 16,
        # one haystack, so the instances are the clusters and the hand-worked intervals hold
        # (clustering on shared variants: tests/unit/analysis/test_cluster_intervals.py)
        "filler": {"kind": "text", "glob": str(valve_corpus(tmp_path / "corpus") / "*.txt"), "variants": 1},
    }
    data.update(fields)
    run_dir = run_experiment(
        build_config(data), run_dir=tmp_path / "run", backend=FakeBackend("scripted", _responder(reply))
    )
    summary = load_summary(run_dir).model_dump()
    schema = json.loads(
        resources.files("rotscope").joinpath("schemas", "summary.schema.json").read_text(encoding="utf-8")
    )
    jsonschema.validate(summary, schema, cls=jsonschema.Draft202012Validator)
    return summary


def _task(summary: dict[str, Any]) -> dict[str, Any]:
    (task,) = summary["tasks"]
    assert task["task"] == "niah"
    return task


def _by_length(entries: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {entry["length"]: entry for entry in entries}


def _definitions(effective: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["definition"]: entry for entry in effective["definitions"]}


def test_responder_sees_every_depth_and_length(tmp_path: Path) -> None:
    seen: set[tuple[str, float | None, int]] = set()

    def record(case: Case | None, depth: float | None, length: int, request: GenerateRequest) -> str:
        seen.add((case.case_id if case else "control", depth, length))
        return case.oracle.answer if case else "not in the context"

    summary = _run(tmp_path, record, limit=2)
    # 2 cases x 3 depths x 2 lengths, plus the controls (no needle) at both lengths.
    expected = {(f"niah-0{c}", d, n) for c in (1, 2) for d in (0.0, 0.5, 1.0) for n in (200, 400)}
    assert seen == expected | {("control", None, 200), ("control", None, 400)}
    # ... and the bins agree with the cells the runner stored: every cell fully right.
    assert len(summary["cells"]) == 6
    assert all(cell["correct"] == cell["n"] == 2 for cell in summary["cells"])


def _right_short_wrong_long(case: Case | None, depth: float | None, length: int, _: GenerateRequest) -> str:
    if case is None:
        return "not in the context"
    return case.oracle.answer if length == 200 else WRONG


def test_degradation_calibration_and_effective_length(tmp_path: Path) -> None:
    task = _task(_run(tmp_path, _right_short_wrong_long))

    # Every one of the 16 cases: 1.0 at 200 (over 3 depths), 0.0 at 400 -> differences all -1.
    (gap,) = task["degradation"]
    # No longer a point [-1, -1]: the adjusted t adds +1 and -1 weighted 1/2 (17 values), centre
    # -16 / 17; squares 16 (1/17)^2 + ((33/17)^2 + (1/17)^2) / 2 = 33/17; SE sqrt(33/17 / 16 / 17);
    # the low end is clipped at -1.
    centre, se = -16 / 17, (33 / 17 / 16 / 17) ** 0.5
    assert gap == {"length": 400, "gap": -1.0, "ci_low": -1.0,
                   "ci_high": pytest.approx(centre + scipy_stats.t.ppf(0.975, 16) * se),
                   "pairs": 16, "method": PAIRED, "too_few": False, "unmatched": 0, "clusters": 16,
                   "cluster_on": "instance"}  # fmt: skip

    # Control length 200: 48 of 48 items, 16 of 16 instances -> the adjusted t of a cell adds one
    # pseudo-instance at 0 and one at 1 (18 values): centre 17 / 18, squares 16 (1/18)^2 +
    # (17/18)^2 + (1/18)^2 = 306 / 324, SE sqrt(306 / 324 / 18 / 17), 17 degrees of freedom;
    # shown beside the verdict: point 1.0 > 0.95 -> saturated.
    calibration = task["calibration"]
    assert calibration["length"] == 200
    assert calibration["accuracy"] == 1.0
    low = 17 / 18 - scipy_stats.t.ppf(0.975, 17) * (306 / 324 / 18 / 17) ** 0.5
    assert calibration["ci_low"] == pytest.approx(low, abs=1e-9)
    assert calibration["ci_method"] == "adjusted t on instance means (one haystack: conditional on it)"
    assert calibration["ci_high"] == 1.0
    assert calibration["verdict"] == "saturated"

    lengths = _by_length(task["lengths"])
    assert (lengths[200]["n"], lengths[200]["instances"], lengths[200]["correct"]) == (48, 16, 48)
    assert (lengths[400]["n"], lengths[400]["instances"], lengths[400]["incorrect"]) == (48, 16, 48)

    # No base length (250/500/1000) was tested, so the base is the shortest length (issue 31: never
    # a pool of the lengths being judged): 1.0; threshold 0.85: 200 passes, 400 fails -> 200.
    effective = task["effective_length"]
    assert effective["base_score"] == pytest.approx(1.0)
    assert effective["base_lengths"] == [200]
    assert effective["value"] == 200
    # The bracket: 200 passes by definition (the sole base), 400 (margins all -0.85) is shown to fail.
    bracket = effective["bracket"]
    assert (bracket["state"], bracket["low"]["length"], bracket["high"]["length"]) == ("value", 200, 400)
    definitions = _definitions(effective)
    assert set(definitions) == {"nolima-0.85", "absolute-0.856", "longscore", "auc-400", "within-noise"}
    # One-sided 95% lower bounds: 200 -> 16 / (16 + 1.645^2) = 0.8553, 400 -> 0. NoLiMa on them:
    # 0.8553 >= 0.85 -> 200.
    assert (definitions["nolima-0.85"]["value"], definitions["nolima-0.85"]["conservative"]) == (200, 200)
    assert (effective["state"], effective["conservative_state"]) == ("value", "value")
    # RULER 0.856 on points: 1.0 passes, 0.0 fails -> 200; on lower bounds 0.8553 < 0.856 -> None.
    assert definitions["absolute-0.856"]["value"] == 200
    assert definitions["absolute-0.856"]["conservative"] is None
    assert definitions["absolute-0.856"]["conservative_state"] == "below-shortest"


def _half_fail_long(case: Case | None, depth: float | None, length: int, _: GenerateRequest) -> str:
    if case is None:
        return "not in the context"
    even = int(case.case_id.removeprefix("niah-")) % 2 == 0
    return WRONG if length == 400 and even else case.oracle.answer


def test_degradation_with_an_adjusted_t_interval(tmp_path: Path) -> None:
    task = _task(_run(tmp_path, _half_fail_long))
    (gap,) = task["degradation"]
    # 8 of 16 cases (the even ids) drop 1 -> 0 at 400, the rest stay 1: mean -8 / 16 = -0.5.
    assert gap["gap"] == pytest.approx(-0.5)
    assert gap["pairs"] == 16
    assert gap["method"] == PAIRED
    assert gap["too_few"] is False
    assert -1.0 <= gap["ci_low"] < -0.5 < gap["ci_high"] <= 0.0
    # 400: 8 of 16 right -> 0.5 >= threshold? base = (1.0 + 0.5) / 2 = 0.75, threshold 0.6375: no.
    assert task["effective_length"]["value"] == 200


def _fail_middle(case: Case | None, depth: float | None, length: int, _: GenerateRequest) -> str:
    if case is None:
        return "not in the context"
    return WRONG if depth == 0.5 else case.oracle.answer


def test_position_effect_flags_the_middle(tmp_path: Path) -> None:
    task = _task(_run(tmp_path, _fail_middle))
    effects = _by_length(task["position_effect"])
    assert set(effects) == {200, 400}
    for effect in effects.values():
        # Depth accuracy: 0.0 -> 1, 0.5 -> 0, 1.0 -> 1.
        assert effect["worst_depth"] == 0.5
        assert effect["best_depth"] in (0.0, 1.0)
        assert effect["range"] == pytest.approx(1.0)
        middle = effect["middle_vs_ends"]
        # Each case: 0 - (1 + 1) / 2 = -1; 16 negative of 16. One haystack: each case is its own
        # cluster, 16 clusters > 14, so the sign-flip p-value is Monte Carlo over 9,999 seeded
        # patterns, none as extreme (exact: 2^-15): (1 + 0) / (1 + 9,999) = 1e-4.
        assert (
            effect["method"]
            == "sign-flip on 16 clusters (9,999 seeded patterns) (one haystack: conditional on it)"
        )
        assert (effect["clusters"], effect["cluster_on"], effect["note"]) == (16, "instance", None)
        assert middle["difference"] == pytest.approx(-1.0)
        assert middle["pairs"] == 16
        assert middle["p_value"] == pytest.approx(1e-4)
        # BH over the 2 lengths, both 1e-4: rank 2 -> 1e-4 x 2 / 2 = 1e-4.
        assert middle["p_adjusted"] == pytest.approx(1e-4)
        assert middle["significant"] is True
        # best vs 0.5: 16 of 16 -> 1e-4; best vs the other end: all zeros -> 1. BH over
        # [1e-4, 1, 1e-4, 1]: rank 2 -> 1e-4 x 4 / 2 <= 0.05 rejected; the 1s never.
        assert effect["flagged_depths"] == [0.5]


def test_position_effect_needs_enough_cases(tmp_path: Path) -> None:
    task = _task(_run(tmp_path, _fail_middle, limit=4))
    for effect in task["position_effect"]:
        assert effect["worst_depth"] == 0.5
        assert effect["range"] == pytest.approx(1.0)
        middle = effect["middle_vs_ends"]
        # 4 of 4 negative: p = 2 x 0.5^4 = 0.125; BH over [0.125, 0.125] -> 0.125: not significant.
        assert middle["p_value"] == pytest.approx(0.125)
        assert middle["p_adjusted"] == pytest.approx(0.125)
        assert middle["significant"] is False
        # Comparisons [0.125, 1, 0.125, 1]: rank 2 -> 0.125 x 4 / 2 = 0.25 > 0.05: none flagged.
        assert effect["flagged_depths"] == []
        # 4 clusters can never give a two-sided p below 2 / 2^4: the record says so.
        assert effect["note"].startswith("4 clusters: the smallest two-sided p-value is 0.12")


def test_no_position_effect_when_always_right(tmp_path: Path) -> None:
    def right(case: Case | None, depth: float | None, length: int, _: GenerateRequest) -> str:
        return case.oracle.answer if case else "not in the context"

    task = _task(_run(tmp_path, right, limit=4))
    for effect in task["position_effect"]:
        assert effect["range"] == 0.0
        assert effect["middle_vs_ends"]["difference"] == 0.0
        assert effect["middle_vs_ends"]["p_value"] == 1.0  # all differences zero
        assert effect["middle_vs_ends"]["significant"] is False
        assert effect["flagged_depths"] == []


def _categorised(case: Case | None, depth: float | None, length: int, request: GenerateRequest) -> str:
    """Depth 0: a filler line copied from the context; 0.5: a name from nowhere; 1: abstain.
    Controls: an invented answer."""
    if case is None:
        return WRONG
    if depth == 0.0:
        return next(line for line in _context_lines(request) if FILLER_LINE.fullmatch(line))
    if depth == 0.5:
        return WRONG
    return "not in the context"


def test_cell_categories_and_controls(tmp_path: Path) -> None:
    summary = _run(tmp_path, _categorised, limit=2)
    cells = {(cell["length"], cell["depth"]): cell for cell in summary["cells"]}
    assert set(cells) == {(n, d) for n in (200, 400) for d in (0.0, 0.5, 1.0)}
    for length in (200, 400):
        # 2 cases per cell, every reply of one kind.
        copied, invented, abstained = cells[length, 0.0], cells[length, 0.5], cells[length, 1.0]
        assert (copied["incorrect"], copied["categories"]) == (2, {"context_value": 2})
        assert (invented["incorrect"], invented["categories"]) == (2, {"wrong_answer": 2})
        assert (abstained["abstained"], abstained["categories"]) == (2, {"abstained": 2})
        assert all(cell["accuracy"] == 0.0 for cell in (copied, invented, abstained))

    # One control per case per length: 2 at each length, each answered -> hallucinated.
    controls = {(c["task"], c["length"]): c for c in summary["controls"]}
    assert set(controls) == {("niah", 200), ("niah", 400)}
    for control in controls.values():
        assert (control["n"], control["correct"], control["incorrect"]) == (2, 0, 2)
        assert control["hallucinated"] == 2

    # Nothing right at the control length: point 0.0 < 0.90 -> too hard.
    calibration = _task(summary)["calibration"]
    assert (calibration["accuracy"], calibration["verdict"]) == (0.0, "too hard")


def test_abstaining_controls_are_not_hallucinated(tmp_path: Path) -> None:
    summary = _run(tmp_path, _right_short_wrong_long, limit=2, depths=[0.5])
    for control in summary["controls"]:
        assert (control["n"], control["correct"], control["hallucinated"]) == (2, 2, 0)
    # One depth only: no middle, so no middle-vs-ends test, and nothing to compare.
    for effect in _task(summary)["position_effect"]:
        assert effect["middle_vs_ends"] is None
        assert effect["flagged_depths"] == []


def _always_right(case: Case | None, depth: float | None, length: int, _: GenerateRequest) -> str:
    return case.oracle.answer if case else "not in the context"


def test_perfect_model_on_the_default_case_count_gets_a_conservative_length(tmp_path: Path) -> None:
    # 16 cases (niah's default), every answer right at 200 and 400: nothing falls below, so the
    # value is the longest length, marked as a lower limit; the conservative value exists too
    # (one-sided 95% lower bound 16 / (16 + 1.645^2) = 0.8553 >= 0.85).
    summary = _run(tmp_path, _always_right, analysis={"base_lengths": [400]})
    effective = summary["effective_length"]
    assert effective["base_lengths"] == [400]
    assert (effective["value"], effective["state"]) == (400, "at-least-longest")
    assert (effective["conservative"], effective["conservative_state"]) == (400, "at-least-longest")
    assert _task(summary)["calibration"]["verdict"] == "saturated"
    assert all(cell["instance_accuracy"] == cell["accuracy"] == 1.0 for cell in summary["cells"])
