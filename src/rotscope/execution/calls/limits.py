"""Per-provider limits on remote calls: calls in flight, requests per minute, tokens per minute.

Every call to one provider passes the same ``ProviderLimiter`` (the model under test and a judge
on the same provider share it). The token limit is charged a call's prompt tokens plus its
``max_tokens`` before the call starts, as providers reserve them, so long prompts reach it first.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiolimiter import AsyncLimiter

from rotscope.config.experiment import ProviderLimits
from rotscope.errors import BadInput

MINUTE_S = 60.0


class ProviderLimiter:
    """A concurrency semaphore plus leaky-bucket request and token limiters for one provider."""

    def __init__(self, provider: str, limits: ProviderLimits, *, period_s: float = MINUTE_S) -> None:
        self.provider = provider
        self.limits = limits
        self._slots = asyncio.Semaphore(limits.concurrency)
        self._requests = (
            AsyncLimiter(limits.requests_per_minute, period_s) if limits.requests_per_minute else None
        )
        self._tokens = AsyncLimiter(limits.tokens_per_minute, period_s) if limits.tokens_per_minute else None

    def check(self, tokens: int) -> None:
        """A call larger than the whole token budget could never start."""
        if self.limits.tokens_per_minute is not None and tokens > self.limits.tokens_per_minute:
            raise BadInput(
                f"limits.{self.provider}.tokens_per_minute: {self.limits.tokens_per_minute:g} is below "
                f"one call's {tokens} tokens (prompt plus max_tokens)"
            )

    @asynccontextmanager
    async def slot(self, tokens: int) -> AsyncIterator[None]:
        """Wait for the rate limits, then hold one of the provider's concurrent slots."""
        self.check(tokens)
        if self._requests is not None:
            await self._requests.acquire()
        if self._tokens is not None:
            await self._tokens.acquire(tokens)
        async with self._slots:
            yield


class Limiters:
    """One ``ProviderLimiter`` per provider, created on first use from the config's ``limits``."""

    def __init__(self, limits: dict[str, ProviderLimits], *, period_s: float = MINUTE_S) -> None:
        self._limits = limits
        self._period_s = period_s
        self._by_provider: dict[str, ProviderLimiter] = {}

    def for_provider(self, provider: str) -> ProviderLimiter:
        limiter = self._by_provider.get(provider)
        if limiter is None:
            limits = self._limits.get(provider, ProviderLimits())
            limiter = ProviderLimiter(provider, limits, period_s=self._period_s)
            self._by_provider[provider] = limiter
        return limiter
