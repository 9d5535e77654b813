"""``multihop``: a chain of two or three needles, each naming the next; the answer is only in the
last hop, which sits at the grid's depth (the others follow the placement rule).

The first 16 cases are written in ``tasks/data/multihop.yaml``; more (``cases_per_task``) are
generated from the chains below, every person, place and value invented and used once."""

from __future__ import annotations

from rotscope._util.text import mentions
from rotscope.tasks import DEFAULT_CASES, register_counted_cases
from rotscope.tasks.casefile import load_records
from rotscope.tasks.invented import MAX_CASES, Inventor, check_count
from rotscope.types import Case, Evidence, Oracle

_CHAINS = (
    # hops and question over {a} (a person), {place}, {b} (a person) and {answer} (a label)
    (("{a}'s locker code is held by the night guard of the {place} depot.",
      "The night guard of the {place} depot is {b}.",
      "{b} keeps every code held for others in the blue ledger, where the one for {a} reads {answer}."),
     "What is {a}'s locker code?"),
    (("The {place} bakery buys its flour from the mill run by {b}.",
      "The mill run by {b} stamps every sack it sells with the batch mark {answer}."),
     "What batch mark is stamped on the flour sacks the {place} bakery buys?"),
    (("The parcel for {a} was handed to the courier who covers the {place} route.",
      "The courier who covers the {place} route is {b}.",
      "{b} signs every delivery note with the depot stamp {answer}."),
     "Which depot stamp is on the delivery note of the parcel for {a}?"),
    (("The {place} choir rehearses in the hall that {b} manages.",
      "The hall that {b} manages has its spare key in the box marked {answer}."),
     "Which box holds the spare key of the hall where the {place} choir rehearses?"),
)  # fmt: skip


def _case(case_id: str, hops: list[str], question: str, answer: str) -> Case:
    if not 2 <= len(hops) <= 3 or not mentions(hops[-1], answer):
        raise ValueError(f"multihop case {case_id}: needs 2-3 hops with the answer in the last")
    if any(mentions(text, answer) for text in [*hops[:-1], question]):
        raise ValueError(f"multihop case {case_id}: the answer appears before the last hop")
    evidence = [Evidence(f"hop-{i}", hop, "support") for i, hop in enumerate(hops[:-1], start=1)]
    evidence.append(Evidence(f"hop-{len(hops)}", hops[-1], "answer"))
    return Case(
        case_id=case_id,
        task="multihop",
        evidence=tuple(evidence),
        question=question,
        oracle=Oracle(answer=answer),
        guarded=(answer,),
    )


def _generated(written: list[Case], count: int) -> list[Case]:
    inventor = Inventor(
        "multihop", (t for case in written for t in (case.question, *(e.text for e in case.evidence)))
    )
    cases = []
    for index in range(count):
        hops, question = _CHAINS[index % len(_CHAINS)]
        names = {
            "a": inventor.person(),
            "place": inventor.name(),
            "b": inventor.person(),
            "answer": inventor.label(),
        }
        cases.append(
            _case(
                f"multihop-{len(written) + index + 1:02d}",
                [hop.format(**names) for hop in hops],
                question.format(**names),
                names["answer"],
            )
        )
    return cases


@register_counted_cases("multihop", MAX_CASES)
def build_multihop_cases(count: int = DEFAULT_CASES) -> list[Case]:
    check_count("multihop", count, MAX_CASES, "generated names and values stay unique")
    written = [
        _case(record["id"], [str(hop) for hop in record["hops"]], record["question"], str(record["answer"]))
        for record in load_records("multihop")
    ]
    return written[:count] + _generated(written, max(0, count - len(written)))
