"""What ``run --dry-run`` and ``plan`` say, before the first call, of a design whose size cannot
let the effective-length bracket place a length (``analysis.placeable``; issue 48)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rotscope.analysis.placeable import Kind, Placeable, placeable
from rotscope.analysis.tasks import NOLIMA_RATIO
from rotscope.types import WorkItem

_WHO: dict[Kind, str] = {
    "right": "a model right on every item",
    "lost": "one that loses every item past the base length",
}


def _sizes(sizes: Mapping[Kind, int | None], per_case: bool) -> str:
    named = [f"{size} cases per task could place {_WHO[kind]}" for kind, size in sizes.items() if size]
    if not named:
        return ""
    lead = "; with a haystack of its own per case (leave filler.variants unset), " if per_case else "; "
    return lead + ", ".join(named)


def placement_line(found: Placeable) -> str | None:
    """One task's sentence, or ``None`` where both kinds of best data would be placed."""
    if found.right and found.lost:
        return None
    shared = (
        f", clustered on the {found.shared_variants} haystack variants they share"
        if found.shared_variants
        else ""
    )
    head = (
        f"{found.task}: at this size ({found.cases} cases{shared}, {found.lengths} lengths) the bracket "
        f"can place a cliff of {NOLIMA_RATIO:g}× only if"
    )
    if found.lengths < 2:
        return f"{head} more than one length is tested"
    if not found.right and not found.lost:
        why = (
            f" it had more cases: not even {_WHO['right']}, nor {_WHO['lost']}, would be placed "
            "(the bracket would read the base to beyond the longest length)"
        )
    elif found.lost:
        why = (
            " the model loses (nearly) every item past the cliff: "
            f"{_WHO['right']} would not be shown to pass beyond the base length"
        )
    else:
        why = f" the model is right on (nearly) every item: {_WHO['lost']} would not be shown to fail"
    could = {kind: size for kind, size in found.could.items() if size}
    return head + why + _sizes(could, False) + _sizes(found.could_per_case, True)


def placement_lines(items: Iterable[WorkItem]) -> list[str]:
    """The sentences of the tasks whose design cannot place a length at this size."""
    return [line for found in placeable(items) if (line := placement_line(found)) is not None]
