"""``competitive``: one true needle among decoys of the same kind (other entities' values), each
at its own depth; the question is broad, so the model must pick the right one.

The first 16 cases are written in ``tasks/data/competitive.yaml``; more (``cases_per_task``) are
generated from the templates below, every entity and value invented and used once."""

from __future__ import annotations

from rotscope.tasks import DEFAULT_CASES, register_counted_cases
from rotscope.tasks.casefile import load_records
from rotscope.tasks.invented import MAX_CASES, Inventor, check_count
from rotscope.types import Case, Evidence, Oracle

DECOYS = 3
_TEMPLATES = (
    # (statement of {entity} and {value}, question about {entity}, value kind)
    ("The {entity} cache backend falls back to a default timeout of {value} seconds.",
     "What default timeout did you notice in the {entity} backends?", "number"),
    ("The {entity} queue worker holds at most {value} pending jobs before it sheds load.",
     "What pending-job limit did you notice for the {entity} workers?", "number"),
    ("The {entity} build agent is registered under the runner tag {value}.",
     "Which runner tag did you see for the {entity} build agents?", "label"),
    ("The {entity} lab freezer is rated to hold {value} sample boxes.",
     "What box capacity did you notice for the {entity} freezers?", "number"),
    ("The {entity} print server sends its jobs to the spool named {value}.",
     "Which spool did you notice for the {entity} print servers?", "label"),
)  # fmt: skip


def _case(case_id: str, needle: str, question: str, answer: str, decoys: list[tuple[str, str]]) -> Case:
    values = [answer, *(value for _, value in decoys)]
    if len(set(values)) != len(values) or answer not in needle:
        raise ValueError(f"competitive case {case_id}: values must be distinct and the answer in the needle")
    evidence = [Evidence("needle", needle, "answer")]
    evidence += [Evidence(f"decoy-{i}", text, "decoy") for i, (text, _) in enumerate(decoys, start=1)]
    return Case(
        case_id=case_id,
        task="competitive",
        evidence=tuple(evidence),
        question=question,
        oracle=Oracle(answer=answer, traps=tuple(("decoy", value) for _, value in decoys)),
        guarded=tuple(values),
    )


def _generated(written: list[Case], count: int) -> list[Case]:
    texts = (text for case in written for text in (case.question, *(e.text for e in case.evidence)))
    inventor = Inventor("competitive", texts)
    cases = []
    for index in range(count):
        statement, question, kind = _TEMPLATES[index % len(_TEMPLATES)]
        entities = [inventor.name() for _ in range(DECOYS + 1)]
        values = [inventor.label() if kind == "label" else str(inventor.number(100, 9999)) for _ in entities]
        texts_of = [statement.format(entity=e, value=v) for e, v in zip(entities, values, strict=True)]
        cases.append(
            _case(
                f"competitive-{len(written) + index + 1:02d}",
                texts_of[0],
                question.format(entity=entities[0]),
                values[0],
                list(zip(texts_of[1:], values[1:], strict=True)),
            )
        )
    return cases


@register_counted_cases("competitive", MAX_CASES)
def build_competitive_cases(count: int = DEFAULT_CASES) -> list[Case]:
    check_count("competitive", count, MAX_CASES, "generated names and values stay unique")
    written = [
        _case(
            record["id"],
            record["needle"],
            record["question"],
            str(record["answer"]),
            [(str(d["text"]), str(d["value"])) for d in record["decoys"]],
        )
        for record in load_records("competitive")
    ]
    return written[:count] + _generated(written, max(0, count - len(written)))
