"""Case files and plans for unit tests: two small cases (one multi-document with a distractor,
one evidence-absent) over a corpus of invented words, planned with the fake model."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.config.experiment import ExperimentConfig, build_config
from rotscope.plan.workitems import Plan, build_plan

SYLLABLES = ("zu", "qa", "xo", "vy", "ku", "pim", "dax", "fol", "wex", "jor", "ibb", "oth")
CASES = [
    {
        "case_id": "server-code",
        "question": "What is the current Tamsin server room code?",
        "documents": [
            {
                "id": "memo-3",
                "text": "Memo of 3 March: the Tamsin server room code is 4471.",
                "claims": ["old"],
            },
            {
                "id": "memo-9",
                "text": "Memo of 9 May, replacing earlier memos: the code is 8820.",
                "claims": ["new"],
            },
        ],
        "distractors": [{"id": "memo-1", "text": "The Tamsin canteen opens at noon."}],
        "claims": {"new": ["8820"], "old": ["4471"]},
        "required_claims": ["new"],
        "forbidden_claims": ["old"],
        "slices": {"risk": "high", "hops": "multi"},
    },
    {
        "case_id": "harbour-master",
        "question": "Who is the Sorrel Bay harbour master?",
        "distractors": [{"id": "port-2", "text": "The harbour master of Pellow Bay is Garth Imrie."}],
        "claims": {"imrie": ["Garth Imrie"]},
        "forbidden_claims": ["imrie"],
        "abstain": True,
        "slices": {"risk": "low", "hops": "single"},
    },
]
POSITIONS = ["beginning", "early-middle", "midpoint", "late-middle", "end"]


def nonsense_corpus(folder: Path) -> Path:
    rng = random.Random(0)
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(3):
        lines = (" ".join(rng.choice(SYLLABLES) + rng.choice(SYLLABLES) for _ in range(4)) for _ in range(80))
        (folder / f"doc{number}.txt").write_text(".\n".join(lines) + ".\n", encoding="utf-8")
    return folder


def case_config(tmp_path: Path, records: list[dict[str, Any]] = CASES, **fields: Any) -> ExperimentConfig:
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    data: dict[str, Any] = {
        "model": "fake/lexical",
        "tasks": ["cases"],
        "cases": str(cases),
        "lengths": [300, 600],
        "depths": POSITIONS,
        "evidence_only": True,
        "filler": {"kind": "text", "glob": str(nonsense_corpus(tmp_path / "corpus") / "*.txt")},
    }
    data.update(fields)
    return build_config(data)


def plan_for(config: ExperimentConfig, backend: FakeBackend | None = None) -> Plan:
    return build_plan(config, backend or FakeBackend("lexical", lexical_responder()))
