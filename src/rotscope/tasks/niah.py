"""``niah``: the lexical needle. The question repeats the needle's words, so string matching
finds it; useful as the saturated baseline that harder probes are compared with.

The first 16 cases are written in ``tasks/data/niah.yaml``; more (``cases_per_task``) are generated
from the templates below with invented names and labels, each answer guarded from the filler."""

from __future__ import annotations

from rotscope.tasks import DEFAULT_CASES, register_counted_cases
from rotscope.tasks.invented import MAX_CASES, Inventor, check_count
from rotscope.tasks.needles import load_needle_cases
from rotscope.types import Case, Evidence, Oracle

_TEMPLATES = (
    # (needle, question, answer kind): {place} is an invented name, {answer} a person or a label
    ("The access code for the {place} archive is {answer}.",
     "What is the access code for the {place} archive?", "label"),
    ("The chief cartographer of the {place} Survey Office is {answer}.",
     "Who is the chief cartographer of the {place} Survey Office?", "person"),
    ("The shipping crate bound for {place} Port carries the label {answer}.",
     "What label does the shipping crate bound for {place} Port carry?", "label"),
    ("The lighthouse keeper on {place} Island is {answer}.",
     "Who is the lighthouse keeper on {place} Island?", "person"),
    ("The founder of the {place} Glassworks was {answer}.",
     "Who was the founder of the {place} Glassworks?", "person"),
    ("The ferry to {place} Harbour departs from pier {answer}.",
     "From which pier does the ferry to {place} Harbour depart?", "label"),
)  # fmt: skip


def generated_needles(written: list[Case], count: int) -> list[Case]:
    """``count`` cases after the written ones, numbered on from them."""
    inventor = Inventor("niah", (text for case in written for text in (case.question, case.evidence[0].text)))
    cases = []
    for index in range(count):
        needle, question, kind = _TEMPLATES[index % len(_TEMPLATES)]
        place = inventor.name()
        answer = inventor.person() if kind == "person" else inventor.label()
        cases.append(
            Case(
                case_id=f"niah-{len(written) + index + 1:02d}",
                task="niah",
                evidence=(Evidence(evidence_id="needle", text=needle.format(place=place, answer=answer)),),
                question=question.format(place=place),
                oracle=Oracle(answer=answer),
                guarded=(answer,),
            )
        )
    return cases


@register_counted_cases("niah", MAX_CASES)
def build_niah_cases(count: int = DEFAULT_CASES) -> list[Case]:
    check_count("niah", count, MAX_CASES, "generated names and values stay unique")
    written = load_needle_cases("niah")
    return written[:count] + generated_needles(written, max(0, count - len(written)))
