"""``competitive``: one true needle among decoys of the same kind (other entities' values), each
at its own depth; the question is broad, so the model must pick the right one."""

from __future__ import annotations

from rotscope.tasks import register_cases
from rotscope.tasks.casefile import load_records
from rotscope.types import Case, Evidence, Oracle


@register_cases("competitive")
def build_competitive_cases() -> list[Case]:
    cases = []
    for record in load_records("competitive"):
        answer = str(record["answer"])
        decoys = [(str(d["text"]), str(d["value"])) for d in record["decoys"]]
        values = [answer, *(value for _, value in decoys)]
        if len(set(values)) != len(values) or answer not in record["needle"]:
            raise ValueError(
                f"competitive case {record['id']}: values must be distinct and the answer in the needle"
            )
        evidence = [Evidence("needle", record["needle"], "answer")]
        evidence += [Evidence(f"decoy-{i}", text, "decoy") for i, (text, _) in enumerate(decoys, start=1)]
        cases.append(
            Case(
                case_id=record["id"],
                task="competitive",
                evidence=tuple(evidence),
                question=record["question"],
                oracle=Oracle(answer=answer, traps=tuple(("decoy", value) for _, value in decoys)),
                guarded=tuple(values),
            )
        )
    return cases
