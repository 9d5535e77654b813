"""Whether the model received the verified prompt: the prompt tokens a backend reports against the
token ids that were sent.

A provider whose real window is smaller than its catalogue says, or a gateway that trims long
prompts, reports fewer prompt tokens than were sent; a template or gateway that adds a passage of
its own reports more. Either way the model answered another prompt than the verified one, so the
reply is an error row (never scored, retried on resume), not a wrong answer at some position.
"""

from __future__ import annotations

from dataclasses import replace

from rotscope.types import Backend, Completion, GenerateRequest

FRAMING_TOKENS = 32
"""Tokens a chat API may add or drop around the messages of its own accord (role markers, a start
token): a difference larger than this is a passage the verified prompt does not contain, or a cut."""


def delivery_slack(backend: Backend) -> int | None:
    """How far a backend's count may differ from the ids sent: 0 for engines fed the ids
    themselves, ``FRAMING_TOKENS`` for chat APIs whose tokenizer is the model's own, ``None`` (no
    check) when rotscope's count for that model is an approximation."""
    if backend.capabilities.exact_ids:
        return 0
    if backend.describe().get("token_count") == "approximate":
        return None
    return FRAMING_TOKENS


def check_delivery(request: GenerateRequest, completion: Completion, slack: int | None = 0) -> Completion:
    """``completion``, or the same with ``error`` set when the reported prompt size shows that the
    prompt was truncated or extended on its way. A backend that reports no usage (0) is trusted."""
    if slack is None or completion.error is not None or completion.prompt_tokens <= 0:
        return completion
    sent = len(request.token_ids)
    received = completion.prompt_tokens
    if received < sent - slack:
        return replace(
            completion,
            error=(
                f"prompt truncated: the backend reports {received} prompt tokens, {sent} were sent "
                "(a context window smaller than declared, or a gateway trimming the prompt)"
            ),
        )
    if received > sent + max(slack, FRAMING_TOKENS):
        return replace(
            completion,
            error=(
                f"prompt extended: the backend reports {received} prompt tokens, {sent} were sent; "
                f"{received - sent} tokens the verified prompt does not contain were added on the way"
            ),
        )
    return completion
