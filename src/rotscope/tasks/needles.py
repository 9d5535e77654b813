"""Single-needle cases stored as YAML in ``tasks/data``: one evidence line, one question."""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

from rotscope.types import Case, Evidence, Oracle


def load_needle_cases(task: str) -> list[Case]:
    text = resources.files("rotscope.tasks").joinpath("data", f"{task}.yaml").read_text(encoding="utf-8")
    records: list[dict[str, Any]] = yaml.safe_load(text)
    cases = []
    for record in records:
        answer = str(record["answer"])
        if answer not in record["needle"]:
            raise ValueError(f"{task} case {record['id']}: answer {answer!r} is not in its needle")
        cases.append(
            Case(
                case_id=record["id"],
                task=task,
                evidence=(Evidence(evidence_id="needle", text=record["needle"]),),
                question=record["question"],
                oracle=Oracle(answer=answer, aliases=tuple(str(a) for a in record.get("aliases", ()))),
            )
        )
    return cases
