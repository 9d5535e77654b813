"""The vLLM backend's likelihood as pure functions on vLLM-shaped outputs: each form is its own
prompt after the verified one, its log-probabilities are the last entries of ``prompt_logprobs``,
and ids the engine did not run, or a missing entry, make that request's reading an error."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from rotscope.backends.vllm.backend import form_logprobs, reading_prompts, readings
from rotscope.types import LikelihoodRequest


@dataclass
class Logprob:
    logprob: float


@dataclass
class Output:
    prompt_token_ids: list[int]
    prompt_logprobs: list[dict[int, Any] | None] | None


def output(ids: list[int], values: dict[int, float]) -> Output:
    """What vLLM returns for ``ids``: the first token's entry ``None``, then each token's own."""
    return Output(ids, [None] + [{token: Logprob(values[token]), 999: Logprob(-9.0)} for token in ids[1:]])


VALUES = {1: -0.5, 2: -0.25, 3: -1.0, 7: -2.0, 8: -0.125, 9: -3.0}


def test_each_form_is_a_prompt_of_its_own_request_by_request() -> None:
    requests = [LikelihoodRequest((1, 2), ((7,), (8, 9))), LikelihoodRequest((3,), ((9,),))]
    assert reading_prompts(requests) == [[1, 2, 7], [1, 2, 8, 9], [3, 9]]


def test_a_forms_values_are_the_last_prompt_logprob_entries_of_its_own_tokens() -> None:
    assert form_logprobs(output([1, 2, 8, 9], VALUES).prompt_logprobs, (8, 9)) == (-0.125, -3.0)
    with pytest.raises(ValueError, match="no prompt log-probability for answer token 9"):
        form_logprobs([None, {8: Logprob(-0.1)}, {8: Logprob(-0.2)}], (8, 9))
    with pytest.raises(ValueError, match="returned 1 prompt log-probabilities for a 2-token form"):
        form_logprobs([None], (8, 9))
    with pytest.raises(ValueError, match="returned 0 prompt log-probabilities"):
        form_logprobs(None, (8,))


def test_readings_group_the_outputs_by_request_and_an_echo_that_differs_is_an_error() -> None:
    requests = [
        LikelihoodRequest((1, 2), ((7,), (8, 9)), scored_from=(0, 1)),
        LikelihoodRequest((3,), ((9,),)),
    ]
    prompts = reading_prompts(requests)
    outputs = [output(ids, VALUES) for ids in prompts]
    first, second = readings(requests, prompts, outputs, 0.5)
    assert first.error is None and first.token_logprobs == ((-2.0,), (-0.125, -3.0))
    assert first.prompt_tokens == 2 and first.latency_s == 0.5
    assert second.token_logprobs == ((-3.0,),)

    outputs[1] = output([1, 2, 8, 8], {**VALUES})
    first, second = readings(requests, prompts, outputs, 0.5)
    assert first.error is not None and "differ at position 3 of 4" in first.error and not first.token_logprobs
    assert second.error is None  # one request's fault is its own
