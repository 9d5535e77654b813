"""Anthropic and Gemini request and response shapes, through each SDK with a mock HTTP transport
answering with fixture bodies (tests/fixtures/providers, in the shape of the providers' documented
responses): what is sent, what is parsed, and how failures map onto retry, error row or stop."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest

from rotscope.backends.anthropic import AnthropicBackend
from rotscope.backends.gemini import GeminiBackend
from rotscope.backends.openai_compat import OpenAICompatBackend
from rotscope.backends.remote_options import RemoteOptions
from rotscope.errors import BackendRefused
from rotscope.types import AnswerStop, Completion, GenerateRequest, GenerationParams, PrefixGroup

FIXTURES = Path(__file__).parents[2] / "fixtures" / "providers"
PLANTED_KEY = "sk-planted-SECRET-123"
REQUEST = GenerateRequest(
    (
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "<context>\nThe secret code is 4817.\n</context>\nQuestion: the code?"},
    ),
    (),
    GenerationParams(temperature=0.0, max_tokens=24, seed=3),
)
OPTIONS = RemoteOptions(max_attempts=3, backoff_initial_s=0.0, backoff_max_s=0.0)


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


Reply = tuple[int, Any, dict[str, str]]


class Recorder:
    """Answers requests in turn from ``replies`` (status, JSON body or raw bytes, headers)."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[Any] = []

    def reply(self, request: Any, response_type: Callable[..., Any]) -> Any:
        self.requests.append(request)
        status, body, headers = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return response_type(status, content=content, headers={"content-type": "application/json", **headers})

    def body(self, index: int = 0) -> Any:
        return json.loads(self.requests[index].content)


def anthropic(recorder: Recorder, options: RemoteOptions = OPTIONS) -> AnthropicBackend:
    transport = httpx2.MockTransport(lambda request: recorder.reply(request, httpx2.Response))
    return AnthropicBackend("claude-test-model", options, http_client=httpx2.AsyncClient(transport=transport))


def gemini(recorder: Recorder, options: RemoteOptions = OPTIONS) -> GeminiBackend:
    transport = httpx.MockTransport(lambda request: recorder.reply(request, httpx.Response))
    return GeminiBackend("gemini-2.5-flash", options, http_client=httpx.AsyncClient(transport=transport))


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", PLANTED_KEY)
    monkeypatch.setenv("GEMINI_API_KEY", PLANTED_KEY)


def generate(backend: AnthropicBackend | GeminiBackend) -> Completion:
    return asyncio.run(backend.generate(REQUEST))


def test_anthropic_request_and_response() -> None:
    recorder = Recorder((200, fixture("anthropic_message.json"), {}))
    completion = generate(anthropic(recorder))
    assert completion == Completion(
        text="The secret code is 4817.",
        prompt_tokens=1187 + 1024,
        completion_tokens=9,
        cached_tokens=1024,
        latency_s=completion.latency_s,
        attempts=1,
    )
    sent = recorder.requests[0]
    assert sent.url.path == "/v1/messages"
    assert sent.headers["x-stainless-retry-count"] == "0"
    assert recorder.body() == {
        "model": "claude-test-model",
        "system": "Answer briefly.",
        "messages": [{"role": "user", "content": REQUEST.messages[1]["content"]}],
        "max_tokens": 24,
    }


def test_anthropic_retries_overload_and_honours_retry_after() -> None:
    recorder = Recorder(
        (529, fixture("anthropic_overloaded.json"), {"retry-after": "0"}),
        (429, fixture("anthropic_overloaded.json"), {"retry-after-ms": "10"}),
        (200, fixture("anthropic_message.json"), {}),
    )
    completion = generate(anthropic(recorder))
    assert completion.error is None and completion.attempts == 3
    assert len(recorder.requests) == 3  # the SDK's own retries are off: one request per attempt


def test_anthropic_malformed_json_exhausts_into_an_error_row() -> None:
    recorder = Recorder((200, b'{"id": "msg_01", "content": [', {}))
    completion = generate(anthropic(recorder))
    assert completion.error == "malformed response (after 3 attempts)"
    assert len(recorder.requests) == 3


def test_anthropic_auth_error_stops_without_the_key() -> None:
    body = fixture("anthropic_auth_error.json")
    body["error"]["message"] = f"invalid x-api-key {PLANTED_KEY}"
    recorder = Recorder((401, body, {}))
    with pytest.raises(BackendRefused, match=r"refused the API key from \$ANTHROPIC_API_KEY") as refused:
        generate(anthropic(recorder))
    assert PLANTED_KEY not in str(refused.value) and "[redacted]" in str(refused.value)
    assert len(recorder.requests) == 1


def test_anthropic_count_tokens() -> None:
    recorder = Recorder((200, fixture("anthropic_count_tokens.json"), {}))
    assert asyncio.run(anthropic(recorder).count_tokens(REQUEST.messages)) == 2211
    assert recorder.requests[0].url.path == "/v1/messages/count_tokens"
    assert recorder.body()["system"] == "Answer briefly."


def test_gemini_request_and_response() -> None:
    recorder = Recorder((200, fixture("gemini_generate_content.json"), {}))
    completion = generate(gemini(recorder))
    assert (completion.text, completion.prompt_tokens, completion.completion_tokens) == (
        "The secret code is 4817.",
        1193,
        9,
    )
    assert completion.cached_tokens == 512
    sent = recorder.requests[0]
    assert sent.url.path.endswith("/models/gemini-2.5-flash:generateContent")
    assert sent.headers["x-goog-api-key"] == PLANTED_KEY
    body = recorder.body()
    assert body["systemInstruction"]["parts"] == [{"text": "Answer briefly."}]
    assert body["contents"] == [{"role": "user", "parts": [{"text": REQUEST.messages[1]["content"]}]}]
    assert body["generationConfig"] == {"temperature": 0.0, "maxOutputTokens": 24, "seed": 3}


def test_gemini_rate_limit_is_retried_and_refusal_stops() -> None:
    recorder = Recorder(
        (429, fixture("gemini_rate_limited.json"), {"retry-after": "0"}),
        (500, {"error": {"code": 500, "message": "internal", "status": "INTERNAL"}}, {}),
        (200, fixture("gemini_generate_content.json"), {}),
    )
    completion = generate(gemini(recorder))
    assert completion.error is None and completion.attempts == 3 and len(recorder.requests) == 3

    denied = Recorder((403, fixture("gemini_permission_denied.json"), {}))
    with pytest.raises(BackendRefused, match="HTTP 403"):
        generate(gemini(denied))
    assert len(denied.requests) == 1


def test_gemini_count_tokens() -> None:
    recorder = Recorder((200, fixture("gemini_count_tokens.json"), {}))
    assert asyncio.run(gemini(recorder).count_tokens(REQUEST.messages)) == 2230
    assert recorder.requests[0].url.path.endswith("/models/gemini-2.5-flash:countTokens")


@pytest.mark.parametrize(("module", "extra"), [("anthropic", "anthropic"), ("google.genai", "gemini")])
def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch, module: str, extra: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    backend = AnthropicBackend if extra == "anthropic" else GeminiBackend
    with pytest.raises(BackendRefused, match=rf"pip install rotscope\[{extra}\]"):
        backend("some-model", OPTIONS)


def test_unset_key_stops_before_any_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    recorder = Recorder((200, fixture("anthropic_message.json"), {}))
    with pytest.raises(BackendRefused, match="ANTHROPIC_API_KEY is not set"):
        generate(anthropic(recorder))
    assert recorder.requests == []


def test_an_anthropic_refusal_with_no_text_is_an_error_row_not_an_abstention() -> None:
    body = {**fixture("anthropic_message.json"), "content": [], "stop_reason": "refusal"}
    completion = generate(anthropic(Recorder((200, body, {}))))
    assert completion.text == "" and completion.error == "empty reply, stopped by the provider (refusal)"
    assert completion.attempts == 1  # another attempt would be refused the same way


def test_an_anthropic_empty_reply_that_simply_ended_is_the_models_answer() -> None:
    body = {**fixture("anthropic_message.json"), "content": [], "stop_reason": "end_turn"}
    completion = generate(anthropic(Recorder((200, body, {}))))
    assert completion.text == "" and completion.error is None


def test_a_gemini_safety_block_is_an_error_row() -> None:
    reply = fixture("gemini_generate_content.json")
    blocked = {**reply, "candidates": [{"content": {"parts": [], "role": "model"}, "finishReason": "SAFETY"}]}
    completion = generate(gemini(Recorder((200, blocked, {}))))
    assert completion.error == "empty reply, stopped by the provider (SAFETY)"
    no_candidate = {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": {}}
    completion = generate(gemini(Recorder((200, no_candidate, {}))))
    assert completion.error is not None and "prompt blocked" in completion.error


CONTENT = REQUEST.messages[1]["content"]
SHARED = "<context>\n"
BEFORE = "<context>\nThe secret code"
AFTER = "<context>\nThe secret code is 4817.\n</context>"
# A middle call of its group: it shares the stem with every call, BEFORE with the call before it
# and AFTER with the call after it (each cut at a word boundary).
GROUP = PrefixGroup(
    key="rotscope-0123456789abcdef",
    calls=3,
    shared_tokens=1500,
    stem_tokens=1100,
    stem_chars=len(SHARED),
    previous_tokens=1500,
    previous_chars=len(BEFORE),
    next_tokens=2000,
    next_chars=len(AFTER),
)


def grouped(group: PrefixGroup | None) -> GenerateRequest:
    return replace(REQUEST, prefix_group=group)


def test_anthropic_marks_the_stem_and_what_the_call_shares_with_each_neighbour() -> None:
    recorder = Recorder((200, fixture("anthropic_message_cache_read.json"), {}))
    completion = asyncio.run(anthropic(recorder).generate(grouped(GROUP)))
    assert recorder.body()["system"] == "Answer briefly."
    marked = {"cache_control": {"type": "ephemeral"}}
    assert recorder.body()["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": SHARED, **marked},
                {"type": "text", "text": BEFORE[len(SHARED) :], **marked},
                {"type": "text", "text": AFTER[len(BEFORE) :], **marked},
                {"type": "text", "text": "\nQuestion: the code?"},
            ],
        }
    ]
    # The blocks are the message cut in four: nothing added, nothing lost.
    assert "".join(block["text"] for block in recorder.body()["messages"][0]["content"]) == CONTENT
    # It read what the call before it wrote and wrote the rest up to the last breakpoint.
    assert (completion.prompt_tokens, completion.cached_tokens, completion.cache_write_tokens) == (
        21 + 1500 + 500,
        1500,
        500,
    )


def test_a_groups_first_call_writes_what_it_shares_with_the_next() -> None:
    recorder = Recorder((200, fixture("anthropic_message_cache_write.json"), {}))
    first = replace(GROUP, stem_tokens=0, previous_tokens=0, previous_chars=0)
    completion = asyncio.run(anthropic(recorder).generate(grouped(first)))
    content = recorder.body()["messages"][0]["content"]
    assert content == [
        {"type": "text", "text": AFTER, "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "\nQuestion: the code?"},
    ]
    assert (completion.prompt_tokens, completion.cached_tokens, completion.cache_write_tokens) == (
        21 + 2048,
        0,
        2048,
    )


@pytest.mark.parametrize(
    ("model", "tokens", "marked"),
    [
        ("claude-test-model", 1024, 3),
        ("claude-test-model", 1023, 0),  # below the minimum cacheable prompt
        ("claude-3-5-haiku-latest", 2047, 0),  # Haiku caches from 2,048 tokens
        ("claude-3-5-haiku-latest", 2048, 3),
    ],
)
def test_anthropic_breakpoints_only_above_the_minimum_cacheable_length(
    model: str, tokens: int, marked: int
) -> None:
    recorder = Recorder((200, fixture("anthropic_message.json"), {}))
    backend = AnthropicBackend(
        model,
        OPTIONS,
        http_client=httpx2.AsyncClient(
            transport=httpx2.MockTransport(lambda request: recorder.reply(request, httpx2.Response))
        ),
    )
    group = replace(GROUP, stem_tokens=tokens, previous_tokens=tokens, next_tokens=tokens)
    asyncio.run(backend.generate(grouped(group)))
    content = recorder.body()["messages"][0]["content"]
    breakpoints = [block for block in content if isinstance(block, dict) and "cache_control" in block]
    assert len(breakpoints) == marked
    if not marked:
        assert content == CONTENT


@pytest.mark.parametrize(
    "group",
    [
        replace(GROUP, stem_chars=0, previous_chars=0, next_chars=0),
        PrefixGroup(key=GROUP.key, calls=1, shared_tokens=1500),
    ],
    ids=["not-in-last-turn", "lone-call-sharing-nothing"],
)
def test_anthropic_sends_no_breakpoint_without_a_shared_last_turn_or_anything_shared(
    group: PrefixGroup,
) -> None:
    recorder = Recorder((200, fixture("anthropic_message.json"), {}))
    asyncio.run(anthropic(recorder).generate(grouped(group)))
    assert recorder.body()["messages"] == [{"role": "user", "content": CONTENT}]


def test_a_prefix_shared_with_both_neighbours_is_one_breakpoint() -> None:
    recorder = Recorder((200, fixture("anthropic_message.json"), {}))
    same = replace(GROUP, previous_tokens=2000, previous_chars=len(AFTER))
    asyncio.run(anthropic(recorder).generate(grouped(same)))
    content = recorder.body()["messages"][0]["content"]
    assert [block["text"] for block in content] == [SHARED, AFTER[len(SHARED) :], "\nQuestion: the code?"]
    assert ["cache_control" in block for block in content] == [True, True, False]


def openai(recorder: Recorder, base_url: str | None = None) -> OpenAICompatBackend:
    transport = httpx.MockTransport(lambda request: recorder.reply(request, httpx.Response))
    return OpenAICompatBackend("gpt-4o", replace_options(base_url), transport=transport)


def replace_options(base_url: str | None) -> RemoteOptions:
    return RemoteOptions(**{**OPTIONS.model_dump(), "base_url": base_url})


def test_openai_gets_the_groups_prompt_cache_key_and_reports_cached_tokens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED_KEY)
    recorder = Recorder((200, fixture("openai_chat_completion_cached.json"), {}))
    completion = asyncio.run(openai(recorder).generate(grouped(GROUP)))
    assert recorder.requests[0].url == "https://api.openai.com/v1/chat/completions"
    assert recorder.body()["prompt_cache_key"] == GROUP.key
    assert recorder.body()["messages"] == [dict(message) for message in REQUEST.messages]
    assert (completion.prompt_tokens, completion.cached_tokens, completion.cache_write_tokens) == (
        2006,
        1920,
        0,
    )


def test_other_openai_compatible_servers_get_no_cache_key() -> None:
    recorder = Recorder((200, fixture("openai_chat_completion_cached.json"), {}))
    asyncio.run(openai(recorder, "http://127.0.0.1:8000/v1").generate(grouped(GROUP)))
    assert "prompt_cache_key" not in recorder.body()


def test_gemini_implicit_cache_reads_are_the_rows_cached_tokens() -> None:
    recorder = Recorder((200, fixture("gemini_generate_content.json"), {}))
    completion = asyncio.run(gemini(recorder).generate(grouped(GROUP)))
    assert completion.cached_tokens == 512 and completion.prompt_tokens == 1193
    assert "cache" not in json.dumps(recorder.body()).lower()  # nothing extra is sent


STOPPED = replace(REQUEST, stop=AnswerStop(strings=(".\n",)))
"""A phrase question's request under ``generation.stop: answer``: its kind's stop sequence."""


def test_anthropic_sends_the_answer_kinds_stop_sequences() -> None:
    recorder = Recorder((200, fixture("anthropic_message.json"), {}))
    completion = asyncio.run(anthropic(recorder).generate(STOPPED))
    assert completion.error is None
    assert recorder.body()["stop_sequences"] == [".\n"]
    line_only = replace(REQUEST, stop=AnswerStop(answer_line="digits"))  # no sequence says it
    asyncio.run(anthropic(recorder).generate(line_only))
    assert "stop_sequences" not in recorder.body(1)


def test_gemini_sends_the_answer_kinds_stop_sequences() -> None:
    recorder = Recorder((200, fixture("gemini_generate_content.json"), {}))
    completion = asyncio.run(gemini(recorder).generate(STOPPED))
    assert completion.error is None
    assert recorder.body()["generationConfig"]["stopSequences"] == [".\n"]
    line_only = replace(REQUEST, stop=AnswerStop(answer_line="label"))
    asyncio.run(gemini(recorder).generate(line_only))
    assert "stopSequences" not in recorder.body(1)["generationConfig"]
