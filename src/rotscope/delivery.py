"""Whether the model received the verified prompt: the prompt tokens a backend reports against the
token ids that were sent.

A provider whose real window is smaller than its catalogue says, or a gateway that trims long
prompts, reports fewer prompt tokens than were sent; a template or gateway that adds a passage of
its own reports more. Either way the model answered another prompt than the verified one, so the
reply is an error row (never scored, retried on resume), not a wrong answer at some position.
"""

from __future__ import annotations

from dataclasses import replace

from rotscope.types import Completion, GenerateRequest

UNDECLARED_TOKENS_ALLOWED = 32
"""Tokens a chat API may add around the messages of its own accord (role markers, a start token);
more than this is a passage the verified prompt does not contain."""


def check_delivery(request: GenerateRequest, completion: Completion) -> Completion:
    """``completion``, or the same with ``error`` set when the reported prompt size shows that the
    prompt was truncated or extended on its way. A backend that reports no usage (0) is trusted."""
    if completion.error is not None or completion.prompt_tokens <= 0:
        return completion
    sent = len(request.token_ids)
    received = completion.prompt_tokens
    if received < sent:
        return replace(
            completion,
            error=(
                f"prompt truncated: the backend reports {received} prompt tokens, {sent} were sent "
                "(a context window smaller than declared, or a gateway trimming the prompt)"
            ),
        )
    if received > sent + UNDECLARED_TOKENS_ALLOWED:
        return replace(
            completion,
            error=(
                f"prompt extended: the backend reports {received} prompt tokens, {sent} were sent; "
                f"{received - sent} tokens the verified prompt does not contain were added on the way"
            ),
        )
    return completion
