"""Anthropic's Messages API (``anthropic/NAME``), through the ``anthropic`` SDK with its own retries
off. The SDK is an optional extra: ``pip install rotscope[anthropic]``.

The current Messages API takes no ``temperature`` or ``seed`` (the SDK has no such arguments), so
sampling is the provider's; ``remote.params`` passes any field an older model still accepts.

Prompt caching: the last turn is sent as text blocks cut where the run's stem and the prefixes the
call shares with the calls before and after it in its prefix group end, those marked
``cache_control`` (three of the four breakpoints a request may carry), so the first call to reach a
prefix writes it (at 1.25 times the input price) and the next one reads it at a tenth of the input
price (``cache_breakpoints``)."""

from __future__ import annotations

from typing import Any

from rotscope.backends import CHAT_API_LIKELIHOOD, SHORTEST_CACHED, Extra, PromptCache, register_backend
from rotscope.backends.price_table import provider_prices
from rotscope.backends.remote import RemoteBackend, missing_extra, require_reply
from rotscope.backends.remote_options import RemoteOptions
from rotscope.backends.retry import Permanent, Transient, Unreachable
from rotscope.config.experiment import ExperimentConfig
from rotscope.types import Completion, GenerateRequest, PrefixGroup

STOPPED_BY_PROVIDER = {"refusal", "max_tokens"}
"""``stop_reason`` values that, with no text, mean the reply was cut short or refused."""

SDK = Extra("anthropic", "anthropic", "anthropic")
"""The provider SDK this backend imports when a model is made (``rotscope doctor`` checks it)."""


def _sdk() -> Any:
    try:
        import anthropic
    except ImportError:
        raise missing_extra(SDK.package, SDK.extra) from None
    return anthropic


def split_system(messages: tuple[dict[str, str], ...]) -> tuple[str | None, list[dict[str, str]]]:
    """The Messages API takes the system prompt apart from the turns."""
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system") or None
    turns = [{"role": m["role"], "content": m["content"]} for m in messages if m["role"] != "system"]
    return system, turns


MAX_BREAKPOINTS = 4
"""``cache_control`` blocks one request may carry."""


def cache_breakpoints(
    turns: list[dict[str, Any]], group: PrefixGroup | None, model: str
) -> list[dict[str, Any]]:
    """``turns`` with the last one cut into text blocks where the run's stem and the prefixes this
    call shares with its neighbours in its group end, each of those blocks marked ``cache_control``
    (at most three of the four breakpoints a request may carry): the stem is written once for the
    run; of two neighbours, the first to run writes the prefix they share and the second reads it,
    so in the grouped order every call but a group's first reads all it shares with the call
    before it. A prefix shorter than the model's minimum cacheable length or ending before the last
    turn gets no breakpoint. The blocks joined are the turn's text, unchanged."""
    if group is None or not turns:
        return turns
    least = shortest_cached(model)
    prefixes = (
        (group.stem_tokens, group.stem_chars),
        (group.previous_tokens, group.previous_chars),
        (group.next_tokens, group.next_chars),
    )
    cuts = {chars for tokens, chars in prefixes if tokens >= least and chars > 0}
    if not cuts:
        return turns
    content = turns[-1]["content"]
    blocks: list[dict[str, Any]] = []
    start = 0
    for cut in sorted(cuts)[:MAX_BREAKPOINTS]:
        blocks.append({"type": "text", "text": content[start:cut], "cache_control": {"type": "ephemeral"}})
        start = cut
    if content[start:]:
        blocks.append({"type": "text", "text": content[start:]})
    return [*turns[:-1], {"role": turns[-1]["role"], "content": blocks}]


class AnthropicBackend(RemoteBackend):
    provider = "anthropic"
    default_key_env = "ANTHROPIC_API_KEY"
    default_base_url = "https://api.anthropic.com"

    def __init__(self, name: str, options: RemoteOptions, http_client: Any | None = None) -> None:
        self._sdk = _sdk()
        super().__init__(name, options)
        self._http_client = http_client

    def _client(self, key: str | None) -> Any:
        return self._sdk.AsyncAnthropic(
            api_key=key,
            base_url=self.options.base_url,  # None: the SDK's own endpoint
            max_retries=0,
            timeout=self.options.timeout_s,
            http_client=self._http_client,
        )

    async def _send(self, request: GenerateRequest, key: str | None) -> Completion:
        system, turns = split_system(request.messages)
        arguments: dict[str, Any] = {
            "model": self.name,
            "messages": cache_breakpoints(turns, request.prefix_group, self.model_id),
            "max_tokens": request.params.max_tokens,
        }
        if system is not None:
            arguments["system"] = system
        if request.stop is not None and request.stop.strings:
            # the answer kind's stop sequences (``generation.stop: answer``), left out of the reply
            arguments["stop_sequences"] = list(request.stop.strings)
        if self.options.params:
            arguments["extra_body"] = dict(self.options.params)
        message = await self._call(self._client(key).messages.create(**arguments))
        try:
            text = "".join(block.text for block in message.content if block.type == "text")
            usage = message.usage
            stop = message.stop_reason if message.stop_reason in STOPPED_BY_PROVIDER else None
            read, written = (
                int(usage.cache_read_input_tokens or 0),
                int(usage.cache_creation_input_tokens or 0),
            )
            return Completion(
                text=require_reply(text, stop),
                prompt_tokens=int(usage.input_tokens) + read + written,  # input_tokens counts neither
                completion_tokens=int(usage.output_tokens),
                cached_tokens=read,
                cache_write_tokens=written,
            )
        except (AttributeError, TypeError, ValueError):
            raise Transient("malformed response") from None

    async def count_tokens(self, messages: tuple[dict[str, str], ...]) -> int:
        """The provider's own count of a prompt (the free count_tokens endpoint)."""
        system, turns = split_system(messages)
        arguments: dict[str, Any] = {"model": self.name, "messages": turns}
        if system is not None:
            arguments["system"] = system
        counted = await self._call(self._client(self.api_key()).messages.count_tokens(**arguments))
        return int(counted.input_tokens)

    async def _call(self, pending: Any) -> Any:
        """Await an SDK call, mapping its exceptions onto retry, error row or stop."""
        sdk = self._sdk
        try:
            return await pending
        except sdk.APIStatusError as error:
            self.check_status(error.status_code, error.response.headers, error.message)
            raise Permanent(f"HTTP {error.status_code}") from None
        except sdk.APITimeoutError:
            raise Transient(f"timed out after {self.options.timeout_s:g} s") from None
        except sdk.APIConnectionError as error:
            cause = type(error.__cause__ or error).__name__
            failure = Unreachable if cause == "ConnectError" else Transient
            raise failure(f"connection failed ({cause})") from None
        except (sdk.APIResponseValidationError, ValueError):
            raise Transient("malformed response") from None


def shortest_cached(name: str) -> int:
    """The shortest prefix Anthropic caches: 1,024 tokens, 2,048 for the Haiku models."""
    return 2 * SHORTEST_CACHED if "haiku" in name else SHORTEST_CACHED


PRICES = provider_prices("anthropic")
"""Anthropic's list prices, USD per million tokens, each with its source and date (``data/prices.yaml``)."""


@register_backend(
    "anthropic",
    likelihood=CHAT_API_LIKELIHOOD,
    hint="anthropic/NAME (key from ANTHROPIC_API_KEY or --api-key-env; pip install rotscope[anthropic])",
    extra=SDK,
    prices=PRICES,
    prompt_cache=PromptCache(shortest=shortest_cached),
)
def anthropic_backend(name: str, config: ExperimentConfig) -> AnthropicBackend:
    return AnthropicBackend(name, config.section(RemoteOptions))
