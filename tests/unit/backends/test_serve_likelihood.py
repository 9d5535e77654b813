"""Reading an answer's likelihood from a server: the request each kind is sent for one form, and
its reply parsed in the kind's shape (vLLM's ``prompt_logprobs`` keyed by token id, SGLang's
``input_token_logprobs`` triples); another prompt count or a missing value is refused, a body that
is no reply is worth another attempt, and llama-server cannot be asked."""

from __future__ import annotations

import json

import pytest

from rotscope.backends.retry import Transient
from rotscope.backends.serve.likelihood import (
    ReadingRefused,
    likelihood_body,
    parse_likelihood,
    reads_likelihood,
)
from tests.support.completions_server import reading_for

PROMPT = [5, 6, 7]
FORM = (8, 9)
VALUES: list[float | None] = [None, -1.0, -2.0, -0.25, -0.5]


def test_each_kind_is_sent_the_prompt_with_the_form_after_it() -> None:
    path, body = likelihood_body("vllm", "m", PROMPT, FORM)
    assert path == "/v1/completions"
    assert body == {
        "model": "m", "prompt": [5, 6, 7, 8, 9], "max_tokens": 1, "temperature": 0.0, "prompt_logprobs": 0,
    }  # fmt: skip
    path, body = likelihood_body("sglang", "m", PROMPT, FORM)
    assert path == "/generate" and body["input_ids"] == [5, 6, 7, 8, 9]
    assert body["return_logprob"] is True and body["logprob_start_len"] == 2
    assert body["sampling_params"]["max_new_tokens"] == 1
    with pytest.raises(ValueError, match="llama-server returns log-probabilities of generated tokens only"):
        likelihood_body("llamacpp", "m", PROMPT, FORM)
    assert reads_likelihood("vllm") and reads_likelihood(None) and not reads_likelihood("llamacpp")


@pytest.mark.parametrize("kind", ["vllm", "sglang"])
def test_a_reply_gives_the_forms_own_values(kind: str) -> None:
    _, body = likelihood_body(kind, "m", PROMPT, FORM)  # type: ignore[arg-type]
    reply = json.dumps(reading_for(kind, body, VALUES, 0)).encode()
    assert parse_likelihood(kind, reply, len(PROMPT), FORM) == (-0.25, -0.5)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["vllm", "sglang"])
def test_another_prompt_count_or_a_missing_value_is_refused(kind: str) -> None:
    _, body = likelihood_body(kind, "m", PROMPT, FORM)  # type: ignore[arg-type]
    skewed = json.dumps(reading_for(kind, body, VALUES, 1)).encode()
    with pytest.raises(ReadingRefused, match="reports 6 prompt tokens, 5 token ids were sent"):
        parse_likelihood(kind, skewed, len(PROMPT), FORM)  # type: ignore[arg-type]
    other = json.dumps(reading_for(kind, body, VALUES, 0)).encode()
    with pytest.raises(ReadingRefused, match="no log-probability for some of the answer's 2 tokens"):
        parse_likelihood(kind, other, len(PROMPT), (8, 4))  # type: ignore[arg-type]
    with pytest.raises(Transient, match="malformed response"):
        parse_likelihood(kind, b'{"choices": []}', len(PROMPT), FORM)  # type: ignore[arg-type]


def test_a_recorded_vllm_reply_without_prompt_logprobs_is_refused() -> None:
    recorded = {"choices": [{"text": "x", "prompt_logprobs": None}], "usage": {"prompt_tokens": 5}}
    with pytest.raises(ReadingRefused, match="no log-probability"):
        parse_likelihood("vllm", json.dumps(recorded).encode(), len(PROMPT), FORM)
