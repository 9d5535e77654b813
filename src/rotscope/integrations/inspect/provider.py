"""rotscope's backends as an Inspect model provider: ``--model rotscope/<rotscope model name>``
(``rotscope/fake/lexical``, ``rotscope/bundled``, ``rotscope/llamacpp/PATH.gguf``, ...).

Token counts are the model's own tokenizer's, so Inspect never falls back to tiktoken's
``o200k_base`` (which it downloads on first use: without network even a mock model fails)."""

from __future__ import annotations

import asyncio
import atexit
from pathlib import Path
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    ModelUsage,
)
from inspect_ai.tool import ToolChoice, ToolInfo

from rotscope.backends import create_backend
from rotscope.config.experiment import build_config, read_config_file
from rotscope.integrations.inspect.verified import verified_budget, verified_ids
from rotscope.types import DEFAULT_MAX_TOKENS, Backend, GenerateRequest, GenerationParams, Tokenizer

DEFAULT_CONTEXT = 8192
"""The context a local engine is sized for when ``-M context=`` does not say (never above the
model's own window)."""


def backend_for(model: str, config_file: str | None = None) -> Backend:
    """The rotscope backend of ``model``; its engine, remote and cmd sections come from
    ``config_file`` (an experiment file) when given."""
    data: dict[str, Any] = read_config_file(Path(config_file)) if config_file else {}
    data = {**data, "model": model}
    data.setdefault("name", "inspect")
    return create_backend(build_config(data, config_file or "model"))


def message_dicts(messages: list[ChatMessage]) -> tuple[dict[str, str], ...]:
    return tuple({"role": message.role, "content": message.text} for message in messages)


class RotscopeModelAPI(ModelAPI):
    """A rotscope backend driven by Inspect. Model args (``-M``): ``config`` (an experiment file
    whose engine or remote sections configure the backend) and ``context`` (tokens a local engine
    is sized for)."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig | None = None,
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config or GenerateConfig())
        self.backend = backend_for(model_name, model_args.get("config"))
        self.tokenizer: Tokenizer = self.backend.tokenizer()
        context = int(model_args.get("context", DEFAULT_CONTEXT))
        self._context = min(context, self.backend.context_window)
        self._reserved = False
        self._one_at_a_time = asyncio.Lock() if self.backend.capabilities.local else None
        # Inspect closes a model only when it is used as a context manager, not after an eval: a
        # loaded engine left to the interpreter's teardown fails noisily in its finaliser.
        atexit.register(self.backend.close)

    def max_connections(self) -> int:
        return self.backend.capabilities.max_concurrency or super().max_connections()

    async def count_text_tokens(self, text: str) -> int:
        return self.tokenizer.count(text)

    def close(self) -> None:
        self.backend.close()

    def request(self, input: list[ChatMessage], config: GenerateConfig) -> tuple[GenerateRequest, bool]:
        """The backend's request and whether its ids are the verified ones of a rotscope task."""
        messages = message_dicts(input)
        text = self.tokenizer.render_chat(messages)
        known = verified_ids(self.tokenizer.digest(), text)
        ids = known if known is not None else tuple(self.tokenizer.encode(text, special=True))
        # the config's budget where Inspect is given one, else the work item's (its answer kind's)
        budget = config.max_tokens or verified_budget(self.tokenizer.digest(), text)
        params = GenerationParams(
            temperature=config.temperature if config.temperature is not None else 0.0,
            max_tokens=budget or DEFAULT_MAX_TOKENS,
            seed=config.seed if config.seed is not None else 0,
        )
        return GenerateRequest(messages, ids, params), known is not None

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        request, verified = self.request(input, config)
        if not self._reserved:
            self.backend.reserve(self._context - request.params.max_tokens, request.params.max_tokens)
            self._reserved = True
        if self._one_at_a_time is None:
            completion = await self.backend.generate(request)
        else:
            async with self._one_at_a_time:
                completion = await self.backend.generate(request)
        if completion.error is not None:
            # An engine or network failure: Inspect records a sample error, never a wrong answer.
            raise RuntimeError(f"{self.backend.model_id}: {completion.error}")
        output = ModelOutput.from_content(model=self.backend.model_id, content=completion.text)
        output.usage = ModelUsage(
            input_tokens=completion.prompt_tokens - (completion.cached_tokens or 0),
            output_tokens=completion.completion_tokens,
            total_tokens=completion.prompt_tokens + completion.completion_tokens,
            input_tokens_cache_read=completion.cached_tokens or None,
        )
        output.metadata = {
            "prompt_ids": "verified" if verified else "encoded from the messages",
            "prompt_tokens": len(request.token_ids),
            "tokenizer": self.tokenizer.name,
            "tokenizer_digest": self.tokenizer.digest(),
        }
        return output
