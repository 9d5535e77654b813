"""What a scorer returns: the ``Score`` of a reply (its ``Outcome``, a failure category) and, for a
claim-checked or partially credited answer, its ``ClaimReport``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Outcome = Literal["correct", "incorrect", "abstained", "error"]


@dataclass(frozen=True)
class ClaimReport:
    """What a claim-checked answer got wrong, by claim and evidence id (stored with its row)."""

    missing: tuple[str, ...] = ()
    forbidden: tuple[str, ...] = ()
    cited: tuple[str, ...] = ()
    wrong_citations: tuple[str, ...] = ()
    missing_citations: tuple[str, ...] = ()
    partial: dict[str, float] = field(default_factory=dict)
    """Partial credit by measure name, as the scorer of the answer kind registered them
    (``register_scorer(measures=...)``): a ``set`` answer's ``recall`` (the share of its expected
    strings the reply names), a ``reply`` answer's ``similarity`` (MRCR's ratio of the reply, its
    prefix removed, to the expected turn). Rows stored before it carry the measure as a field of
    the report itself (``"recall": 0.5``), and read the same (``rows.partial_credit``)."""

    @property
    def recall(self) -> float | None:
        return self.partial.get("recall")

    @property
    def similarity(self) -> float | None:
        return self.partial.get("similarity")


@dataclass(frozen=True)
class Score:
    outcome: Outcome
    category: str | None = None
    claims: ClaimReport | None = None
