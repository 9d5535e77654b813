"""Perturb a small generated package, then ask the bundled model about a line of it: the whole
path from ``rotscope perturb`` to scored rows, with the evidence spanned in the model's tokens."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from rotscope.config.experiment import build_config
from rotscope.execution.workflows.runner import run_experiment
from rotscope.filler.perturb import PerturbMap, perturb_tree

BASE = '''"""Cache backends."""


class BaseCache:
    def __init__(self, params):
        timeout = params.get("timeout", params.get("TIMEOUT", 300))
        self.default_timeout = timeout

    def get_backend_timeout(self, timeout=None):
        if timeout is None:
            timeout = self.default_timeout
        return timeout
'''


def _helpers(number: int) -> str:
    return "\n".join(
        f"def helper_{number}_{i}(items, limit={i + 2}):\n"
        f"    # trim the list of items to the limit, keeping order\n"
        f"    return [item for item in items if item][:limit]\n\n"
        for i in range(12)
    )


def test_perturbed_code_question_on_the_bundled_model(bundled_path: Path, tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "cache").mkdir(parents=True)
    (source / "cache" / "base.py").write_text(BASE, encoding="utf-8")
    for number in range(4):
        (source / f"helpers{number}.py").write_text(_helpers(number), encoding="utf-8")
    spec = PerturbMap(
        renames={
            "BaseCache": "BenderCache",
            "timeout": "nibbler_ttl",
            "TIMEOUT": "NIBBLER",
            "params": "fry_opts",
        },
        literals={"300": 719},
    )
    report = perturb_tree(source, spec, tmp_path / "out")
    assert report.literals["300 -> 719"] == 1 and report.renames["timeout"] == 7
    config = build_config(
        {
            "name": "codebase-bundled",
            "score": "accuracy",  # the replies only (test_likelihood_bundled reads likelihoods)
            "tasks": ["codebase"],
            "lengths": [300],
            "depths": [0.0, 1.0],
            "controls": False,
            "filler": {"kind": "code", "path": str(tmp_path / "out")},
            "codebase": {
                "cases": [
                    {
                        "id": "ttl",
                        "question": "What default value does the Bender cache use for nibbler_ttl?",
                        "answer": 719,
                        "decoys": [12],  # a value that stands in the tree (helpers: limit=12)
                        "evidence": {"file": "cache/base.py", "line_contains": "NIBBLER"},
                    }
                ]
            },
            "out": str(tmp_path / "run"),
        }
    )
    run_dir = run_experiment(config)
    with sqlite3.connect(run_dir / "run.db") as db:
        rows = db.execute("SELECT status, outcome, prompt_tokens, spans FROM items").fetchall()
    assert len(rows) == 2
    for status, outcome, prompt_tokens, spans in rows:
        assert status == "ok" and outcome in ("correct", "incorrect", "abstained")
        assert abs(prompt_tokens - 300) <= 15
        (span,) = json.loads(spans)
        assert span["text"] == 'nibbler_ttl = fry_opts.get("nibbler_ttl", fry_opts.get("NIBBLER", 719))'
