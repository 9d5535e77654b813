"""Cache controls: a seeded sample of items re-run with the cache cleared; a reply that changes
when cold is a runtime correctness incident in the summary, ``show`` and the report."""

from __future__ import annotations

import json
import random
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from rich.console import Console

from rotscope.analysis.cache_checks import DETERMINISTIC_RULE, PAIRED_RULE, summarise_checks
from rotscope.analysis.summary import load_summary
from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.config.experiment import build_config
from rotscope.errors import BadInput
from rotscope.execution.workflows.runner import run_experiment
from rotscope.report.html import render_report
from rotscope.report.terminal import print_summary
from rotscope.store import RunStore
from rotscope.types import Capabilities, Completion, GenerateRequest

SYLLABLES = ("zu", "qa", "xo", "vy", "ku", "pim", "dax", "fol", "wex", "jor", "ibb", "oth")


class ColdDiffers(FakeBackend):
    """Answers like ``fake/lexical``, except right after a cache clear, when it answers
    'not in the context': a cache whose reuse changes replies, seen from the other side."""

    def __init__(self) -> None:
        super().__init__("lexical", lexical_responder())
        self._cold = False

    def clear_cache(self) -> None:
        super().clear_cache()
        self._cold = True

    async def generate(self, request: GenerateRequest) -> Completion:
        if self._cold:
            self._cold = False
            return Completion(text="not in the context", prompt_tokens=len(request.token_ids))
        completion = await super().generate(request)
        # Mark every call after the first as served from the cache, as a warm engine reports it.
        return Completion(text=completion.text, prompt_tokens=completion.prompt_tokens, cached_tokens=10)


class NoCache:
    """A backend without ``clear_cache``."""

    model_id = "fake/uncleared"
    context_window = 1_000_000
    capabilities = Capabilities(local=True, exact_ids=True)

    def close(self) -> None:
        return None


@pytest.fixture
def config_data(tmp_path: Path) -> dict[str, Any]:
    rng = random.Random(0)
    (tmp_path / "corpus").mkdir()
    for number in range(3):
        lines = (" ".join(rng.choice(SYLLABLES) + rng.choice(SYLLABLES) for _ in range(8)) for _ in range(40))
        (tmp_path / "corpus" / f"doc{number}.txt").write_text(".\n".join(lines) + ".\n", encoding="utf-8")
    return {
        "model": "fake/lexical",
        "tasks": ["niah"],
        "lengths": [200],
        "depths": ["beginning", "end"],
        "limit": 4,
        "controls": False,
        "filler": {"kind": "text", "glob": str(tmp_path / "corpus" / "*.txt")},
        "cache_control": True,
        "cache_control_sample": 5,
    }


def _summary_schema() -> dict[str, Any]:
    text = resources.files("rotscope").joinpath("schemas", "summary.schema.json").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def test_a_cache_that_changes_replies_is_an_incident(tmp_path: Path, config_data: dict[str, Any]) -> None:
    backend = ColdDiffers()
    run_dir = run_experiment(build_config(config_data), run_dir=tmp_path / "run", backend=backend)
    assert backend.cache_clears == 5
    typed = load_summary(run_dir)
    summary = typed.model_dump()
    jsonschema.validate(summary, _summary_schema(), cls=jsonschema.Draft202012Validator)
    cache = summary["cache_control"]
    assert cache["checked"] == 5 and cache["differing"] == 5
    assert cache["incident"] is True and cache["rule"] == DETERMINISTIC_RULE
    assert cache["cold_correct"] == 0 and cache["warm_correct"] == 5
    console = Console(record=True, width=200)
    print_summary(typed, console)
    assert "RUNTIME CORRECTNESS INCIDENT" in console.export_text()
    assert "runtime correctness incident" in render_report(run_dir)


def test_an_engine_that_answers_alike_cold_has_no_incident(
    tmp_path: Path, config_data: dict[str, Any]
) -> None:
    backend = FakeBackend("lexical", lexical_responder())
    run_dir = run_experiment(build_config(config_data), run_dir=tmp_path / "run", backend=backend)
    cache = load_summary(run_dir).model_dump()["cache_control"]
    assert backend.cache_clears == cache["checked"] == 5
    assert cache["differing"] == 0 and cache["incident"] is False


def test_the_sample_is_seeded_and_a_resume_checks_nothing_twice(
    tmp_path: Path, config_data: dict[str, Any]
) -> None:
    def checked(run_dir: Path) -> list[str]:
        store = RunStore.open_existing(run_dir)
        try:
            return sorted(check["call_id"] for check in store.cache_checks())
        finally:
            store.close()

    config = build_config(config_data)
    first = run_experiment(
        config, run_dir=tmp_path / "a", backend=FakeBackend("lexical", lexical_responder())
    )
    second = run_experiment(
        config, run_dir=tmp_path / "b", backend=FakeBackend("lexical", lexical_responder())
    )
    assert checked(first) == checked(second) and len(checked(first)) == 5
    again = FakeBackend("lexical", lexical_responder())
    run_experiment(config, run_dir=first, resume=True, backend=again)
    assert again.cache_clears == 0 and len(checked(first)) == 5


def test_no_checks_without_the_flag(tmp_path: Path, config_data: dict[str, Any]) -> None:
    backend = FakeBackend("lexical", lexical_responder())
    run_dir = run_experiment(
        build_config({**config_data, "cache_control": False}), run_dir=tmp_path / "run", backend=backend
    )
    assert backend.cache_clears == 0
    assert load_summary(run_dir).model_dump()["cache_control"] is None


def test_a_backend_that_cannot_clear_its_cache_is_bad_input(
    tmp_path: Path, config_data: dict[str, Any]
) -> None:
    with pytest.raises(BadInput, match="cannot clear its cache"):
        run_experiment(build_config(config_data), run_dir=tmp_path / "run", backend=NoCache())  # type: ignore[arg-type]


def _check(warm: float, cold: float, same: bool) -> dict[str, Any]:
    return {
        "call_id": "x",
        "warm_response": "a",
        "cold_response": "a" if same else "b",
        "warm_correct": warm,
        "cold_correct": cold,
        "error": None,
    }


def test_sampling_engines_use_a_paired_test_not_any_difference() -> None:
    # Replies differ (sampling) but correctness does not move: no incident.
    noisy = [_check(1.0, 1.0, same=False) for _ in range(10)]
    assert summarise_checks(noisy, deterministic=False, alpha=0.05).incident is False  # type: ignore[union-attr]
    # Cold loses correctness on 10 of 10 paired items: systematic.
    worse = [_check(1.0, 0.0, same=False) for _ in range(10)]
    summary = summarise_checks(worse, deterministic=False, alpha=0.05)
    assert summary is not None and summary.incident is True and summary.rule == PAIRED_RULE
    assert summary.p_value is not None and summary.p_value < 0.01
    # The same replies judged as a deterministic engine: any difference counts.
    assert summarise_checks(noisy, deterministic=True, alpha=0.05).incident is True  # type: ignore[union-attr]
