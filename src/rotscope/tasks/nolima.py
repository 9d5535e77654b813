"""``nolima``: non-lexical needles. The question shares no content word with the needle, so the
model must make one latent hop (Colosseum -> Rome) instead of matching strings."""

from __future__ import annotations

from rotscope._util.text import shared_content_words
from rotscope.tasks import DEFAULT_CASES, register_counted_cases
from rotscope.tasks.invented import check_count
from rotscope.tasks.needles import load_needle_cases
from rotscope.types import Case


def build_nolima_cases() -> list[Case]:
    cases = load_needle_cases("nolima")
    for case in cases:
        shared = shared_content_words(case.question, case.evidence[0].text)
        if shared:
            raise ValueError(
                f"nolima case {case.case_id}: question shares content words {sorted(shared)} with its needle"
            )
    return cases


@register_counted_cases("nolima", lambda: len(build_nolima_cases()))
def nolima_cases(count: int = DEFAULT_CASES) -> list[Case]:
    """The first ``count`` written cases: a hop through world knowledge is not invented."""
    cases = build_nolima_cases()
    check_count("nolima", count, len(cases), "hand-written: their hop needs world knowledge")
    return cases[:count]
