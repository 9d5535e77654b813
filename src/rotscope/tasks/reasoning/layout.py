"""Render the ``reasoning`` family: every target item in every layout, filler type and length.

Filler made from the pool is cut at item boundaries only, so no filler problem is split by the
target. Its haystack is a window of the filler stream that ends where an item ends and starts at
a line start, sized to the length: the context reads like a scrolled view of a long worksheet, the
only partial item being the first one. Each window is verified like any prompt (spans of every
copy, depths, length, re-encoding); the answers of the filler items inside it become the case's
``filler_answer`` traps, so a wrong answer copied from the filler is named as such.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import numpy as np

from rotscope.config.experiment import ExperimentConfig
from rotscope.errors import BadInput
from rotscope.filler import Document
from rotscope.filler.corpus import TokenizedCorpus, tokenize_corpus
from rotscope.prompt.builder import PlacementError, PromptBuilder
from rotscope.tasks.reasoning.family import (
    FILLER_ANSWER,
    LAYOUT_DEPTH,
    Pool,
    filler_text,
    layout_case,
    load_pool,
)
from rotscope.tasks.reasoning.items import ReasoningItem
from rotscope.tasks.reasoning.options import ReasoningConfig, ReasoningFiller
from rotscope.types import Case, Layout, Rejection, RenderedPrompt, Tokenizer

_WINDOW_TRIES = 12
STREAM_REACH = 2
"""A prompt of L tokens takes its window from the first ``STREAM_REACH`` x L tokens of its filler
stream, and each stream is read to ``STREAM_REACH`` times the longest length (plus
``_STREAM_MARGIN`` tokens) when the pool holds that much. The window at a length therefore depends
on that length only: adding a length to the grid leaves the prompts at the others unchanged."""
_STREAM_MARGIN = 64


@dataclass(frozen=True)
class Placed:
    case: Case
    layout: Layout
    prompt: RenderedPrompt


@dataclass(frozen=True)
class PoolStream:
    """The tokenized filler stream of one target and filler type, with each item's byte range."""

    corpus: TokenizedCorpus
    items: tuple[tuple[int, int, ReasoningItem], ...]
    boundaries: np.ndarray
    """Token indices where one item ends and the next begins (a blank line starts there)."""
    starts: np.ndarray
    """Token indices that begin a line."""

    def answers_between(self, start: int, end: int) -> list[str]:
        """Answers of the items with any byte inside tokens ``[start, end)``, in stream order."""
        low, high = int(self.corpus.offsets[start]), int(self.corpus.offsets[end])
        return [item.answer for first, last, item in self.items if first < high and last > low]


def pool_stream(
    pool: Pool,
    target: ReasoningItem,
    filler: ReasoningFiller,
    tokenizer: Tokenizer,
    min_tokens: int,
    read_tokens: int | None = None,
) -> PoolStream:
    """The filler stream of ``target`` tokenized up to at least ``min_tokens`` tokens, and up to
    ``read_tokens`` when the pool holds them."""
    consumed: list[ReasoningItem] = []
    with_solutions = filler == "with_solutions"

    def documents() -> Iterator[Document]:
        for item in pool.stream(target):
            consumed.append(item)
            yield Document(item.item_id, filler_text(item, with_solutions))

    corpus = tokenize_corpus(
        documents(),
        tokenizer,
        min_tokens,
        allow_repeat=False,
        origin=f"reasoning pool ({filler})",
        read_tokens=read_tokens,
    )
    ranges = []
    cursor = 0
    for item in consumed:
        text = filler_text(item, with_solutions).strip().encode("utf-8")
        first = corpus.data.index(text, cursor)
        ranges.append((first, first + len(text), item))
        cursor = first + len(text)
    data, offsets = corpus.data, corpus.offsets
    boundaries = np.array(
        [i for i in corpus.line_ends if data[offsets[i] : offsets[i] + 2] == b"\n\n"], dtype=np.int64
    )
    starts = np.array(
        [0] + [i for i in range(1, corpus.size) if data[offsets[i] - 1] == 10 and data[offsets[i]] != 10],
        dtype=np.int64,
    )
    return PoolStream(corpus, tuple(ranges), boundaries, starts)


def slice_corpus(stream: PoolStream, start: int, end: int) -> TokenizedCorpus:
    """Tokens ``[start, end)`` of the stream as a corpus whose insertion points are item boundaries."""
    corpus = stream.corpus
    low, high = int(corpus.offsets[start]), int(corpus.offsets[end])
    data = corpus.data[low:high]
    inner = stream.boundaries[(stream.boundaries > start) & (stream.boundaries < end)] - start
    return TokenizedCorpus(
        ids=corpus.ids[start:end],
        offsets=corpus.offsets[start : end + 1] - low,
        data=data,
        line_ends=np.unique(np.concatenate(([0], inner, [end - start]))).astype(np.int64),
        digest=hashlib.sha256(data).hexdigest()[:16],
        documents=len(stream.answers_between(start, end)),
    )


def windows(stream: PoolStream, budget: int, reach: int | None = None) -> list[tuple[int, int]]:
    """(start, end) token windows that end at an item boundary (at most ``reach``) and start at a
    line start, closest to ``budget`` tokens first (earlier windows first among equals, so targets
    share them)."""
    found: list[tuple[int, int, int]] = []
    ends = stream.boundaries[stream.boundaries >= budget]
    if reach is not None:
        ends = ends[ends <= reach]
    for end in ends[:_WINDOW_TRIES]:
        index = int(np.searchsorted(stream.starts, end - budget))
        for start in stream.starts[max(index - 1, 0) : index + 1]:
            if start < end:
                found.append((abs(int(end - start) - budget), int(end), int(start)))
    return [(start, end) for _, end, start in sorted(found)]


def _builder(
    config: ExperimentConfig, tokenizer: Tokenizer, corpus: TokenizedCorpus, whole: bool
) -> PromptBuilder:
    return PromptBuilder(
        tokenizer,
        corpus,
        system_prompt=config.system_prompt,
        tolerance=config.length_tolerance,
        depth_tolerance=config.depth_tolerance,
        placement=config.placement,
        seed=config.seed,
        whole_corpus=whole,
    )


def _place_in_pool(
    config: ExperimentConfig, tokenizer: Tokenizer, stream: PoolStream, case: Case, layout: Layout
) -> Placed:
    budget = layout.length_tokens - _builder(config, tokenizer, stream.corpus, False).fixed_tokens(case)
    reasons: list[str] = []
    reach = STREAM_REACH * layout.length_tokens
    for start, end in windows(stream, budget, reach)[:_WINDOW_TRIES]:
        try:
            prompt = _builder(config, tokenizer, slice_corpus(stream, start, end), True).render(case, layout)
        except PlacementError as error:
            reasons.append(str(error))
            continue
        traps: tuple[tuple[str, str], ...] = ()
        if case.oracle.kind == "number":
            answers = dict.fromkeys(stream.answers_between(start, end))
            traps = tuple((FILLER_ANSWER, a) for a in answers if a != case.oracle.answer)
        return Placed(replace(case, oracle=replace(case.oracle, traps=traps)), layout, prompt)
    if not reasons:
        raise PlacementError(
            f"case {case.case_id} at {layout}: the filler stream has {stream.corpus.size} tokens, "
            f"the prompt needs about {budget}"
        )
    raise PlacementError(reasons[0])


@dataclass
class ReasoningPlan:
    placed: list[Placed]
    rejected: list[Rejection]
    digest: str
    """Identifies the filler streams used (their token data)."""


def plan_reasoning(
    config: ExperimentConfig, tokenizer: Tokenizer, neutral: Callable[[], TokenizedCorpus]
) -> ReasoningPlan:
    """Every target x filler x layout x length, rendered and verified; failures are listed."""
    settings = config.section(ReasoningConfig)
    pool = load_pool(settings, config.seed, config.limit)
    placed: list[Placed] = []
    rejected: list[Rejection] = []
    digests: list[str] = []
    longest = max(config.lengths)
    neutral_builder: PromptBuilder | None = None
    for filler in settings.fillers:
        for target in pool.targets:
            stream = (
                None
                if filler == "neutral"
                else pool_stream(
                    pool, target, filler, tokenizer, longest, STREAM_REACH * longest + _STREAM_MARGIN
                )
            )
            if stream is not None:
                digests.append(stream.corpus.digest)
            for name in settings.layouts:
                case = layout_case(target, name)
                for length in config.lengths:
                    layout = Layout(length, LAYOUT_DEPTH[name], position=name, filler=filler)
                    try:
                        if stream is None:
                            neutral_builder = neutral_builder or _builder(config, tokenizer, neutral(), False)
                            prompt = neutral_builder.render(case, layout)
                            placed.append(Placed(case, layout, prompt))
                        else:
                            placed.append(_place_in_pool(config, tokenizer, stream, case, layout))
                    except PlacementError as error:
                        rejected.append(Rejection.of(case, layout, str(error)))
    if not pool.targets:
        raise BadInput("reasoning: no target items")
    digest = hashlib.sha256("".join(dict.fromkeys(digests)).encode()).hexdigest()[:16]
    return ReasoningPlan(placed, rejected, digest)
