"""``niah``: the lexical needle. The question repeats the needle's words, so string matching
finds it; useful as the saturated baseline that harder probes are compared with."""

from __future__ import annotations

from collections.abc import Iterable

from rotscope.tasks import register_task
from rotscope.tasks.needles import load_needle_cases
from rotscope.types import Case, TaskFamily


class NeedleTask:
    name = "niah"

    def cases(self) -> Iterable[Case]:
        return load_needle_cases(self.name)


@register_task("niah")
def niah() -> TaskFamily:
    return NeedleTask()
