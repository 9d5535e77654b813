"""The prompts of an experiment on session filler: every case at every length and depth inside a
session (layouts named ``filler: session``), beside the static filler's when ``filler.static`` is
set, so the two can be paired on cases."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Literal, TypedDict

from rotscope.config.experiment import ExperimentConfig
from rotscope.errors import BadInput
from rotscope.filler import describe_filler
from rotscope.filler.session import GENERATED, Turn, session_source, session_turns
from rotscope.filler.variants import variant_seed, variants_for
from rotscope.position import Position
from rotscope.prompt.builder import PlacementError
from rotscope.prompt.session import SESSION_FILLER, SessionBuilder
from rotscope.types import Case, Layout, Rejection, RenderedPrompt, Tokenizer

_CHARS_PER_TOKEN = 6
"""Characters of turns read per token of the longest length: more than any tokenizer needs."""

SessionWriter = Callable[[int, frozenset[str], int], list[Turn]]
"""Gives the session of a variant's seed, turns holding a guarded string left out, longer than the
given tokens: with ``filler.assistant: model``, the session whose notes the model wrote (the run
step ``execution.workflows.self_session`` writes it into the run folder, or reads it back from there)."""


def session_layouts(
    case: Case, config: ExperimentConfig, control_position: str, own_position: str
) -> list[Layout]:
    """The case's layouts in session filler: the grid's (or its pins'), each named ``session``.
    An evidence-only control has no filler to be in, so none."""
    if case.evidence_only:
        return []
    if config.offsets() or any(Position.parse(spec).offset_tokens is not None for _, spec in case.pins):
        raise BadInput(
            "depths: token offsets (@N) are not supported with session filler; use fractions or names"
        )
    if case.control:
        lengths = sorted({length for length, _ in case.pins}) if case.pins else list(config.lengths)
        return [Layout(length, 0.0, control_position, SESSION_FILLER) for length in lengths]
    if case.pins:
        pinned = [(length, Position.parse(spec)) for length, spec in case.pins]
        return [Layout(length, float(p.fraction or 0.0), p.name, SESSION_FILLER) for length, p in pinned]
    if case.own_depths:
        return [Layout(length, 0.0, own_position, SESSION_FILLER) for length in config.lengths]
    return [
        Layout(length, depth, name, SESSION_FILLER)
        for length in config.lengths
        for depth, name in config.positions()
    ]


def _read_turns(config: ExperimentConfig, seed: int, guarded: frozenset[str], longest: int) -> list[Turn]:
    """Enough turns of the session for the longest length (all of a transcript)."""
    wanted = longest * _CHARS_PER_TOKEN
    turns: list[Turn] = []
    chars = 0
    for turn in session_turns(config.filler, seed, guarded):
        turns.append(turn)
        chars += len(turn.content)
        if chars >= wanted:
            break
    return turns


def stand_in(config: ExperimentConfig) -> SessionWriter:
    """A writer that gives the generated session with its invented notes in place of the model's:
    what a dry run plans with (the counts of a session the model has not written yet)."""
    return lambda seed, guarded, longest: _read_turns(config, seed, guarded, longest)


def _digest(variants: list[list[Turn]]) -> str:
    material = json.dumps([[(t.role, t.name, t.content) for t in turns] for turns in variants])
    return hashlib.sha256(material.encode()).hexdigest()[:16]


class SessionInfo(TypedDict):
    """What a run records of its session filler (the corpus's ``session``)."""

    source: str
    digest: str
    turns: int
    variants: int
    turn: Literal["tool", "user", "assistant"]
    assistant: Literal["generated", "model"]


def session_prompts(
    config: ExperimentConfig,
    numbered: list[tuple[Case, int]],
    tokenizer: Tokenizer,
    guarded: frozenset[str],
    layout_names: tuple[str, str],
    writer: SessionWriter | None = None,
) -> tuple[list[tuple[Case, Layout, RenderedPrompt]], list[Rejection], SessionInfo]:
    """Every case rendered in session filler (case ``i`` in session variant ``i mod variants``),
    the rejections, and what the run records of the session. ``writer`` gives the sessions whose
    notes the model writes (``filler.assistant: model``)."""
    longest = max([*config.lengths, *(length for case, _ in numbered for length, _ in case.pins)])
    generated = session_source(config.filler) == GENERATED
    count = (
        variants_for(config.filler.variants, 1 + max((index for _, index in numbered), default=0))
        if generated
        else 1
    )
    if config.filler.assistant == "model":
        if writer is None:
            raise BadInput(
                "filler.assistant: model: the model writes the session when the run starts, so it cannot "
                "be planned without running (set assistant: generated to plan with invented notes)"
            )
        variants = [writer(variant_seed(config.seed, v), guarded, longest) for v in range(count)]
    else:
        variants = [_read_turns(config, variant_seed(config.seed, v), guarded, longest) for v in range(count)]
    digest = _digest(variants)
    origin = describe_filler(config.filler)
    builders = [
        SessionBuilder(
            tokenizer,
            turns,
            turn_kind=config.filler.turn,
            digest=digest,
            origin=origin,
            tolerance=config.length_tolerance,
            depth_tolerance=config.depth_tolerance,
            placement=config.placement,
            seed=config.seed,
        )
        for turns in variants
    ]
    rendered: list[tuple[Case, Layout, RenderedPrompt]] = []
    rejected: list[Rejection] = []
    control_position, own_position = layout_names
    for case, index in numbered:
        builder = builders[index % len(builders)]
        for layout in session_layouts(case, config, control_position, own_position):
            try:
                rendered.append((case, layout, builder.render(case, layout)))
            except PlacementError as error:
                rejected.append(Rejection.of(case, layout, str(error)))
    info: SessionInfo = {
        "source": origin,
        "digest": digest,
        "turns": sum(len(turns) for turns in variants),
        "variants": len(variants),
        "turn": config.filler.turn,
        "assistant": config.filler.assistant,
    }
    return rendered, rejected, info
