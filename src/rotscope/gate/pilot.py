"""A pilot run's baseline accuracy, for ``rotscope plan --power P --pilot DIR`` to size the gate at
the accuracy the model really has (docs/gates.md, "What a gate can decide"): the tests' power
depends on it (at the shipped example's real 0.30 the 17 cases sized at an assumed 0.90 PASS an
identical candidate 57% of the time, not 80%)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rotscope.errors import BadInput
from rotscope.store import RunStore


@dataclass(frozen=True)
class Pilot:
    """What the pilot run says: its accuracy over scored items with evidence, and how many."""

    path: Path
    accuracy: float
    items: int

    def describe(self) -> str:
        return (
            f"baseline accuracy {self.accuracy:.2f} from the pilot run {self.path} "
            f"({self.items} scored items)"
        )


def pilot_accuracy(path: Path) -> Pilot:
    """The pilot run folder's accuracy over its finished, scored items with evidence (controls
    left out); ``BadInput`` (one line, exit 2) where ``path`` is no run folder or has none."""
    if not path.is_dir():
        raise BadInput(f"plan --pilot {path}: not a run folder")
    try:
        with RunStore.read(path) as store:
            rows = store.rows()
    except BadInput as error:
        raise BadInput(f"plan --pilot: {error}") from None
    scored = [
        row
        for row in rows
        if row.get("status") == "ok"
        and not row.get("control")
        and row.get("outcome") in ("correct", "incorrect")
    ]
    if not scored:
        raise BadInput(f"plan --pilot {path}: the run has no scored items with evidence to size from")
    correct = sum(row["outcome"] == "correct" for row in scored)
    return Pilot(path, correct / len(scored), len(scored))
