"""The rotscope command line with one more model, ``production/lexical``: a scripted stand-in for a
production endpoint whose context window silently shrinks at a known time.

It answers as ``fake/lexical`` does (the context line sharing most words with the question) until
it has served ``ROTSCOPE_EXAMPLE_SHRINK_AFTER`` calls (unset: never); from then on it sees only the
last ``ROTSCOPE_EXAMPLE_WINDOW`` tokens of a longer prompt (default 1000), as a server configured
for a smaller window behind a router that trims the head would: evidence early in a long prompt is
lost, nothing else changes. The "time" is the number of calls served, so the example runs in
seconds and its test knows exactly when the shrink happened.

Run as ``python examples/monitor/production.py COMMAND ...`` (any rotscope command).
"""

from __future__ import annotations

import os

from rotscope.backends import register_backend
from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.cli import main
from rotscope.config.experiment import ExperimentConfig
from rotscope.types import Capabilities, GenerateRequest

SHRINK_AFTER = "ROTSCOPE_EXAMPLE_SHRINK_AFTER"
WINDOW = "ROTSCOPE_EXAMPLE_WINDOW"


class ShrinkingEndpoint(FakeBackend):
    """The lexical fake whose window shrinks to ``window`` tokens after ``shrink_after`` calls."""

    def __init__(self, name: str, shrink_after: int | None, window: int) -> None:
        super().__init__(name, self._respond, provider="production")
        # a local engine as far as rotscope is concerned: no response cache, exact ids
        self.capabilities = Capabilities(local=True, exact_ids=True, max_concurrency=1, clearable_cache=True)
        self.shrink_after = shrink_after
        self.window = window
        self._full = lexical_responder()

    def _respond(self, request: GenerateRequest) -> str:
        # ``calls`` counts this call already: the first ``shrink_after`` calls see everything
        shrunk = self.shrink_after is not None and self.calls > self.shrink_after
        tokens = len(request.token_ids)
        if not shrunk or tokens <= self.window:
            return self._full(request)
        return lexical_responder(recent_fraction=self.window / tokens)(request)


@register_backend("production", hint="production/lexical: a scripted endpoint whose window shrinks (example)")
def production(name: str, config: ExperimentConfig) -> ShrinkingEndpoint:
    after = os.environ.get(SHRINK_AFTER)
    return ShrinkingEndpoint(name, int(after) if after else None, int(os.environ.get(WINDOW, "1000")))


if __name__ == "__main__":
    main()
