"""The reasoning family's own section of the experiment file (``reasoning:``)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from rotscope.config.options import PathOption
from rotscope.config.sections import Int, SectionSpec, StrictOptions

ReasoningSource = Literal["generated", "gsm8k", "arc"]
ReasoningFiller = Literal["with_solutions", "questions_only", "neutral"]
ReasoningLayout = Literal["end", "middle", "middle_twice", "middle_dup"]
_DEFAULT_FILLERS: tuple[ReasoningFiller, ...] = ("with_solutions", "questions_only")
_DEFAULT_LAYOUTS: tuple[ReasoningLayout, ...] = ("end", "middle", "middle_twice", "middle_dup")


class ReasoningConfig(StrictOptions):
    """The ``reasoning`` family: where its items come from, which fillers and layouts it crosses.

    ``source``: ``generated`` (seeded arithmetic word problems), ``gsm8k`` or ``arc`` (a local JSONL
    file, or Parquet for ARC, at ``path``). ``items``: how many target items; the rest of the pool
    is filler. ``neutral`` filler comes from the experiment's ``filler`` source.
    """

    SECTION: ClassVar[SectionSpec] = SectionSpec(identity_when_set=False)
    """Part of every run identity since before sections were registered, so at its defaults too
    (``identity_when_set=False``: configs keep their digests)."""

    source: ReasoningSource = "generated"
    """Where the items come from: ``generated`` word problems, or a local ``gsm8k`` or ``arc`` file."""
    path: Annotated[str | None, PathOption()] = None
    """The ``gsm8k`` JSONL or ``arc`` JSONL/Parquet file; relative to the experiment file."""
    items: Int = Field(default=20, gt=0)
    """How many target items are asked; the rest of the pool is filler."""
    fillers: list[ReasoningFiller] = Field(default_factory=lambda: list(_DEFAULT_FILLERS), min_length=1)
    """The fillers crossed: other items ``with_solutions``, their ``questions_only``, or ``neutral``
    text (the experiment's filler source)."""
    layouts: list[ReasoningLayout] = Field(default_factory=lambda: list(_DEFAULT_LAYOUTS), min_length=1)
    """The layouts crossed: the target item at the ``end``, in the ``middle``, ``middle_twice`` (two
    copies at the midpoint) or ``middle_dup`` (one at the midpoint, one at the end)."""

    @field_validator("fillers", "layouts")
    @classmethod
    def _no_repeats(cls, names: list[str]) -> list[str]:
        return list(dict.fromkeys(names))

    @model_validator(mode="after")
    def _file_sources_need_a_path(self) -> ReasoningConfig:
        if self.source != "generated" and not self.path:
            raise ValueError(f"source {self.source!r} reads a local file: set reasoning.path")
        return self
