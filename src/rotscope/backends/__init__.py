"""Backends: one module each, registered by provider prefix (``llamacpp/PATH``, ``fake/NAME``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rotscope.config import BUNDLED_MODEL, ExperimentConfig
from rotscope.errors import BadInput
from rotscope.registry import Registry, register_section
from rotscope.types import Backend

__all__ = ["BACKENDS", "BackendEntry", "BackendFactory", "create_backend", "register_backend", "split_model"]

BackendFactory = Callable[[str, ExperimentConfig], Backend]
"""Builds a backend from the model name after the provider prefix and the experiment config."""


@dataclass(frozen=True)
class BackendEntry:
    """A registered backend: its factory, the line ``rotscope models`` prints, and the models it
    can find on this machine (``None``: any name it is given)."""

    factory: BackendFactory
    hint: str
    models: Callable[[], list[str]] | None = None


BACKENDS: Registry[BackendEntry] = Registry("backend", "model", "rotscope.backends", BackendEntry)
"""Found through the ``rotscope.backends`` entry points, the built-ins' as an outside package's;
provider SDKs load only when a model is made."""


def register_backend(
    provider: str,
    *,
    hint: str,
    models: Callable[[], list[str]] | None = None,
    options: tuple[str, type] | None = None,
) -> Callable[[BackendFactory], BackendFactory]:
    """Register a backend factory for ``provider/NAME`` models; ``options``: ``(key, class)`` of
    the backend's own section of the experiment file (``rotscope.registry.register_section``),
    read in the factory as ``config.section(class)``."""

    def add(factory: BackendFactory) -> BackendFactory:
        if options is not None:
            register_section(*options, module=factory.__module__)
        BACKENDS.register(provider, module=factory.__module__)(BackendEntry(factory, hint, models))
        return factory

    return add


def split_model(model: str) -> tuple[str, str]:
    """``(provider, name)`` of a model string; a bare path ending in .gguf is a llama.cpp model."""
    if model == BUNDLED_MODEL:
        from rotscope.backends.llamacpp import bundled_model_path

        return "llamacpp", str(bundled_model_path())
    provider, slash, name = model.partition("/")
    if slash and provider in BACKENDS:
        return provider, name
    if model.endswith(".gguf") or Path(model).suffix:
        return "llamacpp", model
    providers = ", ".join(BACKENDS.names())
    raise BadInput(f"model: {model!r} is neither a .gguf path nor provider/name (providers: {providers})")


def create_backend(config: ExperimentConfig) -> Backend:
    """The config's model, rendering with the config's ``chat_template`` when it has one."""
    from rotscope.backends.template import with_template

    provider, name = split_model(config.model)
    return with_template(BACKENDS.get(provider).factory(name, config), config.chat_template)
