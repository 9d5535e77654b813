"""A multikey run's gap is clustered on the prompt, not the key: on a scripted model whose keys of
one prompt fail together at the long length, the gap interval is as wide as the one on per-prompt
means (within 10%), and wider than pairing the keys would make it."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

from rotscope.analysis.summary import load_summary
from rotscope.backends.curve import uniform
from rotscope.backends.fake import ABSTAIN, FakeBackend, blind_responder
from rotscope.config.experiment import build_config
from rotscope.execution.workflows.runner import run_experiment
from rotscope.rows import instance_means
from rotscope.stats.paired import paired_gap
from rotscope.store import RunStore
from rotscope.types import GenerateRequest
from tests.support.cli_helpers import nonsense_corpus

SHORT, LONG = 600, 1200
PROMPTS, KEYS = 10, 5
FAILING = 0.5
"""The share of prompts (by a hash of the prompt's questions) whose keys all fail at the long length."""


def prompt_fails_long(request: GenerateRequest) -> str:
    """The lexical answers, but every key of a prompt abstained at the long length when a hash of
    the prompt's questions falls below ``FAILING``: the keys of one prompt fail together."""
    lexical = blind_responder(2.0)  # blind nowhere: the lexical answer to each question
    user = request.messages[-1]["content"]
    long = len(request.token_ids) > (SHORT + LONG) / 2
    questions = user.split("\nQuestions:\n", 1)[-1]
    if long and uniform("mk-prompt", questions, 0) < FAILING:
        return "\n".join(f"Q{k}: {ABSTAIN}" for k in range(1, KEYS + 1))
    return lexical(request)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], list[Any]]:
    folder = tmp_path_factory.mktemp("mk-clusters")
    config = build_config(
        {
            "name": "mk-clusters",
            "model": "fake/scripted",
            "tasks": ["multikey"],
            "lengths": [SHORT, LONG],
            "depths": [0.0, 0.25, 0.5, 0.75, 1.0],
            "questions_per_prompt": KEYS,
            "limit": PROMPTS,
            "controls": False,
            # one haystack: the prompt is the only cluster the data share
            "filler": {
                "kind": "text",
                "glob": str(nonsense_corpus(folder / "corpus") / "*.txt"),
                "variants": 1,
            },
        }
    )
    run_dir = folder / "run"
    run_experiment(config, run_dir=run_dir, backend=FakeBackend("scripted", prompt_fails_long))
    with RunStore.read(run_dir) as store:
        rows = store.rows()
    return load_summary(run_dir).model_dump(), rows


def _width(gap: Any) -> float:
    assert gap.low is not None and gap.high is not None
    return float(gap.high - gap.low)


def test_the_gap_interval_has_the_width_of_prompt_clustering(run: tuple[dict[str, Any], list[Any]]) -> None:
    summary, rows = run
    (degradation,) = summary["tasks"][0]["degradation"]
    by_length: dict[int, list[Any]] = defaultdict(list)
    for row in rows:
        by_length[row["length_target"]].append(row)
    per_prompt = paired_gap(instance_means(by_length[SHORT]), instance_means(by_length[LONG]))
    per_key = paired_gap(
        instance_means(by_length[SHORT], "case_id"), instance_means(by_length[LONG], "case_id")
    )
    assert per_key.pairs == PROMPTS * KEYS and per_prompt.pairs == PROMPTS
    assert per_prompt.estimate is not None and per_prompt.estimate < 0  # some prompts fail long
    width = degradation["ci_high"] - degradation["ci_low"]
    assert (degradation["pairs"], degradation["clusters"]) == (PROMPTS, PROMPTS)  # a prompt is a pair
    assert abs(width - _width(per_prompt)) <= 0.1 * _width(per_prompt)
    assert width > 1.5 * _width(per_key)  # pairing keys would understate it
    assert (
        degradation["method"] == "adjusted t on paired instance differences (one haystack: conditional on it)"
    )


def test_every_depth_cell_counts_prompts(run: tuple[dict[str, Any], list[Any]]) -> None:
    summary, _ = run
    cells = [cell for cell in summary["cells"] if cell["task"] == "multikey"]
    assert len(cells) == 2 * KEYS
    for cell in cells:
        assert (cell["n"], cell["instances"], cell["clusters"]) == (PROMPTS, PROMPTS, PROMPTS)
        assert cell["ci_method"].startswith("adjusted t on instance means")
