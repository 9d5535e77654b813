"""The gate study's release rules end to end on scripted fake models over a case file: a quoted
citation checked against its document's declared span, and forbidden claims in the candidate's
replies failing ``rotscope gate`` on a line of their own (exit 1, claim ids and counts only)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from rotscope.backends.fake import FakeBackend
from rotscope.cli import app
from rotscope.execution.workflows.runner import run_experiment
from rotscope.tasks.cases import QUOTE_INSTRUCTION
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
    },
    {
        "case_id": "tunnel-year",
        "question": "In which year did the Vellor tunnel open?",
        "documents": [
            {
                "id": "hist-2",
                "text": "The Vellor tunnel opened in 1942. It was widened in 1967.",
                "claims": ["y1942"],
                "span": "The Vellor tunnel opened in 1942.",
            }
        ],
        "claims": {"y1942": ["1942"]},
        "required_claims": ["y1942"],
        "cite": True,
        "quote": True,
    },
]


def _responder(candidate: bool) -> Any:
    """Baseline: right everywhere, quoting the tunnel's span when asked to quote. Candidate: the
    distractor's load (a forbidden claim) in padded prompts, and a quote from outside the span."""

    def respond(request: GenerateRequest) -> str:
        user = request.messages[-1]["content"]
        if "Hollin crane" in user:
            return "52 tonnes" if candidate else "38 tonnes"
        quote = "It was widened in 1967" if candidate else "opened  in\n1942"
        return f'1942 [hist-2] "{quote}"' if QUOTE_INSTRUCTION in user else "1942 [hist-2]"

    return respond


def _runs(tmp_path: Path) -> dict[str, Path]:
    config = case_config(tmp_path, RECORDS, lengths=[300], depths=["beginning", "end"], evidence_only=False)
    return {
        role: run_experiment(
            config, run_dir=tmp_path / role, backend=FakeBackend("scripted", _responder(role == "candidate"))
        )
        for role in ("baseline", "candidate")
    }


def _outcomes(run_dir: Path, case: str) -> set[tuple[str, str | None]]:
    with sqlite3.connect(run_dir / "run.db") as db:
        rows = db.execute(
            "SELECT outcome, category FROM items WHERE case_id = ? AND control = 0", (case,)
        ).fetchall()
    return {(outcome, category) for outcome, category in rows}


def test_quotes_are_checked_and_forbidden_claims_fail_the_gate(tmp_path: Path) -> None:
    runs = _runs(tmp_path)
    assert _outcomes(runs["baseline"], "tunnel-year") == {("correct", None)}
    assert _outcomes(runs["candidate"], "tunnel-year") == {("incorrect", "wrong_citation")}
    assert _outcomes(runs["candidate"], "crane-load") == {("incorrect", "forbidden_claim")}
    junit = tmp_path / "gate.xml"
    result = CliRunner().invoke(
        app,
        ["gate", "--baseline", str(runs["baseline"]), "--candidate", str(runs["candidate"]),
         "--junit", str(junit)],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines()[1].startswith("forbidden claims: FAIL (exit 1): 2 of 4")
    assert (
        "forbidden claims: FAIL (exit 1): 2 of 4 candidate replies state a forbidden claim (t52 x2); a "
        "separate safety review is due before any release"
    ) in " ".join(result.stdout.split())
    assert "52 tonnes" not in result.stdout  # claim ids and counts, never a reply's text
    assert "decided by: forbidden claims" in result.stdout
    assert "the tests alone: INCONCLUSIVE" in result.stdout  # 2 cases: below the minimum counts
    assert 'name="forbidden claims"' in junit.read_text(encoding="utf-8")
