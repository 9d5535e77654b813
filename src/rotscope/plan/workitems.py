"""From a config to verified work items: cases x layouts x trials, each rendered and hashed."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from rotscope.answer_kinds import answer_readings, answer_stop, reply_budget
from rotscope.config.experiment import ExperimentConfig
from rotscope.errors import BadInput
from rotscope.filler import Document, describe_filler, documents
from rotscope.filler.anchor import AnchoredCorpus, anchor_document
from rotscope.filler.corpus import TokenizedCorpus
from rotscope.filler.tree_variants import tree_anchors, tree_corpora, tree_variant_count
from rotscope.filler.variants import variant_corpora, variants_for
from rotscope.plan.injected import inject_faults
from rotscope.plan.pinned_haystacks import PinnedHaystacks
from rotscope.plan.rejections import name_competing_files
from rotscope.plan.schedule import prefill_bounds
from rotscope.plan.separations import check_separations
from rotscope.plan.session_prompts import SessionWriter, session_prompts
from rotscope.position import OFFSET_PREFIX, Position
from rotscope.prompt.builder import PlacementError, PromptBuilder
from rotscope.prompt.session_render import SESSION_FILLER
from rotscope.prompt.variants import keep_consistent
from rotscope.tasks import get_task
from rotscope.tasks.bundles import bundle_all
from rotscope.tasks.cases import TASK as CASES_TASK
from rotscope.tasks.overlap import overlap_notice
from rotscope.types import (
    ABSENT_SUFFIX,
    DEFAULT_MAX_TOKENS,
    EVIDENCE_ONLY_POSITION,
    Backend,
    BackendDescription,
    Case,
    FamilyPrompts,
    GenerationParams,
    Layout,
    PlansOwnPrompts,
    Rejection,
    RenderedPrompt,
    Tokenizer,
    WorkItem,
)

CONTROL_POSITION = "absent"
OWN_DEPTHS_POSITION = "own-depths"
"""The layout of a prompt whose questions sit at depths of their own; its rows carry each
question's depth (``Case.at_depth``)."""


@dataclass
class Plan:
    """Everything a run will send, verified, before any model call."""

    items: list[WorkItem]
    rejections: list[Rejection]
    corpus: dict[str, Any]
    naive_prefill: int
    lower_bound: int
    backend: BackendDescription = field(default_factory=BackendDescription)
    notices: list[str] = field(default_factory=list)
    """Lines a run prints after its plan: what it runs but should be told (a saved case's haystack
    that is not the one it failed in)."""

    @property
    def rejected(self) -> list[str]:
        """Why each rejected prompt was not sent."""
        return [rejection.reason for rejection in self.rejections]

    @property
    def max_prompt_tokens(self) -> int:
        return max((item.prompt.prompt_tokens for item in self.items), default=0)

    @property
    def max_reply_tokens(self) -> int:
        """The largest reply budget of the items (``answer_kinds.reply_budget``): what an engine
        reserves room for beside the longest prompt."""
        return max((item.params.max_tokens for item in self.items), default=DEFAULT_MAX_TOKENS)


def longest_reply(cases: Iterable[Case], given: int | None) -> int:
    """The largest reply budget of calls asking ``cases`` (``given``: ``generation.max_tokens``)."""
    return max((reply_budget(case, given) for case in cases), default=given or DEFAULT_MAX_TOKENS)


def config_reply_budget(config: ExperimentConfig) -> int:
    """The largest reply budget of the experiment's calls before it is planned: ``longest_reply``
    of its cases (the cases of a family that plans its own prompts aside)."""
    if config.generation.max_tokens is not None:
        return config.generation.max_tokens
    return longest_reply(select_cases(config), None)


def numbered_cases(config: ExperimentConfig) -> list[tuple[Case, int]]:
    """Each task's cases (the first ``limit`` of each after ``case_offset``, bundled
    ``questions_per_prompt`` to a prompt), followed by their evidence-absent controls and, with
    ``evidence_only``, their evidence-only ones, each with the index of its case in its family
    (counted from the family's first case, so a case keeps its haystack variant whatever the
    offset; a control has its case's index). A family that plans its own prompts
    (``PlansOwnPrompts``) is planned by itself."""
    selected: list[tuple[Case, int]] = []
    for task in config.tasks:
        family = get_task(task, config)
        if isinstance(family, PlansOwnPrompts):
            continue
        window = list(family.cases())[config.case_offset :][: config.limit]
        cases = bundle_all(window, config.questions_per_prompt, config.seed)
        numbered = list(enumerate(cases, start=config.case_offset))
        selected.extend((case, index) for index, case in numbered)
        if config.controls:
            selected.extend((case.absent_control(answer_readings(case)), index) for index, case in numbered)
        if config.evidence_only:
            # a case without evidence has nothing to show alone: its absent control covers it
            selected.extend(
                (case.evidence_only_control(), index) for index, case in numbered if case.evidence
            )
    return selected


def select_cases(config: ExperimentConfig) -> list[Case]:
    """The cases of ``numbered_cases`` in the same order."""
    return [case for case, _ in numbered_cases(config)]


def without_evidence(case: Case) -> bool:
    """A single-question case with nothing to place (no document, no distractor): every depth
    renders the same prompt, so it has one layout per length (``absent``), and an abstain one is
    its own evidence-absent control (the control's prompt and oracle are the same)."""
    return not case.control and not case.evidence and not case.parts and not case.pins


def layouts_for(
    case: Case, config: ExperimentConfig, builder: PromptBuilder, *, evidence_less_once: bool = True
) -> tuple[list[Layout], list[Rejection]]:
    """The layouts of ``case`` and, for absolute offsets a length cannot hold, a rejection each.

    An evidence-only control has one layout: no filler, its length the prompt's fixed parts; so has,
    per length, a prompt whose questions sit at depths of their own, and (``evidence_less_once``) a
    case without evidence (``without_evidence``). An offset ``@N`` becomes the depth N / filler
    tokens at each length."""
    if case.evidence_only:
        return [Layout(builder.fixed_tokens(case), 0.0, EVIDENCE_ONLY_POSITION)], []
    if case.control or (evidence_less_once and without_evidence(case)):
        return [Layout(length, 0.0, CONTROL_POSITION) for length in case_lengths(case, config)], []
    if case.pins:
        return _pinned_layouts(case, builder)
    if case.own_depths:  # every question pinned at its own depth: the grid's depths are inside
        return [Layout(length, 0.0, OWN_DEPTHS_POSITION) for length in config.lengths], []
    layouts: list[Layout] = []
    skipped: list[Rejection] = []
    separations: list[int | float | None] = [*config.placement.separations] or [None]
    for length in config.lengths:
        layouts.extend(
            Layout(length, depth, name, separation=separation)
            for depth, name in config.positions()
            for separation in separations
        )
        offsets = config.offsets()
        filler = builder.filler_tokens(case, length) if offsets else 0
        for offset in offsets:
            if offset > filler:
                reason = (
                    f"case {case.case_id} at length {length}: offset {OFFSET_PREFIX}{offset} is beyond "
                    f"its {filler} filler tokens"
                )
                skipped.append(
                    Rejection.of(case, None, reason, length=length, position=f"{OFFSET_PREFIX}{offset}")
                )
            else:
                layouts.extend(
                    Layout(
                        length, offset / filler if filler else 0.0, f"{OFFSET_PREFIX}{offset}", separation=sep
                    )
                    for sep in separations
                )
    return layouts, skipped


def case_lengths(case: Case, config: ExperimentConfig) -> list[int]:
    """The prompt lengths ``case`` runs at: its pinned ones, else the experiment's."""
    return sorted({length for length, _ in case.pins}) if case.pins else list(config.lengths)


def _pinned_layouts(case: Case, builder: PromptBuilder) -> tuple[list[Layout], list[Rejection]]:
    """A pinned case's layouts, each at its length and position alone (see ``Case.pins``)."""
    layouts: list[Layout] = []
    skipped: list[Rejection] = []
    for length, spec in case.pins:
        position = Position.parse(spec)
        if position.offset_tokens is None:
            layouts.append(Layout(length, float(position.fraction or 0.0), position.name))
            continue
        filler = builder.filler_tokens(case, length)
        if position.offset_tokens > filler:
            reason = (
                f"case {case.case_id} pinned at length {length}: offset {spec} is beyond its {filler} "
                "filler tokens"
            )
            skipped.append(Rejection.of(case, None, reason, length=length, position=position.name))
        else:
            layouts.append(Layout(length, position.offset_tokens / filler if filler else 0.0, position.name))
    return layouts, skipped


class ModelKey(TypedDict):
    """The part of a backend's description that an item's id hashes (``item_id``): each key is
    ``None`` where the backend does not describe it."""

    backend: str | None
    model: str | None
    model_digest: str | None
    tokenizer_digest: str | None


def item_id(
    model_key: ModelKey,
    token_ids: tuple[int, ...],
    params: GenerationParams,
    case: Case,
    layout: Layout,
    trial: int,
    *,
    fault: str | None = None,
) -> str:
    """Hash of what determines a result (model identity, exact prompt ids, decoding, trial) and of
    the cell it counts in (case, layout): two cells whose prompts coincide are still two items.
    An injected fault (``fault``, its labels) is hashed too, so a faulted item never takes a clean
    one's stored result; without one the ids are as before faults."""
    prompt_digest = hashlib.sha256(np.asarray(token_ids, dtype=np.int64).tobytes()).hexdigest()
    cell = dict(layout.__dict__)
    for key in ("filler", "separation"):
        if cell[key] is None:
            del cell[key]  # keeps the ids of items planned before layouts named a filler, a separation
    parts: list[Any] = [model_key, prompt_digest, params.__dict__, trial, case.task, case.case_id, cell]
    if fault:
        parts.append({"fault": fault})
    material = json.dumps(parts, sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()[:24]


def anchor_documents(
    config: ExperimentConfig, sources: set[str], tokenizer: Tokenizer, guarded: frozenset[str], longest: int
) -> dict[str, AnchoredCorpus] | list[dict[str, AnchoredCorpus]]:
    """For each document that holds evidence already in the corpus, a corpus arranged around it
    from the other documents (none of which holds evidence of any case); where a tree is read in
    rotations (``rotscope.filler.tree_variants``), a list of those, one per rotation."""
    if not sources:
        return {}
    found = {d.name: d for d in documents(config.filler, config.seed, guarded)}
    missing = sorted(sources - set(found))
    if missing:
        raise BadInput(f"filler: {describe_filler(config.filler)} has no document {missing[0]!r}")
    others = [document for name, document in found.items() if name not in sources]
    if (rotations := tree_variant_count(config.filler)) > 1:
        return tree_anchors(
            found,
            sources,
            tokenizer,
            longest,
            variants=rotations,
            allow_repeat=config.filler.allow_repeat,
            origin=describe_filler(config.filler),
        )
    return {
        name: anchor_document(
            found[name],
            others,
            tokenizer,
            longest,
            allow_repeat=config.filler.allow_repeat,
            origin=describe_filler(config.filler),
        )
        for name in sorted(sources)
    }


def build_plan(
    config: ExperimentConfig,
    backend: Backend,
    writer: SessionWriter | None = None,
    *,
    evidence_less_once: bool = True,
) -> Plan:
    """Render and verify every prompt of the experiment; prompts that fail verification are
    listed in ``rejected`` with the reason and never sent. On session filler the cases are
    rendered in the session and, with ``filler.static``, in that static filler as well; a session
    whose notes the model writes (``filler.assistant: model``) comes from ``writer``.

    A case without evidence (``without_evidence``) is planned once per length, and an abstain one
    without its identical control; ``evidence_less_once=False`` plans it at every depth and with
    its control, as plans frozen before this did (``RunSteps.prepare`` falls back to it when a
    frozen plan counts those items)."""
    if config.filler.kind != SESSION_FILLER:
        return _build_plan(config, config, backend, evidence_less_once=evidence_less_once)
    static = config.filler.static
    return _build_plan(
        config,
        None if static is None else config.model_copy(update={"filler": static}),
        backend,
        writer,
        evidence_less_once=evidence_less_once,
    )


def _build_plan(
    config: ExperimentConfig,
    static: ExperimentConfig | None,
    backend: Backend,
    writer: SessionWriter | None = None,
    *,
    evidence_less_once: bool = True,
) -> Plan:
    """``build_plan`` with the static filler's experiment ``static`` (``None``: session only)."""
    numbered = numbered_cases(config)
    check_separations(config, [case for case, _ in numbered])
    if evidence_less_once:  # an abstain case without evidence is its own control: drop the copy
        own_controls = {
            (case.task, f"{case.case_id}{ABSENT_SUFFIX}")
            for case, _ in numbered
            if without_evidence(case) and case.oracle.abstain
        }
        numbered = [(case, i) for case, i in numbered if (case.task, case.case_id) not in own_controls]
    cases = [case for case, _ in numbered]
    longest = max([*config.lengths, *(length for case in cases for length, _ in case.pins)])
    reply = longest_reply(cases, config.generation.max_tokens)
    if longest + reply > backend.context_window:
        raise BadInput(
            f"lengths: {longest} tokens plus max_tokens {reply} exceed the context "
            f"window of {backend.model_id} ({backend.context_window} tokens)"
        )
    tokenizer = backend.tokenizer()
    session = config if config.filler.kind == SESSION_FILLER else None
    config = static or config
    origin = describe_filler(config.filler)
    guarded = frozenset(guard for case in cases for guard in case.guarded)
    sources = {evidence.source for case in cases for evidence in case.evidence if evidence.source}
    corpora: list[TokenizedCorpus] = []

    def filler_documents(seed: int) -> Iterator[Document]:
        """The source's documents in the order of ``seed``, less those that hold evidence."""
        return (d for d in documents(config.filler, seed, guarded) if d.name not in sources)

    def haystacks(variants: int) -> list[TokenizedCorpus]:
        """The haystack variants, read on the first call (cases ask for theirs first; a family that
        plans its own prompts takes the first)."""
        if not corpora and (rotations := tree_variant_count(config.filler)) > 1:
            corpora.extend(
                tree_corpora(
                    list(filler_documents(config.seed)),
                    tokenizer,
                    longest,
                    variants=rotations,
                    allow_repeat=config.filler.allow_repeat,
                    origin=origin,
                )
            )
        if not corpora:
            corpora.extend(
                variant_corpora(
                    filler_documents,
                    tokenizer,
                    longest,
                    seed=config.seed,
                    variants=variants,
                    allow_repeat=config.filler.allow_repeat,
                    origin=origin,
                )
            )
        return corpora

    rendered: list[tuple[Case, Layout, RenderedPrompt]] = []
    rejected: list[Rejection] = []
    # Each case's haystack variant (``i mod variants``, in static filler and in the session apart):
    # stored on its rows, so intervals can cluster on what the cases share.
    static_variants: dict[tuple[str, str], int] = {}
    session_variants: dict[tuple[str, str], int] = {}
    if session is not None:
        in_session, session_rejected, session_info = session_prompts(
            session, numbered, tokenizer, guarded, (CONTROL_POSITION, OWN_DEPTHS_POSITION), writer
        )
        session_variants = {
            (case.task, case.case_id): index % session_info["variants"] for case, index in numbered
        }
    pinned = PinnedHaystacks(
        lambda seed, avoid: (d for d in documents(config.filler, seed, avoid) if d.name not in sources),
        tokenizer,
        allow_repeat=config.filler.allow_repeat,
        origin=origin,
    )
    if cases and static is not None:
        anchors = anchor_documents(config, sources, tokenizer, guarded, longest)

        def builder_of(corpus: TokenizedCorpus, variant: int) -> PromptBuilder:
            return PromptBuilder(
                tokenizer,
                corpus,
                system_prompt=config.system_prompt,
                tolerance=config.length_tolerance,
                depth_tolerance=config.depth_tolerance,
                placement=config.placement,
                seed=config.seed,
                anchors=anchors[variant % len(anchors)] if isinstance(anchors, list) else anchors,
            )

        own_builders: dict[str, PromptBuilder] = {}
        builders = [
            builder_of(corpus, variant)
            for variant, corpus in enumerate(
                haystacks(variants_for(config.filler.variants, 1 + max(index for _, index in numbered)))
            )
        ]
        for case, index in numbered:
            builder = builders[index % len(builders)]
            static_variants[(case.task, case.case_id)] = index % len(builders)
            own_haystack = pinned.corpus(case)
            if own_haystack is not None and case.haystack is not None:  # a case saved from a failure
                builder = own_builders.setdefault(
                    own_haystack.digest, builder_of(own_haystack, case.haystack.variant)
                )
                static_variants[(case.task, case.case_id)] = case.haystack.variant
            layouts, skipped = layouts_for(case, config, builder, evidence_less_once=evidence_less_once)
            rejected.extend(skipped)
            for layout in layouts:
                try:
                    rendered.append((case, layout, builder.render(case, layout)))
                except PlacementError as error:
                    rejected.append(Rejection.of(case, layout, str(error)))
        rejected = name_competing_files(rejected, filler_documents(config.seed))
    if session is not None:
        rendered.extend(in_session)
        rejected.extend(session_rejected)
    own: dict[str, FamilyPrompts] = {}
    for task in config.tasks:
        family = get_task(task, config)
        if isinstance(family, PlansOwnPrompts):
            own[task] = family.plan_prompts(tokenizer, lambda: haystacks(1)[0])
            rendered.extend(own[task].rendered)
            rejected.extend(own[task].rejected)
    description = backend.describe()
    model_key: ModelKey = {
        "backend": description.get("backend"),
        "model": description.get("model"),
        "model_digest": description.get("model_digest"),
        "tokenizer_digest": description.get("tokenizer_digest"),
    }
    items: list[WorkItem] = []
    for case, layout, prompt in rendered:
        variants = session_variants if layout.filler == SESSION_FILLER else static_variants
        for trial in range(config.trials):
            params = GenerationParams(
                temperature=config.generation.temperature,
                max_tokens=reply_budget(case, config.generation.max_tokens),
                seed=config.generation.seed + trial,
            )
            items.append(
                WorkItem(
                    item_id=item_id(model_key, prompt.token_ids, params, case, layout, trial),
                    case=case,
                    layout=layout,
                    model=backend.model_id,
                    trial=trial,
                    prompt=prompt,
                    params=params,
                    instance_id=case.case_id,
                    haystack_variant=variants.get((case.task, case.case_id)),
                    stop=answer_stop(case) if config.generation.stop == "answer" else None,
                )
            )
    items, disagreeing = keep_consistent(items, tokenizer)
    rejected.extend(disagreeing)
    if config.inject:  # after verification and before any call: the assembly faults asked for
        items, unplaceable = inject_faults(
            items,
            config,
            tokenizer,
            lambda item, fault: item_id(
                model_key, item.prompt.token_ids, item.params, item.case, item.layout, item.trial, fault=fault
            ),
        )
        rejected.extend(unplaceable)
    if rejected and all(item.case.control for item in items):
        items = []  # evidence-absent controls of cases none of whose prompts was placed measure nothing
    naive, lower = prefill_bounds([item.prompt.token_ids for item in items])
    asked = config.filler.variants or variants_for(None, 1 + max((index for _, index in numbered), default=0))
    corpus_info = _corpus_info(origin, corpora, asked)
    if session is not None:
        corpus_info = {"source": session_info["source"], "digest": session_info["digest"], "documents": 0,
                       "tokens": 0, **corpus_info, "session": session_info}  # fmt: skip
    for task, prompts in own.items():
        corpus_info[task] = prompts.corpus
        corpus_info.setdefault("source", prompts.corpus_label)
        corpus_info.setdefault("digest", prompts.corpus["digest"])
        corpus_info.setdefault("documents", 0)
        corpus_info.setdefault("tokens", 0)
    return Plan(
        items=items,
        rejections=rejected,
        corpus=corpus_info,
        naive_prefill=naive,
        lower_bound=lower,
        backend=description,
        notices=[*_case_file_notices(config), *pinned.notices],
    )


def _case_file_notices(config: ExperimentConfig) -> list[str]:
    """The overlap check of the experiment's own case file (``tasks.overlap``), as a warning line."""
    if CASES_TASK not in config.tasks or not config.cases:
        return []
    notice = overlap_notice(Path(config.cases).expanduser())
    return [] if notice is None else [notice]


def _corpus_info(origin: str, corpora: list[TokenizedCorpus], asked: int) -> dict[str, Any]:
    """What the run records of its haystacks: with one variant its corpus as before variants; with
    several, a digest over theirs, the documents and tokens of all, and each one's own."""
    if not corpora:
        return {}
    digest = corpora[0].digest
    if len(corpora) > 1:
        digest = hashlib.sha256(" ".join(corpus.digest for corpus in corpora).encode()).hexdigest()[:16]
    return {
        "source": origin,
        "digest": digest,
        "documents": sum(corpus.documents for corpus in corpora),
        "tokens": sum(corpus.size for corpus in corpora),
        "variants": len(corpora),
        "variants_asked": asked,
        "haystacks": [
            {"digest": corpus.digest, "documents": corpus.documents, "tokens": corpus.size}
            for corpus in corpora
        ],
    }
