"""The prompts at a length do not depend on the other lengths of the grid: adding 512 to a
256-only grid leaves every 256 work item (its id, so its prompt ids) unchanged, for the plain
families on each filler kind and for the reasoning family, which plans its own filler streams.

Before, the regex tokenizers (the fake, the approximate count) numbered pieces in the order they
met them, so a longer filler corpus renumbered the template and question tokens (0 of 24 ids shared
on reading-log filler), and a reasoning window near the end of a shorter stream was chosen among
fewer item boundaries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rotscope.backends import create_backend
from rotscope.config.experiment import build_config
from rotscope.plan.workitems import build_plan


def ids_at(length: int, lengths: list[int], **settings: Any) -> set[str]:
    """The ids of the cases (not their controls) planned at ``length`` in a grid of ``lengths``."""
    config = build_config(
        {"model": "fake/lexical", "limit": 3, "depths": [0.0, 0.5, 1.0], "lengths": lengths, **settings}
    )
    plan = build_plan(config, create_backend(config))
    return {
        item.item_id for item in plan.items if item.layout.length_tokens == length and not item.case.control
    }


def ids_at_256(lengths: list[int], **settings: Any) -> set[str]:
    return ids_at(256, lengths, **settings)


@pytest.mark.parametrize(
    ("task", "filler"),
    [
        ("niah", {"kind": "code"}),
        ("niah", "text"),
        ("niah", {"kind": "readinglog"}),
        ("competitive", {"kind": "readinglog"}),
        ("competitive", "text"),
    ],
    ids=["niah-code", "niah-text", "niah-readinglog", "competitive-readinglog", "competitive-text"],
)
def test_adding_a_length_keeps_the_plain_families_items(task: str, filler: Any, corpus: Path) -> None:
    if filler == "text":
        filler = {"kind": "text", "glob": str(corpus / "*.txt"), "allow_repeat": True}
    # competitive's cases hold several documents: they fit from 384 tokens (at 256 every one is rejected)
    short = 384 if task == "competitive" else 256
    alone = ids_at(short, [short], tasks=[task], filler=filler)
    assert alone and ids_at(short, [short, 2 * short], tasks=[task], filler=filler) == alone


def test_adding_a_length_keeps_the_reasoning_items() -> None:
    reasoning = {"items": 4, "fillers": ["with_solutions", "questions_only"]}
    alone = ids_at_256([256], tasks=["reasoning"], reasoning=reasoning)
    assert alone and ids_at_256([256, 512], tasks=["reasoning"], reasoning=reasoning) == alone
    assert ids_at_256([256, 512, 1024], tasks=["reasoning"], reasoning=reasoning) == alone


def test_a_piece_has_one_id_whatever_was_encoded_before() -> None:
    from rotscope.tokenizers.local import FakeTokenizer
    from rotscope.tokenizers.remote import ApproximateTokenizer

    for tokenizer_type in (FakeTokenizer, ApproximateTokenizer):
        fresh, used = tokenizer_type(), tokenizer_type()
        used.encode("a long filler text that meets many pieces first, 12345 and more")
        text = "The needle: 4817 <|user|> once"
        assert fresh.encode(text) == used.encode(text)
        assert used.decode(used.encode(text)) == text
