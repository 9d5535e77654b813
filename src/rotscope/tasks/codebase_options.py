"""The codebase family's own section of the experiment file (``codebase:``): its cases, each a
question answered by a line of the code filler. A config without it has ``None`` there."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, Field, SerializerFunctionWrapHandler, model_serializer

from rotscope.config.sections import SectionSpec, StrictOptions


def _text(value: object) -> object:
    """Numbers written unquoted in YAML (``answer: 719``) are answers as text."""
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


AnswerText = Annotated[str, BeforeValidator(_text, json_schema_input_type=str | int | float)]


class CodeLine(StrictOptions):
    """A line that exists in the code filler: the one line of ``file`` (a path relative to the
    filler's root) that contains ``line_contains``."""

    file: str
    """The file's path relative to the code filler's root."""
    line_contains: str = Field(min_length=1)
    """Text that exactly one line of ``file`` contains: that line is the evidence."""


class CodebaseCase(StrictOptions):
    id: str
    """The case's id, unique in the family; part of each of its items' ids."""
    question: str
    """What the prompt asks about the code."""
    answer: AnswerText
    """The expected answer (a number written unquoted is read as text)."""
    aliases: list[AnswerText] = Field(default_factory=list)
    """Other spellings accepted as the answer."""
    decoys: list[AnswerText] = Field(default_factory=list)
    """Values present in the code base that a wrong answer may name (the fake needles planted
    beside the answer); scored as ``decoy``. Each must stand in some file of the code filler as a
    number or word of its own, or the run stops before planning."""
    kind: Literal["question", "control"] = "question"
    """``question``: a question of the study. ``control``: a question whose answer is a unique fact
    (one value of its kind in the whole code base, no fake needles), asked beside the others to
    show that the code is read at all; ``show`` and the report list it apart (the case's slice
    ``kind``)."""
    evidence: CodeLine
    """The line of the code filler that answers the question."""

    @model_serializer(mode="wrap")
    def _without_question_kind(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """``kind`` left out at its default (``question``), so a codebase experiment that asks no
        control keeps the identity and config digest of runs from before the key."""
        dumped: dict[str, Any] = handler(self)
        if dumped.get("kind") == "question":
            dumped.pop("kind", None)
        return dumped


class CodebaseConfig(StrictOptions):
    """Cases of the ``codebase`` family, whose evidence is a line already in the code filler."""

    SECTION: ClassVar[SectionSpec] = SectionSpec(identity_when_set=False)
    """Part of every run identity since before sections were registered, so at its defaults too
    (``identity_when_set=False``: configs keep their digests)."""

    cases: list[CodebaseCase] = Field(min_length=1)
    """The family's cases, each a question answered by one line of the code filler."""
