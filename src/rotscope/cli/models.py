"""rotscope models."""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from rotscope.cli.common import _guarded, app, console


@app.command()
def models() -> None:
    """List every backend (hint, origin, whether it reads answer likelihoods, models found), then
    where the task families, filler sources and scorers come from."""

    def body() -> None:
        from rotscope.backends import BACKENDS, NO_LIKELIHOOD

        for provider, entry in BACKENDS.items():
            console.print(f"[bold]{escape(provider)}[/bold]")
            console.print(f"  {entry.hint}", markup=False, soft_wrap=True)
            console.print(f"  from {BACKENDS.provider(provider).describe()}", markup=False, soft_wrap=True)
            console.print(f"  likelihood: {entry.likelihood or NO_LIKELIHOOD}", markup=False, soft_wrap=True)
            for found in entry.models() if entry.models is not None else ():
                console.print(f"  {found}", markup=False, soft_wrap=True)
        for line in _component_origins(backends=False):
            console.print(line, markup=False, soft_wrap=True)

    _guarded(body)


def _component_origins(*, backends: bool) -> list[str]:
    """``task families from rotscope 0.1.0 (built-in): niah, ...``: one line per kind and provider,
    read from the entry points (no component is imported)."""
    from rotscope.backends import BACKENDS
    from rotscope.filler import FILLER_SOURCES
    from rotscope.registry import Registry
    from rotscope.scoring import SCORERS
    from rotscope.tasks import TASKS

    kinds: list[tuple[str, Registry[Any]]] = [("backends", BACKENDS)] if backends else []
    kinds += [("task families", TASKS), ("filler sources", FILLER_SOURCES), ("scorers", SCORERS)]
    return [
        f"{label} from {origin}: {', '.join(names)}"
        for label, registry in kinds
        for origin, names in registry.origins().items()
    ]
