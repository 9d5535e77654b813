"""Placement rules (target depths of every evidence piece) and real prompts rendered with them:
own spans, no overlaps, depths reached, superseded before the answer, exact re-encoding, and
guarded strings kept out of filler."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable

import pytest

from rotscope.config.experiment import FillerConfig, PlacementConfig
from rotscope.errors import BadInput
from rotscope.filler import documents
from rotscope.filler.corpus import TokenizedCorpus, tokenize_corpus
from rotscope.prompt.builder import PlacementError, PromptBuilder
from rotscope.prompt.placement import depths_at, target_depths
from rotscope.prompt.verify import verify_prompt
from rotscope.tasks import get_task
from rotscope.types import Case, Evidence, Layout, Oracle, RenderedPrompt, Role, Tokenizer

ROUNDING = 1e-4
"""Seeded depths are rounded to four decimals after the gap check."""


def _case(*roles: Role, case_id: str = "hand-01") -> Case:
    evidence = tuple(Evidence(f"{role}-{i}", f"Piece {i} says {role}.", role) for i, role in enumerate(roles))
    return Case(case_id, "hand", evidence, "What?", Oracle("x"))


def _ids(case: Case, role: str) -> list[str]:
    return [e.evidence_id for e in case.evidence if e.role == role]


# --- support rules --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("depth", "distance", "expected"),
    [
        (0.9, 0.2, [0.3, 0.5, 0.7]),
        (1.0, 0.3, [0.1, 0.4, 0.7]),
        (0.5, 0.2, [0.0, 0.1, 0.3]),  # the farthest is clamped at 0
        (0.3, 0.2, [0.0, 0.0, 0.1]),
        (0.0, 0.3, [0.0, 0.0, 0.0]),
    ],
)
def test_before_puts_supports_back_from_the_answer_nearest_last(
    depth: float, distance: float, expected: list[float]
) -> None:
    case = _case("support", "support", "support", "answer")
    targets = target_depths(
        case, Layout(1000, depth), PlacementConfig(support="before", distance=distance), 0
    )
    assert [targets[i] for i in _ids(case, "support")] == pytest.approx(expected)
    assert targets[_ids(case, "answer")[0]] == depth
    assert set(targets) == {e.evidence_id for e in case.evidence}


def test_before_on_real_multihop_cases() -> None:
    rule = PlacementConfig(support="before", distance=0.25)
    for case in get_task("multihop").cases():
        for depth in (0.0, 0.4, 1.0):
            targets = target_depths(case, Layout(800, depth), rule, 7)
            hops = [targets[e.evidence_id] for e in case.evidence]
            count = len(hops) - 1
            # hop i (1-based) of n-1 supports sits (n-1 - i + 1) distances before the answer
            assert hops[:-1] == pytest.approx([max(depth - (count - i) * 0.25, 0.0) for i in range(count)])
            assert hops[-1] == depth
            assert hops == sorted(hops), "earlier hops sit no later than later hops"


@pytest.mark.parametrize(
    ("depth", "expected"),
    [(0.0, 0.5), (0.25, 0.75), (0.49, 0.99), (0.5, 0.0), (0.75, 0.25), (1.0, 0.5)],
)
def test_opposite_puts_supports_in_the_other_half(depth: float, expected: float) -> None:
    case = _case("support", "answer", "support")
    targets = target_depths(case, Layout(1000, depth), PlacementConfig(support="opposite"), 0)
    assert [targets[i] for i in _ids(case, "support")] == pytest.approx([expected, expected])
    assert targets[_ids(case, "answer")[0]] == depth


def test_depths_rule_uses_support_depths_in_order() -> None:
    case = _case("support", "answer", "support")
    rule = PlacementConfig(support="depths", support_depths=[0.9, 0.15, 0.6])
    for depth in (0.0, 0.5, 1.0):
        targets = target_depths(case, Layout(1000, depth), rule, 0)
        assert [targets[i] for i in _ids(case, "support")] == [0.9, 0.15]
        assert targets[_ids(case, "answer")[0]] == depth


def test_depths_rule_with_too_few_depths_raises() -> None:
    case = _case("support", "support", "answer")
    rule = PlacementConfig(support="depths", support_depths=[0.2])
    with pytest.raises(BadInput, match="2 support pieces"):
        target_depths(case, Layout(1000, 0.5), rule, 0)


def test_without_an_answer_piece_everything_goes_to_the_grid_depth() -> None:
    case = next(iter(get_task("niah").cases()))
    assert target_depths(case, Layout(500, 0.37), PlacementConfig(), 0) == {
        e.evidence_id: 0.37 for e in case.evidence
    }


# --- decoys and superseded ------------------------------------------------------------------------


def _pairwise_min_gap(depths: list[float]) -> float:
    return min(abs(a - b) for a, b in itertools.combinations(depths, 2))


def test_decoys_keep_their_gap_from_the_answer_and_each_other() -> None:
    rule = PlacementConfig(decoy_min_gap=0.15)
    for case in get_task("competitive").cases():
        decoys = _ids(case, "decoy")
        assert len(decoys) == 3
        for seed, length, depth in itertools.product(range(4), (512, 2048), (0.0, 0.25, 0.5, 0.75, 1.0)):
            targets = target_depths(case, Layout(length, depth), rule, seed)
            assert targets["needle"] == depth
            spots = [targets["needle"], *(targets[d] for d in decoys)]
            assert all(0.0 <= spot <= 1.0 for spot in spots)
            assert _pairwise_min_gap(spots) >= 0.15 - ROUNDING, (case.case_id, seed, length, depth, spots)


def test_decoy_depths_are_seeded() -> None:
    rule = PlacementConfig(decoy_min_gap=0.15)
    cases = list(get_task("competitive").cases())
    layout = Layout(1024, 0.5)
    for case in cases:
        assert target_depths(case, layout, rule, 11) == target_depths(case, layout, rule, 11)
    differing = [
        case.case_id
        for case in cases
        if [target_depths(case, layout, rule, 11)[d] for d in _ids(case, "decoy")]
        != [target_depths(case, layout, rule, 12)[d] for d in _ids(case, "decoy")]
    ]
    # another seed moves the decoys (of every case: a collision of three uniform draws is negligible)
    assert len(differing) == len(cases)
    # and so do another case and another layout for the same seed
    first = cases[0]
    assert target_depths(first, layout, rule, 11) != target_depths(first, Layout(2048, 0.5), rule, 11)


def test_superseded_sits_before_the_answer() -> None:
    rule = PlacementConfig(support="opposite")
    for case in get_task("latent").cases():
        seen: set[float] = set()
        for seed, depth in itertools.product(range(5), (0.0, 0.2, 0.5, 0.8, 1.0)):
            targets = target_depths(case, Layout(1024, depth), rule, seed)
            assert 0.0 <= targets["superseded"] <= targets["fraction"] == depth
            seen.add(targets["superseded"])
        assert len(seen) > 5, "the superseded depth is drawn, not fixed"


# --- rendered prompts -----------------------------------------------------------------------------

COMPETITIVE = next(iter(get_task("competitive").cases()))
LATENT = next(iter(get_task("latent").cases()))
RULES = {
    "competitive": PlacementConfig(decoy_min_gap=0.15),
    "latent": PlacementConfig(support="opposite"),
}
SEED = 3


@pytest.fixture(scope="module")
def readinglog_corpus(real_tokenizer: Tokenizer) -> TokenizedCorpus:
    guarded = frozenset(COMPETITIVE.guarded) | frozenset(LATENT.guarded)
    return tokenize_corpus(
        documents(FillerConfig(kind="readinglog"), 0, guarded),
        real_tokenizer,
        1200,
        allow_repeat=False,
        origin="readinglog",
    )


def _check_prompt(prompt: RenderedPrompt, case: Case, layout: Layout, tokenizer: Tokenizer) -> None:
    spans = {span.evidence_id: span for span in prompt.spans}
    assert len(spans) == len(prompt.spans) == len(case.evidence)
    assert set(spans) == {e.evidence_id for e in case.evidence}
    assert abs(prompt.prompt_tokens - layout.length_tokens) <= 0.05 * layout.length_tokens
    ordered = sorted(prompt.spans, key=lambda span: span.token_start)
    for before, after in itertools.pairwise(ordered):
        assert before.token_end <= after.token_start, (before, after)
    targets = target_depths(case, layout, RULES[case.task], SEED)
    for evidence in case.evidence:
        span = spans[evidence.evidence_id]
        assert span.token_start < span.token_end
        assert abs(span.depth - targets[evidence.evidence_id]) <= 0.1, (evidence.evidence_id, span, targets)
        piece = tokenizer.decode(prompt.token_ids[span.token_start : span.token_end])
        assert piece.strip("\n") == evidence.text
        assert prompt.text.count(evidence.text) == 1
    assert tuple(tokenizer.encode(prompt.text, special=True)) == prompt.token_ids


@pytest.mark.parametrize("length", [600, 1200])
@pytest.mark.parametrize("depth", [0.0, 0.3, 0.5, 0.8, 1.0])
def test_competitive_prompt_places_every_piece(
    real_tokenizer: Tokenizer, readinglog_corpus: TokenizedCorpus, length: int, depth: float
) -> None:
    builder = PromptBuilder(real_tokenizer, readinglog_corpus, placement=RULES["competitive"], seed=SEED)
    layout = Layout(length, depth)
    prompt = builder.render(COMPETITIVE, layout)
    _check_prompt(prompt, COMPETITIVE, layout, real_tokenizer)
    # needle and decoys sit at distinct places in the filler, not stacked at one line end
    cuts = [round(span.depth * prompt.haystack_tokens) for span in prompt.spans]
    assert len(set(cuts)) == 4, prompt.spans
    needle = next(span for span in prompt.spans if span.evidence_id == "needle")
    assert abs(needle.depth - depth) <= 0.1


@pytest.mark.parametrize("length", [600, 1200])
@pytest.mark.parametrize("depth", [0.0, 0.3, 0.5, 0.8, 1.0])
def test_latent_prompt_puts_superseded_before_the_fraction(
    real_tokenizer: Tokenizer, readinglog_corpus: TokenizedCorpus, length: int, depth: float
) -> None:
    builder = PromptBuilder(real_tokenizer, readinglog_corpus, placement=RULES["latent"], seed=SEED)
    layout = Layout(length, depth)
    prompt = builder.render(LATENT, layout)
    _check_prompt(prompt, LATENT, layout, real_tokenizer)
    spans = {span.evidence_id: span for span in prompt.spans}
    assert spans["superseded"].token_end <= spans["fraction"].token_start
    superseded = next(e.text for e in LATENT.evidence if e.role == "superseded")
    fraction = next(e.text for e in LATENT.evidence if e.role == "answer")
    assert prompt.text.index(superseded) < prompt.text.index(fraction)
    # the anchor is in the other half of the context
    assert abs(spans["anchor"].depth - spans["fraction"].depth) >= 0.5 - 0.1


def test_verifier_rejects_a_superseded_revision_after_its_replacement(
    real_tokenizer: Tokenizer, readinglog_corpus: TokenizedCorpus
) -> None:
    builder = PromptBuilder(real_tokenizer, readinglog_corpus, placement=RULES["latent"], seed=SEED)
    layout = Layout(1200, 0.8)
    prompt = builder.render(LATENT, layout)
    # Swap the roles of the two revisions: the text now says the later one was replaced.
    swapped = {"superseded": "answer", "fraction": "superseded"}
    case = dataclasses.replace(
        LATENT,
        evidence=tuple(
            dataclasses.replace(e, role=swapped.get(e.evidence_id, e.role)) for e in LATENT.evidence
        ),
    )
    frame = builder.frame(case.question)
    problems = verify_prompt(prompt, case, layout, real_tokenizer, frame, 0.05, depth_tolerance=1.0)
    assert problems == ["superseded evidence fraction comes after the revision that replaced it"]


def test_rendering_is_deterministic_for_a_seed(
    real_tokenizer: Tokenizer, readinglog_corpus: TokenizedCorpus
) -> None:
    def render(seed: int) -> RenderedPrompt:
        builder = PromptBuilder(real_tokenizer, readinglog_corpus, placement=RULES["competitive"], seed=seed)
        return builder.render(COMPETITIVE, Layout(1200, 0.5))

    assert render(1) == render(1)
    assert render(1).spans != render(2).spans


# --- guarded strings ------------------------------------------------------------------------------


def _text_with(line: str, prose: Callable[..., str], every: int = 6) -> str:
    lines = prose(lines=240, seed=5).splitlines()
    return "\n".join(
        f"{text} {line}" if number % every == 3 and text else text for number, text in enumerate(lines)
    )


def test_filler_with_a_competing_value_is_rejected(
    real_tokenizer: Tokenizer, corpus_from_text: Callable[..., TokenizedCorpus], prose: Callable[..., str]
) -> None:
    answer = COMPETITIVE.oracle.answer
    assert answer == "719"
    tainted = corpus_from_text(_text_with("The cache default was 719 seconds.", prose), real_tokenizer, 1200)
    builder = PromptBuilder(real_tokenizer, tainted, placement=RULES["competitive"], seed=SEED)
    with pytest.raises(PlacementError, match="competing value") as raised:
        builder.render(COMPETITIVE, Layout(600, 0.5))
    assert "'719'" in str(raised.value)
    # the evidence-absent control guards the same strings
    with pytest.raises(PlacementError, match="competing value"):
        builder.render(COMPETITIVE.absent_control(), Layout(600, 0.0))


def test_filler_without_the_guarded_value_renders(
    real_tokenizer: Tokenizer, corpus_from_text: Callable[..., TokenizedCorpus], prose: Callable[..., str]
) -> None:
    # the same filler with a number that is no case value (7190 only contains 719) is accepted
    clean = corpus_from_text(_text_with("The cache default was 7190 seconds.", prose), real_tokenizer, 1200)
    builder = PromptBuilder(real_tokenizer, clean, placement=RULES["competitive"], seed=SEED)
    prompt = builder.render(COMPETITIVE, Layout(600, 0.5))
    assert "7190" in prompt.text
    _check_prompt(prompt, COMPETITIVE, Layout(600, 0.5), real_tokenizer)


def test_a_guarded_decoy_name_in_filler_is_rejected(
    real_tokenizer: Tokenizer, corpus_from_text: Callable[..., TokenizedCorpus], prose: Callable[..., str]
) -> None:
    decoy_value = dict((value, category) for category, value in COMPETITIVE.oracle.traps)
    value = next(iter(decoy_value))
    tainted = corpus_from_text(
        _text_with(f"It timed out after {value} seconds.", prose), real_tokenizer, 1200
    )
    builder = PromptBuilder(real_tokenizer, tainted, placement=RULES["competitive"], seed=SEED)
    with pytest.raises(PlacementError, match="competing value"):
        builder.render(COMPETITIVE, Layout(600, 0.5))


def test_a_pinned_layout_with_its_pieces_depths_replaces_the_roles_placement() -> None:
    case = dataclasses.replace(
        _case("answer", "decoy", "superseded"),
        pins=((300, 0.5), (600, "midpoint")),
        pin_depths=(
            (300, 0.5, (("answer-0", 0.2), ("decoy-1", 0.9), ("superseded-2", 0.6))),
            (600, "midpoint", (("answer-0", 0.7), ("decoy-1", 0.1), ("superseded-2", 0.3))),
        ),
    )
    rule = PlacementConfig()
    at_300 = target_depths(case, Layout(300, 0.5), rule, seed=0)
    assert at_300 == {"answer-0": 0.2, "decoy-1": 0.9, "superseded-2": 0.6}
    assert target_depths(case, Layout(600, 0.5, "midpoint"), rule, seed=0)["decoy-1"] == 0.1
    # another length, a named position where a fraction was pinned, or another fraction: by role
    assert depths_at(case, Layout(600, 0.5)) == {}
    assert depths_at(case, Layout(300, 0.5, "midpoint")) == {}
    assert target_depths(case, Layout(300, 0.25), rule, seed=0)["answer-0"] == 0.25
