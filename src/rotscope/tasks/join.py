"""``join``: two fields per entity in two far-apart tables; the question filters on one and
selects on the other. Draws where the answer is also the unfiltered maximum are rejected, so a
model that skips the filter is caught (failure category ``filter_ignored``).

Cases are generated from a fixed seed, so they are the same on every machine. The first 16 name
their services from 220 two-part names; cases after them (``cases_per_task``) from 2,200
three-part ones, so the first 16 stay as they were and names stay unique up to ``MAX_CASES``.
"""

from __future__ import annotations

import random

from rotscope.tasks import DEFAULT_CASES, register_counted_cases
from rotscope.tasks.invented import check_count
from rotscope.types import Case, Evidence, Oracle

TWO_PART_CASES = DEFAULT_CASES
MAX_CASES = 200
"""1,200 of the 2,200 three-part names: drawing unused ones stays quick."""
SERVICES_PER_CASE = 6
_GENERATOR_SEED = 20261129
_PREFIXES = (
    "Vel Tor Bram Cass Dun Esk Fen Gal Hol Isk Jor Kel Lum Mor Nim Orr Pell Quin Rask Sol Tam Ulm".split()
)
_SUFFIXES = "ling mere wick gate holt marsh ford crest vale brook".split()
_MIDDLES = "an ar en il or us ad em ir ol".split()


def _service_names(rng: random.Random, used: set[str], three_part: bool) -> list[str]:
    names: list[str] = []
    while len(names) < SERVICES_PER_CASE:
        middle = rng.choice(_MIDDLES) if three_part else ""
        name = rng.choice(_PREFIXES) + middle + rng.choice(_SUFFIXES)
        if name not in used:
            used.add(name)
            names.append(name)
    return names


def _draw(index: int, rng: random.Random, used: set[str]) -> Case:
    while True:
        names = _service_names(rng, set(used), three_part=index > TWO_PART_CASES)
        budgets = {name: rng.randint(1, 6) for name in names}
        timeouts = dict(zip(names, rng.sample(range(200, 5000, 50), len(names)), strict=True))
        limit = rng.randint(2, 4)
        passing = [name for name in names if budgets[name] <= limit]
        if not 2 <= len(passing) < len(names):
            continue
        answer = max(passing, key=lambda name: timeouts[name])
        unfiltered = max(names, key=lambda name: timeouts[name])
        if answer != unfiltered:
            used.update(names)
            break
    budget_table = "Retry budgets agreed in the platform review:\n" + "\n".join(
        f"- {name}: {budgets[name]} retries" for name in rng.sample(names, len(names))
    )
    timeout_table = "Client timeouts from the latency audit:\n" + "\n".join(
        f"- {name}: {timeouts[name]} ms" for name in rng.sample(names, len(names))
    )
    others = [name for name in names if name not in (answer, unfiltered)]
    return Case(
        case_id=f"join-{index:02d}",
        task="join",
        evidence=(
            Evidence("budgets", budget_table, "support"),
            Evidence("timeouts", timeout_table, "answer"),
        ),
        question=(
            f"Among the services with a retry budget of at most {limit}, "
            "which has the highest client timeout?"
        ),
        oracle=Oracle(
            answer=answer,
            traps=(("filter_ignored", unfiltered), *(("wrong_entity", name) for name in others)),
        ),
        guarded=tuple(names),
    )


@register_counted_cases("join", MAX_CASES)
def build_join_cases(count: int = DEFAULT_CASES) -> list[Case]:
    check_count("join", count, MAX_CASES, "service names must stay unique")
    rng = random.Random(_GENERATOR_SEED)
    used: set[str] = set()
    return [_draw(index, rng, used) for index in range(1, count + 1)]
