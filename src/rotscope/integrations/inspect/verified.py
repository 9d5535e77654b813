"""The verified token ids of the prompts a rotscope task handed to Inspect, by tokenizer and text,
with each one's reply budget (its work item's: its answer kind's where ``generation.max_tokens`` is
unset, as a rotscope run sends it).

Inspect passes a model only chat messages. When the Inspect model is a rotscope model with the
tokenizer the task rendered with, the provider looks the rendered text up here and sends the very
ids the verifier checked the spans on (a rotscope run does the same); any other text is encoded
afresh, and the reply says which happened."""

from __future__ import annotations

from rotscope.types import RenderedPrompt

_IDS: dict[tuple[str, str], tuple[int, ...]] = {}
_BUDGETS: dict[tuple[str, str], int] = {}


def remember(prompt: RenderedPrompt, budget: int | None = None) -> None:
    _IDS[(prompt.tokenizer_digest, prompt.text)] = prompt.token_ids
    if budget is not None:
        _BUDGETS[(prompt.tokenizer_digest, prompt.text)] = budget


def verified_ids(tokenizer_digest: str, text: str) -> tuple[int, ...] | None:
    return _IDS.get((tokenizer_digest, text))


def verified_budget(tokenizer_digest: str, text: str) -> int | None:
    """The reply budget of the work item that rendered ``text`` (``None``: not a rotscope item)."""
    return _BUDGETS.get((tokenizer_digest, text))
