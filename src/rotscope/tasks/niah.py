"""``niah``: the lexical needle. The question repeats the needle's words, so string matching
finds it; useful as the saturated baseline that harder probes are compared with."""

from __future__ import annotations

from rotscope.tasks import register_cases
from rotscope.tasks.needles import load_needle_cases
from rotscope.types import Case


@register_cases("niah")
def build_niah_cases() -> list[Case]:
    return load_needle_cases("niah")
