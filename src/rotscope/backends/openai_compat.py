"""The OpenAI Chat Completions API and every server that speaks it (vLLM, Ollama, llama.cpp server,
LM Studio, TGI): ``openai/NAME`` with ``remote.base_url``.

Cached tokens come from ``prompt_tokens_details.cached_tokens``; a server that reports none (as
llama-cpp-python's does) leaves them unknown, unless ``remote.server_log`` names its log to count
them from (``rotscope.backends.server_log``).

Requests go through httpx directly: the API is one JSON POST, and owning the call keeps retries in
one place (no SDK retries multiplying ours) and every error message free of the key.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx

from rotscope.backends import CHAT_API_LIKELIHOOD, PromptCache, register_backend
from rotscope.backends.price_table import provider_prices
from rotscope.backends.remote import RemoteBackend, require_reply
from rotscope.backends.remote_options import RemoteOptions
from rotscope.backends.retry import Transient, Unreachable
from rotscope.backends.server_log import ServerLog
from rotscope.config.experiment import ExperimentConfig, ProviderLimits
from rotscope.errors import BadInput
from rotscope.types import Completion, GenerateRequest


class OpenAICompatBackend(RemoteBackend):
    provider = "openai"
    default_key_env = "OPENAI_API_KEY"
    key_required = False  # local servers take no key; a named variable that is unset is still an error
    default_base_url = "https://api.openai.com/v1"

    def __init__(
        self, name: str, options: RemoteOptions, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        super().__init__(name, options)
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._server_log = None if options.server_log is None else ServerLog(Path(options.server_log))

    def _http(self) -> httpx.AsyncClient:
        """One connection pool per event loop (a run is one loop; tests may start several)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = httpx.AsyncClient(transport=self._transport, timeout=self.options.timeout_s)
            self._client_loop = loop
        return self._client

    def request_body(self, request: GenerateRequest) -> dict[str, Any]:
        params = request.params
        body: dict[str, Any] = {
            "model": self.name,
            "messages": [dict(message) for message in request.messages],
            "temperature": params.temperature,
            "seed": params.seed,
            self.options.max_tokens_field: params.max_tokens,
            # The answer kind's stop sequences (``generation.stop: answer``), as the API's own ``stop``.
            "stop": list(request.stop.strings) if request.stop and request.stop.strings else None,
        }
        if self.options.reasoning_effort is not None:
            body["reasoning_effort"] = self.options.reasoning_effort
        group = request.prefix_group
        if group is not None and self.base_url == self.default_base_url:
            # OpenAI routes calls with one key to the same cache; other servers need no hint.
            body["prompt_cache_key"] = group.key
        body.update(self.options.params)
        # ``params: {temperature: null}`` drops a field a model refuses (reasoning models: temperature).
        return {key: value for key, value in body.items() if value is not None}

    async def _send(self, request: GenerateRequest, key: str | None) -> Completion:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        try:
            response = await self._http().post(
                f"{self.base_url}/chat/completions", json=self.request_body(request), headers=headers
            )
        except httpx.TimeoutException:
            raise Transient(f"timed out after {self.options.timeout_s:g} s") from None
        except httpx.ConnectError as error:
            raise Unreachable(f"connection failed ({type(error).__name__})") from None
        except httpx.TransportError as error:
            raise Transient(f"connection failed ({type(error).__name__})") from None
        if response.status_code >= 400:
            self.check_status(response.status_code, response.headers, error_detail(response.text))
        completion = parse_chat_completion(response.content)
        if self._server_log is None or completion.cached_tokens is not None:
            return completion
        counted = self._server_log.cached_tokens(completion.prompt_tokens)
        return replace(completion, cached_tokens=counted, cached_source="server_log")

    def close(self) -> None:
        # The pool belongs to the run's event loop, which has ended; dropping it closes the sockets.
        self._client = None
        self._client_loop = None


def error_detail(body: str) -> str:
    """The message of an OpenAI-style error body (``{"error": {"message": ...}}``), else the body."""
    try:
        error = json.loads(body).get("error")
    except (ValueError, AttributeError):
        return body
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    return error if isinstance(error, str) else body


def parse_chat_completion(content: bytes) -> Completion:
    """Text and usage of a Chat Completions response; ``Transient`` when it is not one (a proxy's
    HTML page, a truncated body), since another attempt usually gets a whole answer."""
    try:
        data = json.loads(content)
        choice = data["choices"][0]
        text = choice["message"].get("content") or ""
        stop = choice.get("finish_reason")
        usage = data.get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        reply = require_reply(str(text), stop if stop in STOPPED_BY_PROVIDER else None)
        return Completion(
            text=reply,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            cached_tokens=None if details.get("cached_tokens") is None else int(details["cached_tokens"]),
        )
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise Transient(f"malformed response ({len(content)} bytes)") from None


STOPPED_BY_PROVIDER = {"content_filter", "length"}
"""``finish_reason`` values that, with no text, mean the provider cut the reply short."""


PRICES = provider_prices("openai")
"""OpenAI's list prices, USD per million tokens, each with its source and date (``data/prices.yaml``)."""
PROMPT_CACHE = PromptCache(automatic_step=128)
"""OpenAI's automatic cache: prefixes from 1,024 tokens on, counted in steps of 128."""


@register_backend(
    "openai",
    likelihood=CHAT_API_LIKELIHOOD,
    hint="openai/NAME --base-url URL (any OpenAI-compatible server; key from --api-key-env, "
    "default OPENAI_API_KEY, optional for local servers)",
    prices=PRICES,
    prompt_cache=PROMPT_CACHE,
)
def openai_backend(name: str, config: ExperimentConfig) -> OpenAICompatBackend:
    concurrency = config.limits.get("openai", ProviderLimits()).concurrency
    options = config.section(RemoteOptions)
    if options.server_log is not None and concurrency != 1:
        raise BadInput(
            f"remote.server_log: {options.server_log!r} needs limits.openai.concurrency: 1, not "
            f"{concurrency} (the log's lines are matched to requests in the order they are answered)"
        )
    return OpenAICompatBackend(name, options)
