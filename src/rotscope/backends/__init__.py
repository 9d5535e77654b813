"""Backends: one module each, registered by provider prefix (``llamacpp/PATH``, ``fake/NAME``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rotscope.config import BUNDLED_MODEL, ExperimentConfig
from rotscope.errors import BadInput
from rotscope.types import Backend

BackendFactory = Callable[[str, ExperimentConfig], Backend]
"""Builds a backend from the model name after the provider prefix and the experiment config."""

BACKENDS: dict[str, BackendFactory] = {}


def register_backend(provider: str) -> Callable[[BackendFactory], BackendFactory]:
    def add(factory: BackendFactory) -> BackendFactory:
        BACKENDS[provider] = factory
        return factory

    return add


def split_model(model: str) -> tuple[str, str]:
    """``(provider, name)`` of a model string; a bare path ending in .gguf is a llama.cpp model."""
    if model == BUNDLED_MODEL:
        from rotscope.backends.llamacpp import bundled_model_path

        return "llamacpp", str(bundled_model_path())
    provider, slash, name = model.partition("/")
    if slash and provider in _known_providers():
        return provider, name
    if model.endswith(".gguf") or Path(model).suffix:
        return "llamacpp", model
    providers = ", ".join(_known_providers())
    raise BadInput(f"model: {model!r} is neither a .gguf path nor provider/name (providers: {providers})")


def _known_providers() -> list[str]:
    # Registers the built-in backends; provider SDKs are imported only when a model is created.
    from rotscope.backends import anthropic, fake, gemini, llamacpp, openai_compat  # noqa: F401

    return sorted(BACKENDS)


def create_backend(config: ExperimentConfig) -> Backend:
    provider, name = split_model(config.model)
    return BACKENDS[provider](name, config)
