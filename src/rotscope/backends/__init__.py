"""Backends: one module each, registered by provider prefix (``llamacpp/PATH``, ``fake/NAME``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rotscope._util.checks import Check
from rotscope.config.experiment import ExperimentConfig, Price
from rotscope.errors import BadInput
from rotscope.registry import Registry, register_section
from rotscope.types import Backend

__all__ = [
    "BACKENDS",
    "CHAT_API_LIKELIHOOD",
    "NO_LIKELIHOOD",
    "BackendEntry",
    "BackendFactory",
    "Extra",
    "MachineChecks",
    "PromptCache",
    "create_backend",
    "listed_prices",
    "prompt_cache",
    "register_backend",
    "split_model",
]

BackendFactory = Callable[[str, ExperimentConfig], Backend]
"""Builds a backend from the model name after the provider prefix and the experiment config."""


ModelClaim = Callable[[str], str | None]
"""A backend's claim on a model string that is no ``provider/NAME`` (a bare path, a shorthand): the
name its factory gets, or ``None`` when the string is not for it."""


@dataclass(frozen=True)
class Extra:
    """The optional package a backend's SDK comes from: ``rotscope doctor`` checks that
    ``module`` imports and otherwise says ``pip install rotscope[extra]``."""

    package: str
    """The distribution's name, whose version doctor prints (``google-genai``)."""
    module: str
    """What the backend imports (``google.genai``)."""
    extra: str
    """rotscope's extra that installs it (``gemini``)."""


MachineChecks = Callable[[Callable[[Backend], Any]], list[Check]]
"""A backend's own lines of ``rotscope doctor`` (its engine's build, a benchmark), given doctor's
way of running an engine in a worker process (``rotscope.execution.doctor.in_worker``)."""


SHORTEST_CACHED = 1024
"""The shortest prefix a provider's prompt cache keeps, in tokens, unless its backend says more."""


def _shortest_cached(name: str) -> int:
    return SHORTEST_CACHED


@dataclass(frozen=True)
class PromptCache:
    """How a provider caches prompt prefixes, for the estimate of what caching saves: the shortest
    prefix it keeps for a model (``NAME`` after the provider; shorter prefixes are never cached),
    and for an automatic cache (every prefix a call evaluated is kept, no breakpoints) the
    granularity of a hit in tokens; ``None``: only the breakpoints a request sets are cached."""

    shortest: Callable[[str], int] = _shortest_cached
    automatic_step: int | None = None


BREAKPOINTS = PromptCache()
"""A prompt cache of breakpoints set by the request, from 1,024 tokens (any backend that says none)."""


@dataclass(frozen=True)
class BackendEntry:
    """A registered backend: its factory, the line ``rotscope models`` prints, the models it can
    find on this machine (``None``: any name it is given), its claim on model strings that name no
    provider, the optional package its SDK needs and its own checks of this machine."""

    factory: BackendFactory
    hint: str
    models: Callable[[], list[str]] | None = None
    claims: ModelClaim | None = None
    extra: Extra | None = None
    checks: MachineChecks | None = None
    prices: Mapping[str, Price] = field(default_factory=dict)
    prompt_cache: PromptCache = BREAKPOINTS
    likelihood: str = ""
    """Whether its models read an answer's likelihood (``run --score likelihood|both``), in words
    for ``rotscope models``: how, or why not; empty: it reads none."""


NO_LIKELIHOOD = "not declared (a run keeps both scores where its models read a likelihood, else accuracy)"
"""What ``rotscope models`` says of a backend that declares no ``likelihood``."""
CHAT_API_LIKELIHOOD = (
    "reads no answer likelihood: a chat API gives log-probabilities of the tokens it generates, "
    "never of given answer tokens after the prompt; --score accuracy only"
)
"""What the remote chat APIs (and an agent command) say: they cannot teacher-force an answer."""


BACKENDS: Registry[BackendEntry] = Registry("backend", "model", "rotscope.backends", BackendEntry)
"""Found through the ``rotscope.backends`` entry points, the built-ins' as an outside package's;
provider SDKs load only when a model is made."""


def register_backend(
    provider: str,
    *,
    hint: str,
    models: Callable[[], list[str]] | None = None,
    options: tuple[str, type] | None = None,
    claims: ModelClaim | None = None,
    extra: Extra | None = None,
    checks: MachineChecks | None = None,
    prices: Mapping[str, Price] | None = None,
    prompt_cache: PromptCache = BREAKPOINTS,
    likelihood: str = "",
) -> Callable[[BackendFactory], BackendFactory]:
    """Register a backend factory for ``provider/NAME`` models; ``options``: ``(key, class)`` of
    the backend's own section of the experiment file (``rotscope.registry.register_section``),
    read in the factory as ``config.section(class)``; ``claims``: the model strings without a
    provider it takes (``split_model``); ``extra``: the optional package its SDK needs (``rotscope
    doctor`` checks it); ``checks``: its own lines of ``rotscope doctor``; ``prices``: list prices
    of its models by ``NAME`` (the config's ``prices:`` overrides them); ``prompt_cache``: how its
    provider caches prompt prefixes; ``likelihood``: whether and how it reads an answer's likelihood,
    in words (``rotscope models``; the backend's ``Capabilities.likelihood`` decides)."""

    def add(factory: BackendFactory) -> BackendFactory:
        if options is not None:
            register_section(*options, module=factory.__module__)
        entry = BackendEntry(
            factory, hint, models, claims, extra, checks, dict(prices or {}), prompt_cache, likelihood
        )
        BACKENDS.register(provider, module=factory.__module__)(entry)
        return factory

    return add


def split_model(model: str) -> tuple[str, str]:
    """``(provider, name)`` of a model string: ``provider/NAME``, else the one backend that claims
    it (``register_backend(claims=...)``: the llama.cpp backend takes ``bundled`` and a bare path
    to a model file). Only a string that names no provider loads every backend to ask."""
    provider, slash, name = model.partition("/")
    if slash and provider in BACKENDS:
        return provider, name
    claimed = {
        provider: found
        for provider, entry in BACKENDS.items()
        if entry.claims is not None and (found := entry.claims(model)) is not None
    }
    if len(claimed) == 1:
        return next(iter(claimed.items()))
    if claimed:
        raise BadInput(
            f"model: {model!r} is claimed by the backends {', '.join(sorted(claimed))}: write provider/NAME"
        )
    providers = ", ".join(BACKENDS.names())
    raise BadInput(f"model: {model!r} is neither a .gguf path nor provider/name (providers: {providers})")


def listed_prices() -> dict[str, Price]:
    """Every backend's list prices by ``provider/NAME`` (each backend module is imported)."""
    return {
        f"{provider}/{name}": price
        for provider, entry in BACKENDS.items()
        for name, price in entry.prices.items()
    }


def prompt_cache(model: str) -> PromptCache:
    """How the provider of ``model`` (``provider/NAME``) caches prompts; breakpoints from 1,024
    tokens for a model of no known provider."""
    provider, slash, _ = model.partition("/")
    entry = BACKENDS.find(provider) if slash else None
    return BREAKPOINTS if entry is None else entry.prompt_cache


def create_backend(config: ExperimentConfig) -> Backend:
    """The config's model, rendering with the config's ``chat_template`` when it has one."""
    from rotscope.backends.template import with_template

    provider, name = split_model(config.model)
    return with_template(BACKENDS.get(provider).factory(name, config), config.chat_template)
