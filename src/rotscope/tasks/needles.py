"""Single-needle cases stored as YAML in ``tasks/data``: one evidence line, one question."""

from __future__ import annotations

from rotscope.tasks.casefile import load_records
from rotscope.types import Case, Evidence, Oracle


def load_needle_cases(task: str) -> list[Case]:
    cases = []
    for record in load_records(task):
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
