"""``nolima``: non-lexical needles. The question shares no content word with the needle, so the
model must make one latent hop (Colosseum -> Rome) instead of matching strings."""

from __future__ import annotations

from rotscope._util.text import shared_content_words
from rotscope.tasks import register_cases
from rotscope.tasks.needles import load_needle_cases
from rotscope.types import Case


@register_cases("nolima")
def build_nolima_cases() -> list[Case]:
    cases = load_needle_cases("nolima")
    for case in cases:
        shared = shared_content_words(case.question, case.evidence[0].text)
        if shared:
            raise ValueError(
                f"nolima case {case.case_id}: question shares content words {sorted(shared)} with its needle"
            )
    return cases
