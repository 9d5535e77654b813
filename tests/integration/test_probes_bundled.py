"""The RULER / MRCR-style probe families on the real bundled model, each from its example file at
a few hundred tokens: every prompt verified and delivered as sent, every evidence piece spanned,
every row scored, the stored outcome what the family's scorer makes of the stored reply, and the
failure categories counted in the cells."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from rotscope.analysis.summary import load_summary
from rotscope.config.experiment import load_config
from rotscope.execution.workflows.runner import run_experiment
from rotscope.rows import partial_credit
from rotscope.scoring.deterministic import score_parts
from rotscope.tasks import get_task
from rotscope.types import Completion

EXAMPLES = Path(__file__).parents[2] / "examples"
SETTINGS = {
    "model": "bundled",
    "score": "accuracy",  # the replies only (test_likelihood_bundled reads likelihoods)
    "lengths": [400],
    "depths": [0.0, 0.5, 1.0],
    "controls": True,
    "generation": {"temperature": 0.0, "max_tokens": 40, "seed": 0},
    # one engine thread: spinning threads on a busy machine cost several times the time
    "llamacpp": {"n_threads": 1},
}


def _rows(run_dir: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(f"file:{run_dir / 'run.db'}?mode=ro", uri=True) as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM items ORDER BY item_id")]


def _check_run(family: str, run_dir: Path, limit: int, length: int = 400) -> list[dict[str, Any]]:
    rows = _rows(run_dir)
    assert rows and all(row["status"] == "ok" and row["error"] is None for row in rows), rows
    assert all(row["usage_prompt_tokens"] == row["prompt_tokens"] for row in rows)
    assert all(abs(row["prompt_tokens"] - length) <= 0.05 * length for row in rows)
    cases = {case.case_id: case for case in list(get_task(family).cases())[:limit]}
    for row in rows:
        whole = cases[row["instance_id"].removesuffix("~absent")]
        case = whole if not row["control"] else whole.absent_control()
        part = dict((p.case_id, p) for _, p in case.scored_parts())[row["case_id"]]
        assert row["expected"] == ("not in the context" if part.oracle.abstain else part.oracle.answer)
        if not row["control"]:
            spans = json.loads(row["spans"])
            assert {span["evidence_id"] for span in spans} == {
                e.evidence_id
                for e in case.evidence
                if e.evidence_id.startswith(f"{part.case_id}/") or not case.parts
            }
            for span in spans:
                assert 0 <= span["token_start"] < span["token_end"] <= row["prompt_tokens"]
    summary = load_summary(run_dir).model_dump()
    assert summary["items"]["errors"] == 0 and summary["items"]["rejected_prompts"] == 0
    cells = [cell for cell in summary["cells"] if cell["task"] == family]
    assert cells
    for cell in cells:
        assert sum(cell["categories"].values()) == cell["incorrect"] + cell["abstained"]
    return rows


def test_variable_tracking_on_the_bundled_model(bundled_path: Path, tmp_path: Path) -> None:
    config = load_config(EXAMPLES / "variable_tracking.yaml", {**SETTINGS, "limit": 2})
    rows = _check_run("variable_tracking", run_experiment(config, run_dir=tmp_path / "run"), 2)
    assert len(rows) == 2 * 3 + 2  # two cases at three depths, and their controls
    cases = {case.case_id: case for case in get_task("variable_tracking").cases()}
    for row in rows:
        case = cases[row["case_id"].removesuffix("~absent")]
        case = case.absent_control() if row["control"] else case
        [again] = score_parts(case, Completion(text=row["response"]))
        assert (again.outcome, again.category) == (row["outcome"], row["category"]), row["response"]
        if not row["control"]:
            report = json.loads(row["claim_report"])
            assert set(report["missing"]) <= set(case.oracle.items)


def test_multikey_on_the_bundled_model(bundled_path: Path, tmp_path: Path) -> None:
    config = load_config(EXAMPLES / "multikey.yaml", {**SETTINGS, "limit": 2, "questions_per_prompt": 3})
    family = get_task("multikey", config)
    rows = _check_run("multikey", run_experiment(config, run_dir=tmp_path / "run"), 2)
    bundles = {case.case_id: case for case in family.cases()}
    probes = [row for row in rows if not row["control"]]
    assert len(probes) == 2 * 3 and len(rows) == 2 * 2 * 3
    for row in probes:
        bundle = bundles[row["instance_id"]]
        part = dict((p.case_id, p) for _, p in bundle.scored_parts())[row["case_id"]]
        assert (row["depth"], row["position"]) == part.at_depth
        [span] = json.loads(row["spans"])
        assert abs(span["depth"] - row["depth"]) <= 0.1
    for call in {row["call_id"] for row in rows}:
        group = [row for row in rows if row["call_id"] == call]
        bundle = bundles[group[0]["instance_id"].removesuffix("~absent")]
        case = bundle.absent_control() if group[0]["control"] else bundle
        again = score_parts(case, Completion(text=group[0]["response"]))
        by_id = {part.case_id: result for (_, part), result in zip(case.scored_parts(), again, strict=True)}
        for row in group:
            assert (by_id[row["case_id"]].outcome, by_id[row["case_id"]].category) == (
                row["outcome"],
                row["category"],
            )
    cells = [
        cell for cell in load_summary(tmp_path / "run").model_dump()["cells"] if cell["task"] == "multikey"
    ]
    assert sorted(cell["depth"] for cell in cells) == [0.0, 0.5, 1.0]
    assert all((cell["n"], cell["instances"]) == (2, 2) for cell in cells)


def test_aggregation_on_the_bundled_model(bundled_path: Path, tmp_path: Path) -> None:
    # the word lines take about 150-230 of the bundled model's tokens: 640 leaves filler around them
    config = load_config(EXAMPLES / "aggregation.yaml", {**SETTINGS, "limit": 2, "lengths": [640]})
    rows = _check_run("aggregation", run_experiment(config, run_dir=tmp_path / "run"), 2, 640)
    assert len(rows) == 2 * 3 + 2  # a common-words and a frequent-words case at three depths, controls
    cases = {case.case_id: case for case in get_task("aggregation").cases()}
    for row in rows:
        case = cases[row["case_id"].removesuffix("~absent")]
        case = case.absent_control() if row["control"] else case
        [again] = score_parts(case, Completion(text=row["response"]))
        assert (again.outcome, again.category) == (row["outcome"], row["category"]), row["response"]
        if not row["control"]:
            assert len(json.loads(row["spans"])) == len(case.evidence)
            report = json.loads(row["claim_report"])
            assert partial_credit(row)["recall"] == 1 - len(report["missing"]) / len(case.oracle.items)
    cells = sorted(
        (
            cell
            for cell in load_summary(tmp_path / "run").model_dump()["cells"]
            if cell["task"] == "aggregation"
        ),
        key=lambda cell: cell["depth"],
    )
    assert [cell["depth"] for cell in cells] == [0.0, 0.5, 1.0]
    for cell in cells:
        assert 0.0 <= cell["mean_recall"] <= 1.0 and cell["n"] == 2
    assert cells[0]["region"][0] < cells[1]["region"][0] < cells[2]["region"][0]


def test_coreference_on_the_bundled_model(bundled_path: Path, tmp_path: Path) -> None:
    # two calls: one chat of 640 tokens with the asked reply at its midpoint, and its control
    settings = {**SETTINGS, "limit": 1, "lengths": [640], "depths": [0.5]}
    settings["generation"] = {"temperature": 0.0, "max_tokens": 64, "seed": 0}
    config = load_config(EXAMPLES / "coreference.yaml", settings)
    rows = _check_run("coreference", run_experiment(config, run_dir=tmp_path / "run"), 1, 640)
    assert len(rows) == 2 and {row["control"] for row in rows} == {0, 1}
    (case,) = get_task("coreference").cases()[:1]
    for row in rows:
        scored = case.absent_control() if row["control"] else case
        [again] = score_parts(scored, Completion(text=row["response"]))
        assert again.outcome == row["outcome"], row["response"]
        if not row["control"]:
            # the stored case also knows the replies around the asked one (its layout's neighbours)
            assert row["category"] == again.category or row["category"] == "neighbour"
            assert again.claims is not None
            assert partial_credit(row)["similarity"] == again.claims.similarity
            (span,) = [
                s for s in json.loads(row["spans"]) if s["evidence_id"] == f"reply-{case.slices[0][1]}"
            ]
            assert abs(span["depth"] - 0.5) <= 0.1
    (cell,) = [
        cell for cell in load_summary(tmp_path / "run").model_dump()["cells"] if cell["task"] == "coreference"
    ]
    assert cell["n"] == 1 and 0.0 <= cell["mean_similarity"] <= 1.0
