"""The delivery check: the prompt size a backend reports against the token ids sent."""

from __future__ import annotations

from rotscope.delivery import UNDECLARED_TOKENS_ALLOWED, check_delivery
from rotscope.types import Completion, GenerateRequest, GenerationParams

REQUEST = GenerateRequest(({"role": "user", "content": "x"},), tuple(range(100)), GenerationParams())


def test_exact_or_slightly_framed_counts_pass() -> None:
    for reported in (100, 100 + UNDECLARED_TOKENS_ALLOWED):
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
    checked = check_delivery(REQUEST, Completion("4817", prompt_tokens=101 + UNDECLARED_TOKENS_ALLOWED))
    assert checked.error is not None and "extended" in checked.error


def test_an_existing_error_is_kept() -> None:
    completion = Completion("", prompt_tokens=3, error="timeout")
    assert check_delivery(REQUEST, completion) is completion
