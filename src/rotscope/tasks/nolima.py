"""``nolima``: non-lexical needles. The question shares no content word with the needle, so the
model must make one latent hop (Colosseum -> Rome) instead of matching strings."""

from __future__ import annotations

from collections.abc import Iterable

from rotscope.tasks import register_task
from rotscope.tasks.needles import load_needle_cases
from rotscope.tasks.overlap import shared_content_words
from rotscope.types import Case, TaskFamily


class NonLexicalTask:
    name = "nolima"

    def cases(self) -> Iterable[Case]:
        cases = load_needle_cases(self.name)
        for case in cases:
            shared = shared_content_words(case.question, case.evidence[0].text)
            if shared:
                raise ValueError(
                    f"nolima case {case.case_id}: question shares content words "
                    f"{sorted(shared)} with its needle"
                )
        return cases


@register_task("nolima")
def nolima() -> TaskFamily:
    return NonLexicalTask()
