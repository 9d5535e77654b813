"""rotscope inside Inspect AI (``pip install 'rotscope[inspect]'``): rotscope's task families as
Inspect tasks (``inspect eval rotscope/niah``), rotscope's backends as an Inspect model provider
(``--model rotscope/<rotscope model>``) and a rotscope run as an Inspect log
(``rotscope export RUN --format inspect``).

This module imports nothing of Inspect: ``require_inspect`` is the one-line refusal when the extra
is missing, and the entry point (``registry``) is what Inspect loads."""

from __future__ import annotations

from rotscope.errors import BadInput

INSTALL_HINT = "pip install 'rotscope[inspect]'"


def require_inspect(what: str) -> None:
    """``BadInput`` in one line when Inspect AI is not installed."""
    try:
        import inspect_ai  # noqa: F401
    except ImportError:
        raise BadInput(f"{what} needs Inspect AI: {INSTALL_HINT}") from None
