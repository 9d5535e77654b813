"""Whether the model received the verified prompt: the prompt tokens a backend reports against the
token ids that were sent.

A provider whose real window is smaller than its catalogue says, or a gateway that trims long
prompts, reports fewer prompt tokens than were sent; a template or gateway that adds a passage of
its own reports more. Either way the model answered another prompt than the verified one, so the
reply is an error row (never scored, retried on resume), not a wrong answer at some position.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, replace

from rotscope.types import Backend, Completion, GenerateRequest

FRAMING_TOKENS = 32
"""Tokens a chat API may add or drop around the messages of its own accord (role markers, a start
token): a difference larger than this is a passage the verified prompt does not contain, or a cut."""

APPROXIMATE_RATIO = (0.5, 2.0)
"""How far a real tokenizer's count may stray from rotscope's approximate count (the regex
estimate of ``tokenizers.remote.ApproximateTokenizer``) before a reported prompt size is
implausible for the prompt that was sent.

Measured with ``benchmarks/approximate_counts.py``: niah and competitive prompts planned under the
estimate on code, prose (Markdown) and reading-log filler at 256 to 8192 tokens, counted by the
bundled model's tokenizer with its chat template (SmolLM2, 423 prompts), gave real / approximate
from 0.78 (code at 8K) to 1.22 (reading log at 256, where the template weighs most). tiktoken's
cl100k/o200k were not in the local cache and were not measured. The bound leaves a margin of more
than 1.5x on each side, so a genuine delivery is never flagged, while a gateway that kept a fraction
of the prompt (7 tokens of 256) or added a passage as long again is."""


@dataclass(frozen=True)
class Tolerance:
    """The reported prompt size that is still the prompt sent: within ``tokens`` of the ids sent,
    after scaling them by ``ratio`` (low, high) when rotscope's count is an estimate."""

    tokens: int = 0
    ratio: tuple[float, float] = (1.0, 1.0)
    open_above: bool = False
    """Any count above is the prompt sent plus a harness's own (``Capabilities.harness_prompt``)."""

    @property
    def approximate(self) -> bool:
        return self.ratio != (1.0, 1.0)

    def bounds(self, sent: int) -> tuple[int, int]:
        low, high = self.ratio
        above = sys.maxsize if self.open_above else math.ceil(sent * high) + max(self.tokens, FRAMING_TOKENS)
        return math.floor(sent * low) - self.tokens, above


EXACT = Tolerance(0)
REMOTE = Tolerance(FRAMING_TOKENS)
APPROXIMATE = Tolerance(FRAMING_TOKENS, APPROXIMATE_RATIO)


def delivery_tolerance(backend: Backend) -> Tolerance:
    """How far a backend's count may differ from the ids sent: none for engines fed the ids
    themselves, ``FRAMING_TOKENS`` for chat APIs whose tokenizer is the model's own, and the
    measured ``APPROXIMATE_RATIO`` besides when rotscope's count for that model is an estimate; a
    harness that adds a prompt of its own is never "extended", only cut."""
    if backend.capabilities.exact_ids:
        return EXACT
    tolerance = APPROXIMATE if backend.describe().get("token_count") == "approximate" else REMOTE
    return replace(tolerance, open_above=True) if backend.capabilities.harness_prompt else tolerance


def check_delivery(
    request: GenerateRequest, completion: Completion, tolerance: Tolerance = EXACT
) -> Completion:
    """``completion``, or the same with ``error`` set when the reported prompt size shows that the
    prompt was truncated or extended on its way. A backend that reports no usage (0) is trusted."""
    if completion.error is not None or completion.prompt_tokens <= 0:
        return completion
    sent = len(request.token_ids)
    received = completion.prompt_tokens
    low, high = tolerance.bounds(sent)
    counted = (
        f"{sent} were sent by rotscope's approximate count, which a real tokenizer puts at "
        f"{tolerance.ratio[0]:g} to {tolerance.ratio[1]:g} times that"
        if tolerance.approximate
        else f"{sent} were sent"
    )
    if received < low:
        return replace(
            completion,
            error=(
                f"prompt truncated: the backend reports {received} prompt tokens, {counted} "
                "(a context window smaller than declared, or a gateway trimming the prompt)"
            ),
        )
    if received > high:
        return replace(
            completion,
            error=(
                f"prompt extended: the backend reports {received} prompt tokens, {counted}; "
                "tokens the verified prompt does not contain were added on the way"
            ),
        )
    return completion
