"""``multihop``: a chain of two or three needles, each naming the next; the answer is only in the
last hop, which sits at the grid's depth (the others follow the placement rule)."""

from __future__ import annotations

from rotscope._util.text import mentions
from rotscope.tasks import register_cases
from rotscope.tasks.casefile import load_records
from rotscope.types import Case, Evidence, Oracle


@register_cases("multihop")
def build_multihop_cases() -> list[Case]:
    cases = []
    for record in load_records("multihop"):
        hops = [str(hop) for hop in record["hops"]]
        answer = str(record["answer"])
        if not 2 <= len(hops) <= 3 or not mentions(hops[-1], answer):
            raise ValueError(f"multihop case {record['id']}: needs 2-3 hops with the answer in the last")
        if any(mentions(text, answer) for text in [*hops[:-1], record["question"]]):
            raise ValueError(f"multihop case {record['id']}: the answer appears before the last hop")
        evidence = [Evidence(f"hop-{i}", hop, "support") for i, hop in enumerate(hops[:-1], start=1)]
        evidence.append(Evidence(f"hop-{len(hops)}", hops[-1], "answer"))
        cases.append(
            Case(
                case_id=record["id"],
                task="multihop",
                evidence=tuple(evidence),
                question=record["question"],
                oracle=Oracle(answer=answer),
                guarded=(answer,),
            )
        )
    return cases
