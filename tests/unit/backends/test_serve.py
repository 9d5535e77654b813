"""The ``serve/NAME`` backend's pure parts on the recorded shapes of vLLM's, SGLang's and llama.cpp's
servers (tests/fixtures/providers): the kind each ``/v1/models`` names, the body that carries the
ids, the counts and cached tokens read back, and the error row when the counts disagree."""

from __future__ import annotations

import json

import pytest

from rotscope.backends.remote_options import RemoteOptions
from rotscope.backends.retry import Transient
from rotscope.backends.serve.backend import base_urls, detect_kind, parse_reply, request_body, server_root
from rotscope.backends.serve.options import ServeOptions
from rotscope.errors import BadInput
from rotscope.types import GenerateRequest, GenerationParams
from tests.support.completions_server import fixture

REQUEST = GenerateRequest(({"role": "user", "content": "x"},), (1, 5, 9, 2), GenerationParams(0.0, 12, 3))


@pytest.mark.parametrize("kind", ["vllm", "sglang", "llamacpp"])
def test_the_kind_is_read_from_the_servers_own_model_list(kind: str) -> None:
    assert detect_kind(fixture(f"{kind}_models.json")) == kind


def test_a_model_list_naming_no_known_server_is_no_kind() -> None:
    assert detect_kind({"object": "list", "data": [{"id": "m", "owned_by": "openai"}]}) is None
    assert detect_kind("not a list") is None


def test_the_ids_go_as_a_list_of_ints_with_greedy_seeded_decoding() -> None:
    path, body = request_body("vllm", "m", REQUEST, {"top_k": 1})
    assert path == "/v1/completions"
    assert body == {
        "model": "m",
        "prompt": [1, 5, 9, 2],
        "max_tokens": 12,
        "temperature": 0.0,
        "seed": 3,
        "top_k": 1,
    }
    path, body = request_body("llamacpp", "m", REQUEST, {})
    assert path == "/completion"
    assert body == {
        "prompt": [1, 5, 9, 2],
        "n_predict": 12,
        "temperature": 0.0,
        "seed": 3,
        "cache_prompt": True,
    }


@pytest.mark.parametrize("kind", ["vllm", "sglang"])
def test_openai_shaped_replies_give_text_counts_and_cached_tokens(kind: str) -> None:
    completion = parse_reply(kind, json.dumps(fixture(f"{kind}_completion.json")).encode(), 2006)
    assert completion.error is None
    assert (completion.text, completion.prompt_tokens, completion.completion_tokens) == (
        "The secret code is 4817.",
        2006,
        9,
    )
    assert completion.cached_tokens == 1920


def test_a_llama_server_reply_gives_its_evaluated_and_cached_tokens() -> None:
    recorded = fixture("llamacpp_completion.json")
    completion = parse_reply("llamacpp", json.dumps(recorded).encode(), 6)
    assert (completion.error, completion.prompt_tokens, completion.cached_tokens) == (None, 6, 5)
    assert completion.text == recorded["content"] and completion.completion_tokens == 4
    # without tokens_evaluated, the prompt is the tokens processed plus those kept in the cache
    del recorded["tokens_evaluated"]
    assert parse_reply("llamacpp", json.dumps(recorded).encode(), 6).prompt_tokens == 6


def test_another_prompt_count_is_an_error_naming_both_counts() -> None:
    completion = parse_reply("vllm", json.dumps(fixture("vllm_completion.json")).encode(), 2000)
    assert completion.error is not None and completion.text == ""
    assert "2006 prompt tokens, 2000 token ids were sent" in completion.error
    no_usage = {"choices": [{"text": "hi"}]}
    missing = parse_reply("sglang", json.dumps(no_usage).encode(), 4).error
    assert missing is not None and "no prompt-token count, 4 token ids" in missing


def test_a_body_that_is_no_reply_is_transient() -> None:
    with pytest.raises(Transient, match="malformed"):
        parse_reply("llamacpp", b"<html>bad gateway</html>", 4)


def test_base_urls_are_the_replicas_roots() -> None:
    assert server_root("http://h:8000/v1/") == "http://h:8000"
    urls = base_urls(ServeOptions(), RemoteOptions(base_url="http://a:1/v1,http://b:2"))
    assert urls == ["http://a:1", "http://b:2"]
    assert base_urls(ServeOptions(base_url="http://c:3"), RemoteOptions(base_url="http://a:1")) == [
        "http://c:3"
    ]
    with pytest.raises(BadInput, match="--base-url"):
        base_urls(ServeOptions(), RemoteOptions())
    with pytest.raises(BadInput, match="named twice"):
        base_urls(ServeOptions(base_url="http://a:1,http://a:1/v1"), RemoteOptions())
