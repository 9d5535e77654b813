"""Case-file runs end to end with scripted fake models: slices and claim reports in the rows and
exports, capability failures (wrong with the evidence alone) apart from positional ones, forbidden
claims flagged high risk, and the summary valid against its schema."""

from __future__ import annotations

import json
import re
import sqlite3
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
from rich.console import Console

from rotscope import load_summary
from rotscope.backends.fake import FakeBackend
from rotscope.execution.workflows.runner import run_experiment
from rotscope.report.export import export_rows
from rotscope.report.html import render_report
from rotscope.report.terminal import print_summary
from rotscope.store import MIGRATIONS, RunStore
from rotscope.types import GenerateRequest
from tests.support.case_helpers import case_config

RECORDS: list[dict[str, Any]] = [
    {
        "case_id": "crane-load",
        "question": "What is the maximum load of the Hollin crane?",
        "documents": [
            {"id": "spec-4", "text": "The Hollin crane lifts at most 38 tonnes.", "claims": ["t38"]}
        ],
        "distractors": [{"id": "spec-5", "text": "The Hollis crane lifts at most 52 tonnes."}],
        "claims": {"t38": ["38 tonnes"], "t52": ["52 tonnes"]},
        "required_claims": ["t38"],
        "forbidden_claims": ["t52"],
        "slices": {"risk": "high"},
    },
    {
        "case_id": "tunnel-year",
        "question": "In which year did the Vellor tunnel open?",
        "documents": [{"id": "hist-2", "text": "The Vellor tunnel opened in 1942.", "claims": ["y1942"]}],
        "claims": {"y1942": ["1942"]},
        "required_claims": ["y1942"],
        "cite": True,
        "slices": {"risk": "low"},
    },
]


def scripted(request: GenerateRequest) -> str:
    """Crane: right with the evidence alone, else the distractor's value (forbidden). Tunnel:
    always the year, but citing a document that does not exist."""
    user = request.messages[-1]["content"]
    context = user.split("<context>", 1)[1].split("</context>", 1)[0]
    padded = len([line for line in context.splitlines() if line.strip()]) > 2
    if "Hollin crane" in user:
        return "52 tonnes" if padded else "38 tonnes"
    return "1942 [hist-9]"


def _run(tmp_path: Path) -> Path:
    config = case_config(tmp_path, RECORDS, lengths=[300], depths=["beginning", "end"])
    return run_experiment(config, run_dir=tmp_path / "run", backend=FakeBackend("scripted", scripted))


def test_rows_carry_slices_and_claim_reports(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    store = RunStore.open_existing(run_dir)
    rows = store.rows()
    store.close()
    probes = [row for row in rows if not row["control"]]
    assert {json.loads(row["slices"])["risk"] for row in probes} == {"high", "low"}
    crane = [row for row in probes if row["case_id"] == "crane-load"]
    assert all(row["category"] == "forbidden_claim" for row in crane)
    assert all(json.loads(row["claim_report"])["forbidden"] == ["t52"] for row in crane)
    tunnel = [row for row in probes if row["case_id"] == "tunnel-year"]
    assert all(row["category"] == "wrong_citation" for row in tunnel)
    assert all(json.loads(row["claim_report"])["wrong_citations"] == ["hist-9"] for row in tunnel)
    output = tmp_path / "rows.jsonl"
    export_rows(run_dir, "jsonl", output, stdout=None)  # type: ignore[arg-type]
    exported = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert {row["slices"] for row in exported} >= {'{"risk": "high"}', '{"risk": "low"}'}
    assert any(row["claim_report"] and "hist-9" in row["claim_report"] for row in exported)


def test_summary_separates_capability_from_positional_failures(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    typed = load_summary(run_dir)
    summary = typed.model_dump()
    schema = json.loads(
        resources.files("rotscope").joinpath("schemas", "summary.schema.json").read_text(encoding="utf-8")
    )
    jsonschema.validate(summary, schema, cls=jsonschema.Draft202012Validator)
    cases = {entry["case_id"]: entry for entry in summary["cases"]}
    assert set(cases) == {"crane-load", "tunnel-year"}
    crane, tunnel = cases["crane-load"], cases["tunnel-year"]
    assert crane["evidence_only"] == 1.0 and crane["positional_failure"] and not crane["capability_failure"]
    assert crane["forbidden_claims"] == 2 and crane["worst"]["accuracy"] == 0.0
    assert [layout["position"] for layout in crane["layouts"]] == ["beginning", "end"]
    assert (
        tunnel["evidence_only"] == 0.0 and tunnel["capability_failure"] and not tunnel["positional_failure"]
    )
    assert tunnel["wrong_citations"] == ["hist-9"] and tunnel["slices"] == {"risk": "low"}
    assert summary["capability_failures"] == ["tunnel-year"]
    assert summary["positional_failures"] == ["crane-load"]
    assert summary["high_risk"] == 2
    assert summary["evidence_only"] == [
        {"task": "cases", "n": 2, "instances": 2, "correct": 1, "incorrect": 1, "abstained": 0, "errors": 0,
         "pending": 0, "judged": 0, "accuracy": 0.5}
    ]  # fmt: skip
    # evidence-only rows count neither in the grid's cells nor among the evidence-absent controls
    assert sum(cell["n"] for cell in summary["cells"]) == 4
    assert all(control["n"] == 2 for control in summary["controls"])
    console = Console(record=True, width=200)
    print_summary(typed, console)
    text = console.export_text()
    assert "capability failures (wrong even with the evidence alone): tunnel-year" in text
    assert re.search(r"positional failures .*crane-load \(worst beginning at 300 tokens\)", text)
    assert "high risk: 2 answers state a forbidden claim, in crane-load" in text
    html = render_report(run_dir)
    assert "capability failure" in html and "High risk:" in html and "hist-9" in html


def test_an_offset_is_one_cell_per_length(tmp_path: Path) -> None:
    config = case_config(tmp_path, RECORDS, lengths=[300, 400], depths=["@20", "end"], evidence_only=False)
    run_dir = run_experiment(config, run_dir=tmp_path / "run", backend=FakeBackend("scripted", scripted))
    store = RunStore.open_existing(run_dir)
    depths = {
        row["depth"] for row in store.rows() if row["position"] == "@20" and row["length_target"] == 300
    }
    store.close()
    assert len(depths) == 2  # the two cases reach @20 at slightly different fractions
    cells = [(cell["length"], cell["position"]) for cell in load_summary(run_dir).model_dump()["cells"]]
    assert sorted(cells) == [(300, "@20"), (300, "end"), (400, "@20"), (400, "end")]
    offset = next(
        c
        for c in load_summary(run_dir).model_dump()["cells"]
        if c["position"] == "@20" and c["length"] == 300
    )
    assert offset["n"] == 2 and offset["depth"] == sum(depths) / 2


def test_a_run_store_of_the_first_schema_gains_the_new_columns(tmp_path: Path) -> None:
    path = tmp_path / "run.db"
    with sqlite3.connect(path) as db:
        db.executescript(MIGRATIONS[0][1])
        db.execute("PRAGMA user_version = 1")
    store = RunStore(path)
    columns = {row[1] for row in store._db.execute("PRAGMA table_info(items)")}
    store.close()
    assert {"slices", "claim_report"} <= columns
