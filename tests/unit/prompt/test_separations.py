"""``placement.separations``: the config's values, the facts placed exactly the asked filler tokens
apart on the scripted tokenizer (fake:regex) and verified, an unplaceable separation named, and the
identity of an experiment without the axis unchanged."""

from __future__ import annotations

import hashlib

import pytest
from pydantic import ValidationError

from rotscope.backends.fake import fake_backend
from rotscope.config.experiment import PlacementConfig, build_config
from rotscope.errors import BadInput
from rotscope.execution.state.identity import config_digest
from rotscope.filler import Document
from rotscope.filler.corpus import tokenize_corpus
from rotscope.plan.workitems import build_plan, item_id
from rotscope.prompt.builder import PlacementError, PromptBuilder
from rotscope.prompt.separation import fact_ids, measured_gaps, measured_separation, separation_tolerance
from rotscope.tokenizers.local import FakeTokenizer
from rotscope.types import Case, Evidence, GenerationParams, Layout, Oracle

LINE_TOKENS = 8
"""``word word word word\\n`` in fake:regex: four words, three spaces, one line break."""


@pytest.mark.parametrize(
    ("values", "fragment"),
    [([0], "int >= 1"), ([-4], "int >= 1"), ([1.0], "(0, 1)"), ([0.0], "(0, 1)"), ([True], "neither"),
     (["512"], "neither"), ([64, 64], "listed twice"), (3, "is a list")],
)  # fmt: skip
def test_bad_separations_are_refused(values: object, fragment: str) -> None:
    with pytest.raises(ValidationError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        PlacementConfig.model_validate({"separations": values})


def test_counts_and_shares_keep_their_types_and_other_support_rules_are_refused() -> None:
    assert PlacementConfig(separations=[512, 0.25]).separations == [512, 0.25]
    assert [type(value) for value in PlacementConfig(separations=[512, 0.25]).separations] == [int, float]
    with pytest.raises(ValidationError, match="support: opposite"):
        PlacementConfig(separations=[8], support="opposite")


def _corpus(lines: int = 200) -> tuple[FakeTokenizer, object]:
    tokenizer = FakeTokenizer()
    words = ["alder", "birch", "cedar", "maple", "rowan", "hazel", "larch"]
    text = "".join(" ".join(words[(i + k) % len(words)] for k in range(4)) + "\n" for i in range(lines))
    return tokenizer, tokenize_corpus(
        [Document("trees", text)], tokenizer, 1500, allow_repeat=False, origin="t"
    )


def _case(hops: int) -> Case:
    evidence = [Evidence(f"hop-{i}", f"Fact {i} links q{i} to q{i + 1}.", "support") for i in range(1, hops)]
    evidence.append(Evidence(f"hop-{hops}", f"Fact {hops} says q{hops} is 42.", "answer"))
    return Case("chain-01", "multihop", tuple(evidence), "What is q1?", Oracle("42"))


@pytest.mark.parametrize("hops", [2, 3])
@pytest.mark.parametrize("separation", [8, 64, 128])
@pytest.mark.parametrize("depth", [0.0, 0.5, 1.0])
def test_facts_sit_exactly_the_asked_filler_tokens_apart(hops: int, separation: int, depth: float) -> None:
    tokenizer, corpus = _corpus()
    builder = PromptBuilder(tokenizer, corpus, seed=1)  # type: ignore[arg-type]
    case = _case(hops)
    layout = Layout(1000, depth, separation=separation)
    prompt = builder.render(case, layout)
    facts = fact_ids(case)
    assert facts == [f"hop-{i}" for i in range(1, hops + 1)]
    gaps = measured_gaps(prompt.spans, facts)
    if depth == 0.5:  # between line ends (every 8 tokens): exactly the separation
        assert gaps == [separation] * (hops - 1)
        assert measured_separation(prompt.spans, facts) == separation
    else:  # a group at an end of the haystack meets its first line's or the footer's edge
        assert all(abs(gap - separation) <= separation_tolerance(separation, 0.1) for gap in gaps), gaps
        assert any(gap != separation for gap in gaps) or gaps == [separation] * (hops - 1)
    spans = {span.evidence_id: span for span in prompt.spans}
    assert [spans[f].token_start for f in facts] == sorted(spans[f].token_start for f in facts)


def test_a_share_of_the_filler_asks_for_that_share_of_its_tokens() -> None:
    tokenizer, corpus = _corpus()
    builder = PromptBuilder(tokenizer, corpus, seed=1)  # type: ignore[arg-type]
    prompt = builder.render(_case(2), Layout(1000, 0.5, separation=0.25))
    (gap,) = measured_gaps(prompt.spans, ["hop-1", "hop-2"])
    asked = round(0.25 * prompt.haystack_tokens)
    assert abs(gap - asked) <= LINE_TOKENS // 2
    assert prompt.haystack_tokens > 4 * LINE_TOKENS


def test_a_separation_the_length_cannot_hold_is_unplaceable_and_named() -> None:
    tokenizer, corpus = _corpus()
    builder = PromptBuilder(tokenizer, corpus, seed=1)  # type: ignore[arg-type]
    with pytest.raises(PlacementError, match=r"separation 5000 \(5000 filler tokens .* the haystack holds"):
        builder.render(_case(2), Layout(1000, 0.5, separation=5000))


def test_a_family_without_facts_to_combine_is_refused() -> None:
    config = build_config(
        {"name": "x", "model": "fake/lexical", "tasks": ["niah"], "lengths": [512], "limit": 1,
         "placement": {"separations": [64]}}
    )  # fmt: skip
    with pytest.raises(BadInput, match="task niah has no facts to combine"):
        build_plan(config, fake_backend("lexical", config))


def test_an_experiment_without_the_axis_keeps_its_digest_and_item_ids() -> None:
    """The values the code before the axis gave for this config (ee973d1): config digest, the
    number of items and a digest of their ids in plan order."""
    config = build_config(
        {"name": "stable", "model": "fake/lexical", "tasks": ["join", "niah"], "lengths": [512],
         "depths": [0.25, 0.75], "limit": 2, "filler": {"kind": "readinglog"}}
    )  # fmt: skip
    plan = build_plan(config, fake_backend("lexical", config))
    ids = hashlib.sha256(" ".join(item.item_id for item in plan.items).encode()).hexdigest()[:16]
    assert (config_digest(config), len(plan.items), ids) == ("bb92ff9cd9582f64", 12, "ba689d28176d46bb")
    assert "separations" not in config.model_dump()["placement"]


def test_the_separation_is_part_of_an_item_s_identity_only_when_given() -> None:
    case, key = _case(2), {"backend": None, "model": None, "model_digest": None, "tokenizer_digest": None}
    params = GenerationParams()
    plain = item_id(key, (1, 2), params, case, Layout(512, 0.5), 0)  # type: ignore[arg-type]
    assert plain == item_id(key, (1, 2), params, case, Layout(512, 0.5, separation=None), 0)  # type: ignore[arg-type]
    apart = {item_id(key, (1, 2), params, case, Layout(512, 0.5, separation=s), 0) for s in (64, 128, 0.25)}  # type: ignore[arg-type]
    assert len(apart | {plain}) == 4
