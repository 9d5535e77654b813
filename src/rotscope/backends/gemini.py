"""Google's Gen AI API (``gemini/NAME``), through the ``google-genai`` SDK with its own retries off.
The SDK is an optional extra: ``pip install rotscope[gemini]``."""

from __future__ import annotations

from typing import Any

from rotscope.backends import CHAT_API_LIKELIHOOD, Extra, PromptCache, register_backend
from rotscope.backends.price_table import provider_prices
from rotscope.backends.remote import RemoteBackend, missing_extra, require_reply
from rotscope.backends.remote_options import RemoteOptions
from rotscope.backends.retry import Permanent, Transient, Unreachable
from rotscope.config.experiment import ExperimentConfig
from rotscope.types import Completion, GenerateRequest

SDK = Extra("google-genai", "google.genai", "gemini")
"""The provider SDK this backend imports when a model is made (``rotscope doctor`` checks it)."""


def _sdk() -> tuple[Any, Any, Any]:
    try:
        from google import genai
        from google.genai import errors, types
    except ImportError:
        raise missing_extra(SDK.package, SDK.extra) from None
    return genai, types, errors


def _stop_reason(response: Any) -> str | None:
    """Why a response may hold no text: a blocked prompt, no candidate at all, or a candidate that
    stopped for another reason than finishing (safety, recitation, the token limit)."""
    feedback = getattr(response, "prompt_feedback", None)
    if feedback is not None and getattr(feedback, "block_reason", None):
        return f"prompt blocked: {feedback.block_reason}"
    candidates = getattr(response, "candidates", None) or []
    if not candidates:
        return "no candidate"
    reason = getattr(candidates[0], "finish_reason", None)
    name = getattr(reason, "name", reason)
    return None if name in (None, "STOP") else str(name)


class GeminiBackend(RemoteBackend):
    provider = "gemini"
    default_key_env = "GEMINI_API_KEY"
    default_base_url = "https://generativelanguage.googleapis.com"

    def __init__(self, name: str, options: RemoteOptions, http_client: Any | None = None) -> None:
        self._genai, self._types, self._errors = _sdk()
        super().__init__(name, options)
        self._http_client = http_client

    def _client(self, key: str | None) -> Any:
        types = self._types
        options = types.HttpOptions(
            base_url=self.options.base_url,  # None: the SDK's own endpoint and API version
            timeout=int(self.options.timeout_s * 1000),
            retry_options=types.HttpRetryOptions(attempts=1),
            httpx_async_client=self._http_client,
        )
        return self._genai.Client(api_key=key, http_options=options)

    def _contents(self, messages: tuple[dict[str, str], ...]) -> tuple[str | None, list[Any]]:
        types = self._types
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system") or None
        contents = [
            types.Content(
                role="model" if m["role"] == "assistant" else "user", parts=[types.Part(text=m["content"])]
            )
            for m in messages
            if m["role"] != "system"
        ]
        return system, contents

    async def _send(self, request: GenerateRequest, key: str | None) -> Completion:
        system, contents = self._contents(request.messages)
        config = self._types.GenerateContentConfig(
            system_instruction=system,
            temperature=request.params.temperature,
            max_output_tokens=request.params.max_tokens,
            seed=request.params.seed,
            # the answer kind's stop sequences (``generation.stop: answer``): ``stopSequences``
            stop_sequences=list(request.stop.strings) if request.stop and request.stop.strings else None,
            **self.options.params,
        )
        response = await self._call(
            self._client(key).aio.models.generate_content(model=self.name, contents=contents, config=config)
        )
        try:
            usage = response.usage_metadata
            return Completion(
                text=require_reply(response.text or "", _stop_reason(response)),
                prompt_tokens=int(usage.prompt_token_count or 0) if usage else 0,
                completion_tokens=int(usage.candidates_token_count or 0) if usage else 0,
                cached_tokens=int(usage.cached_content_token_count or 0) if usage else 0,
            )
        except (AttributeError, TypeError, ValueError):
            raise Transient("malformed response") from None

    async def count_tokens(self, messages: tuple[dict[str, str], ...]) -> int:
        """The provider's own count of a prompt (the free countTokens endpoint)."""
        system, contents = self._contents(messages)
        if system is not None:
            contents.insert(0, self._types.Content(role="user", parts=[self._types.Part(text=system)]))
        counted = await self._call(
            self._client(self.api_key()).aio.models.count_tokens(model=self.name, contents=contents)
        )
        return int(counted.total_tokens)

    async def _call(self, pending: Any) -> Any:
        """Await an SDK call, mapping its exceptions onto retry, error row or stop."""
        import httpx

        try:
            return await pending
        except self._errors.APIError as error:
            response = getattr(error, "response", None)
            headers = dict(getattr(response, "headers", None) or {})
            self.check_status(int(error.code or 0), headers, str(error.message or error.status or ""))
            raise Permanent(f"HTTP {error.code}") from None
        except (httpx.TimeoutException, TimeoutError):
            raise Transient(f"timed out after {self.options.timeout_s:g} s") from None
        except (httpx.ConnectError, ConnectionRefusedError) as error:
            raise Unreachable(f"connection failed ({type(error).__name__})") from None
        except (httpx.TransportError, ConnectionError) as error:
            raise Transient(f"connection failed ({type(error).__name__})") from None
        except ValueError:
            raise Transient("malformed response") from None


PRICES = provider_prices("gemini")
"""Gemini's list prices, USD per million tokens, each with its source and date (``data/prices.yaml``)."""
PROMPT_CACHE = PromptCache(automatic_step=1)
"""Gemini's implicit cache: automatic, from 1,024 tokens, no stated step."""


@register_backend(
    "gemini",
    likelihood=CHAT_API_LIKELIHOOD,
    hint="gemini/NAME (key from GEMINI_API_KEY or --api-key-env; pip install rotscope[gemini])",
    extra=SDK,
    prices=PRICES,
    prompt_cache=PROMPT_CACHE,
)
def gemini_backend(name: str, config: ExperimentConfig) -> GeminiBackend:
    return GeminiBackend(name, config.section(RemoteOptions))
