"""``variable_tracking`` (RULER's variable tracking): chains of assignments ``VAR QXKPT = 48213``,
``VAR MZLRA = VAR QXKPT`` ... scattered through the haystack, each assignment a piece of its own;
the question gives the value and asks for every variable that holds it. Distractor chains have the
same shape and value format. The answer is the set of the chain's names, scored by set recall.

The chain's last assignment is the ``answer`` piece (at the grid's depth), its earlier ones are
``support`` pieces (the placement rule), the distractor chains' assignments are ``decoy`` pieces
(independent seeded depths). Names and values are invented (five random capitals, five digits):
nothing can be answered from a model's knowledge.
"""

from __future__ import annotations

import itertools
import random
import re
import string
from dataclasses import replace

from rotscope.tasks import register_cases
from rotscope.types import Case, Evidence, Oracle

TASK = "variable_tracking"
MAX_HOPS = 4
_ASSIGNMENT = re.compile(r"VAR ([A-Z]{5}) = (?:VAR ([A-Z]{5})|(\d{5}))")


def _names(rng: random.Random, count: int, taken: set[str]) -> list[str]:
    found: list[str] = []
    while len(found) < count:
        name = "".join(rng.choice(string.ascii_uppercase) for _ in range(5))
        if name not in taken and name != "VALUE":
            taken.add(name)
            found.append(name)
    return found


def _chain(names: list[str], value: str) -> list[str]:
    """The assignments of one chain, first to last: the value, then each name from the previous."""
    return [
        f"VAR {names[0]} = {value}",
        *(f"VAR {b} = VAR {a}" for a, b in itertools.pairwise(names)),
    ]


def holders(assignments: list[str], value: str) -> set[str]:
    """Every variable that holds ``value`` after ``assignments`` (in any order): the answer
    recomputed from the text, which the build checks against the generated chain."""
    direct: dict[str, str] = {}
    for line in assignments:
        match = _ASSIGNMENT.fullmatch(line)
        if match is None:
            raise ValueError(f"{TASK}: not an assignment: {line!r}")
        name, source, number = match.groups()
        if name in direct:
            raise ValueError(f"{TASK}: {name} is assigned twice")
        direct[name] = source or number
    held = {name for name, source in direct.items() if source == value}
    while grown := {name for name, source in direct.items() if source in held} - held:
        held |= grown
    return held


def build_chain_case(case_id: str, hops: int, chains: int, rng: random.Random) -> Case:
    """One case: a chain of ``hops`` hops (``hops + 1`` names) and ``chains - 1`` distractor
    chains of as many hops, every value distinct."""
    if not 1 <= hops <= MAX_HOPS or chains < 1:
        raise ValueError(f"{TASK} case {case_id}: hops must be 1-{MAX_HOPS} and chains at least 1")
    taken: set[str] = set()
    values = [str(v) for v in rng.sample(range(10000, 100000), chains)]
    named = [_names(rng, hops + 1, taken) for _ in range(chains)]
    target, *others = [_chain(names, value) for names, value in zip(named, values, strict=True)]
    evidence = [Evidence(f"assign-{i}", text, "support") for i, text in enumerate(target, start=1)]
    evidence[-1] = replace(evidence[-1], role="answer")
    for number, chain in enumerate(others, start=1):
        evidence += [Evidence(f"other-{number}-{i}", text, "decoy") for i, text in enumerate(chain, start=1)]
    every = [piece.text for piece in evidence]
    if holders(every, values[0]) != set(named[0]) or len(set(every)) != len(every):
        raise ValueError(f"{TASK} case {case_id}: its chain does not resolve to its names")
    distractors = [name for names in named[1:] for name in names]
    return Case(
        case_id=case_id,
        task=TASK,
        evidence=tuple(evidence),
        question=(
            f"Which variables are assigned the value {values[0]}, directly or through other variables?"
        ),
        oracle=Oracle(
            answer=", ".join(named[0]),
            kind="set",
            items=tuple(named[0]),
            traps=(
                *(("distractor_chain", name) for name in distractors),
                ("value_not_name", values[0]),
                ("missed_last_hop", named[0][-1]),
            ),
        ),
        guarded=(*named[0], *distractors, *values),
        slices=(("hops", str(hops)), ("chains", str(chains))),
    )


def build_variable_tracking_cases(
    hops: tuple[int, ...] = (1, 2, 3, 4), chains: tuple[int, ...] = (1, 2, 3), seed: str = TASK
) -> list[Case]:
    """One case per (hops, chains) pair, seeded: every pair of the lists, hops varying fastest."""
    rng = random.Random(seed)
    return [build_chain_case(f"vt-{count}c-{hop}h", hop, count, rng) for count in chains for hop in hops]


register_cases(TASK)(build_variable_tracking_cases)
