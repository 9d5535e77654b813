"""On the quick experiment (``examples/quick.yaml``) the closing sentence never states a bound that
contradicts its own point estimate, on a scripted model with the bundled model's curve
(0.81/0.81/0.38 at 256/512/1,024; issue 31). ``benchmarks/sentence_bounds.py`` runs 20 seeds (0
contradictions); this runs a few, through the same path: the runner, the summary, the sentence."""

from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from scipy import stats as scipy_stats

from rotscope import load_summary
from rotscope.analysis.bracket import contradicts
from rotscope.backends.fake import ABSTAIN, FakeBackend, lexical_responder
from rotscope.config.experiment import build_config
from rotscope.execution.workflows.runner import run_experiment
from rotscope.report.sentence import one_sentence
from rotscope.types import GenerateRequest

QUICK = Path(__file__).resolve().parents[2] / "examples" / "quick.yaml"
CURVE = {256: 0.81, 512: 0.81, 1024: 0.38}
RHO = 0.5
SEEDS = (0, 1, 2)


def _normal(*parts: object) -> float:
    digest = hashlib.sha256(repr(parts).encode()).digest()
    return float(scipy_stats.norm.ppf((int.from_bytes(digest[:8], "big") + 0.5) / 2**64))


def _scripted(seed: int) -> Any:
    """Right at each length with the curve's chance over instances (a Gaussian copula on the
    question, correlation ``RHO`` between lengths), else an abstention."""
    lexical = lexical_responder()

    def respond(request: GenerateRequest) -> str:
        found = re.search(r"Question: (.*)", request.messages[-1]["content"])
        asked = found.group(1) if found else ""
        length = min(CURVE, key=lambda n: abs(math.log(max(1, len(request.token_ids)) / n)))
        latent = math.sqrt(RHO) * _normal(seed, asked) + math.sqrt(1 - RHO) * _normal(seed, asked, length)
        return lexical(request) if scipy_stats.norm.cdf(latent) < CURVE[length] else ABSTAIN

    return respond


def _stated(sentence: str) -> tuple[int | None, int | None]:
    """The lower and upper end the sentence's bracket states."""
    found = re.search(r"bracket: (at least |under )?([\d,]+)(?: to (under|beyond) ([\d,]+))?", sentence)
    assert found, sentence
    first = int(found.group(2).replace(",", ""))
    if found.group(1) == "under ":
        return None, first
    high = int(found.group(4).replace(",", "")) if found.group(3) == "under" else None
    return first, high


@pytest.fixture(scope="module")
def sentences(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[dict[str, Any], str]]:
    root = tmp_path_factory.mktemp("quick-seeds")
    found = []
    for seed in SEEDS:
        config = build_config({**yaml.safe_load(QUICK.read_text(encoding="utf-8")), "seed": seed})
        backend = FakeBackend("scripted", _scripted(seed))
        typed = load_summary(run_experiment(config, run_dir=root / f"seed-{seed}", backend=backend))
        found.append((typed.model_dump(), one_sentence(typed) or ""))
    return found


def test_the_sentence_never_states_a_bound_its_point_denies(
    sentences: list[tuple[dict[str, Any], str]],
) -> None:
    for summary, sentence in sentences:
        entry = summary["effective_lengths"]["tasks"][0]
        point = entry["value"]
        assert entry["state"] == "value" and point in (256, 512), sentence
        assert not contradicts(point, entry["bracket"])
        low, high = _stated(sentence)
        assert low is None or low <= point, sentence
        assert high is None or high > point, sentence
        assert f": {point:,} tokens (nolima-0.85 of the base at 256 tokens" in sentence


def test_the_sentence_names_the_effective_lengths_own_score_and_where_it_falls(
    sentences: list[tuple[dict[str, Any], str]],
) -> None:
    for summary, sentence in sentences:
        entry = summary["effective_lengths"]["tasks"][0]
        lines = {line["length"]: line for line in summary["tasks"][0]["lengths"]}
        fallen = min(length for length in lines if length > entry["value"])
        assert f"falling to {lines[fallen]['instance_accuracy']:.2f}" in sentence
        if entry["value"] != 256:
            own = lines[entry["value"]]
            assert (
                f"{own['instance_accuracy']:.2f} [{own['ci_low']:.2f}, {own['ci_high']:.2f}] at" in sentence
            )
        # On three lengths the bracket places the point only as [point, the length after it).
        bracket = entry["bracket"]
        narrow = (bracket["state"], bracket["low"]["length"], bracket["high"]["length"]) == (
            "value", entry["value"], fallen,
        )  # fmt: skip
        assert ("the data cannot place it" in sentence) == (not narrow), sentence
