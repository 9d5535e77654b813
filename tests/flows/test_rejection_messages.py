"""A filler file holding a case's answer ("45 days") on fake/lexical: the run says, in plain words
and once per cause, that the case's layouts were rejected and that the case is not measured, and
keeps every retry in rejections.jsonl; a case without documents is planned once per length, and a
plan frozen when it ran at every depth still runs unchanged."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest

from rotscope.backends import create_backend
from rotscope.config.experiment import load_config
from rotscope.plan.manifest import build_manifest, write_manifest
from rotscope.plan.workitems import build_plan
from tests.support.cli_helpers import invoke

LINES = (
    "The harbor office keeps a ledger of every vessel that enters after dusk.",
    "Entries older than a season are copied to the archive.",
    "The pilot's name and the berth assigned are written beside the tide.",
    "Fishing boats leave before dawn and return by noon most days.",
)
CASES = [
    {"case_id": "renewal", "question": "How many days before renewal must notice be given?",
     "documents": [{"id": "c1", "text": "Notice of renewal must be given 45 days in advance.",
                    "claims": ["d45"]}],
     "claims": {"d45": ["45 days"]}, "required_claims": ["d45"]},
    {"case_id": "refund", "question": "How many days does a customer have to request a refund?",
     "documents": [{"id": "p7", "text": "Refunds are accepted within 23 days.", "claims": ["w23"]}],
     "claims": {"w23": ["23 days"]}, "required_claims": ["w23"]},
    {"case_id": "unknown", "question": "What is the name of the harbor master's cat?", "documents": [],
     "abstain": True, "claims": {}, "required_claims": []},
]  # fmt: skip


@pytest.fixture
def experiment(tmp_path: Path) -> Path:
    draw = random.Random(1)
    lines = [draw.choice(LINES) for _ in range(400)]
    for index in range(0, 400, 25):
        lines[index] = "Most contracts here renew after 45 days of notice."
    (tmp_path / "filler").mkdir()
    (tmp_path / "filler" / "a.txt").write_text("\n\n".join(lines[:200]) + "\n")
    (tmp_path / "filler" / "b.txt").write_text("\n\n".join(lines[200:]) + "\n")
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(case) + "\n" for case in CASES))
    path = tmp_path / "exp.yaml"
    path.write_text(
        "name: rej\nmodel: fake/lexical\ntasks: [cases]\ncases: cases.jsonl\nlengths: [512, 1024]\n"
        "depths: [beginning, midpoint, end]\nfiller: {kind: text, glob: 'filler/*.txt'}\n"
    )
    return path


def _rows(run: Path) -> list[tuple[str, str, int]]:
    with sqlite3.connect(run / "run.db") as db:
        return list(db.execute("SELECT case_id, position, length_target FROM items ORDER BY case_id"))


def test_a_competing_value_in_the_filler_is_said_once_with_its_count(
    experiment: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    result = invoke("run", experiment, "--out", run)
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())  # rich may wrap a long line
    files = f"{experiment.parent / 'filler' / 'a.txt'}, {experiment.parent / 'filler' / 'b.txt'}"
    cause = f"the filler contains '45 days' (in {files}), a competing value"
    assert f"8 layouts of case renewal rejected: {cause} — remove it or exclude the file" in output
    assert "case renewal (cases) is not measured: the verifier rejected all 8 of its layouts" in output
    assert f"every rejection in full (retries, layouts): {run / 'rejections.jsonl'}" in output
    assert "Layout(" not in output and "sits at depth" not in output
    records = [json.loads(line) for line in (run / "rejections.jsonl").read_text().splitlines()]
    assert len(records) == 8
    assert {record["cause"] for record in records} == {cause}
    assert all("Layout(length_tokens=" in record["reason"] for record in records)  # the detail is kept
    assert "512 tokens, evidence absent" in {record["layout"] for record in records}
    assert not any(case_id == "renewal" for case_id, _, _ in _rows(run))


def test_the_dry_run_lists_each_rejected_layout(experiment: Path) -> None:
    result = invoke("run", experiment, "--dry-run")
    assert result.exit_code == 0, result.output
    lines = [line.strip() for line in result.output.splitlines()]
    files = f"{experiment.parent / 'filler' / 'a.txt'}, {experiment.parent / 'filler' / 'b.txt'}"
    cause = f"the filler contains '45 days' (in {files}), a competing value"
    expected = f"case renewal, 1,024 tokens at the midpoint: {cause}"
    assert expected in lines
    assert sum(line.startswith("case renewal, ") for line in lines) == 8


def test_a_case_without_documents_has_one_prompt_per_length(experiment: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert invoke("run", experiment, "--out", run).exit_code == 0
    rows = _rows(run)
    assert sorted(row for row in rows if row[0].startswith("unknown")) == [
        ("unknown", "absent", 512),
        ("unknown", "absent", 1024),
    ]
    config = load_config(experiment)
    plan = build_plan(config, create_backend(config))
    assert len(plan.items) == len({item.prompt.token_ids for item in plan.items}) == 10
    before = build_plan(config, create_backend(config), evidence_less_once=False)
    assert (len(before.items), len({item.prompt.token_ids for item in before.items})) == (16, 10)


def test_a_plan_frozen_with_every_depth_runs_unchanged(experiment: Path, tmp_path: Path) -> None:
    config = load_config(experiment)
    backend = create_backend(config)
    frozen = tmp_path / "old.plan.json"
    write_manifest(
        build_manifest(config, build_plan(config, backend, evidence_less_once=False), backend), frozen
    )
    run = tmp_path / "run"
    result = invoke("run", experiment, "--plan", frozen, "--out", run)
    assert result.exit_code == 0, result.output
    unknown = sorted(row for row in _rows(run) if row[0].startswith("unknown"))
    assert len(unknown) == 8 and ("unknown~absent", "absent", 512) in unknown
