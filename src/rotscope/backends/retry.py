"""Retries for remote calls: exponential backoff with jitter, Retry-After honoured, a fixed number
of attempts. Backends classify each failure as ``Transient`` (worth another attempt) or raise
``BackendRefused`` (auth, permission, unknown model: stop the run); anything else is not retried."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt
from tenacity.wait import wait_exponential_jitter

T = TypeVar("T")

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})
REFUSED_STATUSES = frozenset({401, 403, 404})


class Transient(Exception):
    """A failure another attempt may cure; ``retry_after_s`` is the server's own advice."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class Unreachable(Transient):
    """No connection to the server at all (refused, DNS, TLS): retried like any transient fault."""


class Permanent(Exception):
    """A failure of this one request that retrying cannot cure (400, 422, a refused prompt)."""


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 6
    initial_s: float = 1.0
    max_s: float = 60.0


def retry_after_seconds(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` (seconds or HTTP date) or ``retry-after-ms`` header."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(float(millis) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - (now or datetime.now(UTC))).total_seconds(), 0.0)


def is_retry_status(status: int) -> bool:
    return status in RETRY_STATUSES or status >= 500


class _Wait:
    """Retry-After when the server gave one (capped at ``max_s``), else exponential jitter."""

    def __init__(self, policy: RetryPolicy) -> None:
        self._max_s = policy.max_s
        self._backoff = wait_exponential_jitter(
            initial=policy.initial_s, max=policy.max_s, jitter=policy.initial_s
        )

    def __call__(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        if isinstance(error, Transient) and error.retry_after_s is not None:
            return min(error.retry_after_s, self._max_s)
        return float(self._backoff(state))


async def call_with_retries(call: Callable[[], Awaitable[T]], policy: RetryPolicy) -> T:
    """The result of ``call``, retried on ``Transient`` up to ``policy.max_attempts`` attempts; the
    last ``Transient`` is raised when all fail. Any other exception passes through at once."""
    retrying = AsyncRetrying(
        stop=stop_after_attempt(policy.max_attempts),
        wait=_Wait(policy),
        retry=retry_if_exception_type(Transient),
        reraise=True,
    )
    result: T = await retrying(call)
    return result
