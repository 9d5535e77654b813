"""The delivery check: the prompt size a backend reports against the token ids sent."""

from __future__ import annotations

from rotscope.execution.calls.delivery import (
    APPROXIMATE,
    APPROXIMATE_RATIO,
    EXACT,
    FRAMING_TOKENS,
    REMOTE,
    check_delivery,
    delivery_tolerance,
)
from rotscope.types import Capabilities, Completion, GenerateRequest, GenerationParams

REQUEST = GenerateRequest(({"role": "user", "content": "x"},), tuple(range(100)), GenerationParams())


def test_exact_or_slightly_framed_counts_pass() -> None:
    for reported in (100, 100 + FRAMING_TOKENS):
        completion = Completion("4817", prompt_tokens=reported)
        assert check_delivery(REQUEST, completion) is completion


def test_no_usage_reported_is_trusted() -> None:
    completion = Completion("4817", prompt_tokens=0)
    assert check_delivery(REQUEST, completion) is completion


def test_fewer_tokens_than_sent_is_a_truncation_error() -> None:
    checked = check_delivery(REQUEST, Completion("4817", prompt_tokens=99))
    assert checked.error is not None and "truncated" in checked.error and "99" in checked.error
    assert checked.text == "4817"


def test_many_more_tokens_than_sent_is_an_extension_error() -> None:
    checked = check_delivery(REQUEST, Completion("4817", prompt_tokens=101 + FRAMING_TOKENS))
    assert checked.error is not None and "extended" in checked.error


def test_an_existing_error_is_kept() -> None:
    completion = Completion("", prompt_tokens=3, error="timeout")
    assert check_delivery(REQUEST, completion) is completion


class Counted:
    """Just what the delivery check asks of a backend: its capabilities and how it counts."""

    def __init__(self, exact_ids: bool, token_count: str) -> None:
        self.capabilities = Capabilities(exact_ids=exact_ids)
        self.token_count = token_count

    def describe(self) -> dict[str, str]:
        return {"token_count": self.token_count}


def test_tolerance_depends_on_how_the_backend_counts() -> None:
    assert delivery_tolerance(Counted(True, "exact")) == EXACT  # type: ignore[arg-type]
    assert delivery_tolerance(Counted(False, "exact")) == REMOTE  # type: ignore[arg-type]
    assert delivery_tolerance(Counted(False, "approximate")) == APPROXIMATE  # type: ignore[arg-type]
    framed = Completion("4817", prompt_tokens=100 - FRAMING_TOKENS)
    assert check_delivery(REQUEST, framed, REMOTE) is framed
    assert check_delivery(REQUEST, framed, EXACT).error is not None
    cut = Completion("4817", prompt_tokens=40)
    assert check_delivery(REQUEST, cut, REMOTE).error is not None


def test_an_approximate_count_is_checked_for_plausibility() -> None:
    """Under the estimate a real count anywhere in the measured range (0.78 to 1.22 times it) is a
    genuine delivery; a count far below or above it is not, and is an error, never a score."""
    low, high = APPROXIMATE_RATIO
    for reported in (78, 122, int(100 * low) - FRAMING_TOKENS, int(100 * high) + FRAMING_TOKENS):
        completion = Completion("4817", prompt_tokens=reported)
        assert check_delivery(REQUEST, completion, APPROXIMATE) is completion
    long_request = GenerateRequest(REQUEST.messages, tuple(range(256)), REQUEST.params)
    cut = check_delivery(long_request, Completion("4817", prompt_tokens=7), APPROXIMATE)
    assert cut.error is not None and "truncated" in cut.error and "approximate" in cut.error
    added = check_delivery(long_request, Completion("4817", prompt_tokens=600), APPROXIMATE)
    assert added.error is not None and "extended" in added.error
