"""The release gate on real runs of the bundled model: a changed system prompt gets a verdict; a
gateway that trims the head of the prompt (evidence at the beginning lost) FAILs when it hides
the trim, and is caught as error rows (INCONCLUSIVE) when its usage shows it; slices smaller than
the plan's minimum are INCONCLUSIVE; warm and cold llama.cpp runs answer alike."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rotscope.analysis.summary import load_summary
from rotscope.backends.llamacpp.backend import LlamaCppBackend, bundled_model_path
from rotscope.backends.llamacpp.options import LlamaCppOptions
from rotscope.config.experiment import build_config
from rotscope.execution.workflows.dry_run import freeze_plan
from rotscope.execution.workflows.runner import run_experiment
from rotscope.gate.judgement import EXIT_CODES
from rotscope.gate.verdict import evaluate
from rotscope.plan.manifest import read_manifest
from rotscope.types import Completion, GenerateRequest

KEEP_TOKENS = 120


class HeadTrimmingGateway:
    """Forwards only the last ``KEEP_TOKENS`` tokens of each prompt, as a gateway or a provider
    whose real window is smaller than its catalogue says. It reports the model it wraps, so
    nothing in the run's manifest can tell. A ``silent`` one also reports the prompt tokens it was
    sent as the ones it used, so the delivery check cannot tell either; only the results can."""

    def __init__(self, inner: LlamaCppBackend, *, silent: bool) -> None:
        self.inner = inner
        self.silent = silent
        self.model_id = inner.model_id
        self.context_window = inner.context_window
        # What the wrapped engine is, run in this process (the gateway sits in front of it).
        self.capabilities = replace(inner.capabilities, worker_process=False)

    def tokenizer(self) -> Any:
        return self.inner.tokenizer()

    def reserve(self, max_prompt_tokens: int, max_new_tokens: int) -> None:
        self.inner.reserve(max_prompt_tokens, max_new_tokens)

    async def generate(self, request: GenerateRequest) -> Completion:
        if not self.silent:  # its usage shows the trim: the call is an error row whatever the reply,
            # so the engine is not asked (the delivery check reads only the count)
            return Completion(text="", prompt_tokens=KEEP_TOKENS, completion_tokens=1)
        completion = await self.inner.generate(replace(request, token_ids=request.token_ids[-KEEP_TOKENS:]))
        if self.silent and completion.error is None:
            return replace(completion, prompt_tokens=len(request.token_ids))
        return completion

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def close(self) -> None:
        self.inner.close()


def _config(**fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "gate-bundled",
        "model": "bundled",
        "score": "accuracy",  # the gate reads the replies (test_likelihood_bundled reads likelihoods)
        "tasks": ["niah"],
        "lengths": [256],
        "depths": ["beginning"],  # the trim removes the head: one position shows what the gate must
        "limit": 10,
        "controls": False,
        "filler": {"kind": "code", "package": "json"},
        "generation": {"max_tokens": 24},
        "gate": {"min_instances": 10, "margin": 0.1},
    }
    data.update(fields)
    return data


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("gate-bundled")
    freeze_plan(build_config(_config()), root / "plan.json")
    plan = read_manifest(root / "plan.json")
    made = {"plan": root / "plan.json"}
    made["baseline"] = run_experiment(
        build_config(_config(cache_control=True, cache_control_sample=4)),
        run_dir=root / "baseline",
        frozen_plan=plan,
        allow_deviation=True,
    )
    made["prompted"] = run_experiment(
        build_config(_config(system_prompt="You are a careful assistant. Reply with the fact only.")),
        run_dir=root / "prompted",
        frozen_plan=plan,
        allow_deviation=True,
    )
    for name, silent in (("trimmed", True), ("trimmed-reported", False)):
        gateway = HeadTrimmingGateway(LlamaCppBackend(bundled_model_path(), LlamaCppOptions()), silent=silent)
        made[name] = run_experiment(build_config(_config()), run_dir=root / name, backend=gateway)
    return made


def test_a_changed_system_prompt_gets_a_verdict_bound_to_both_subjects(runs: dict[str, Path]) -> None:
    record = evaluate(runs["baseline"], runs["prompted"], read_manifest(runs["plan"]))
    assert record.exit_code == EXIT_CODES[record.verdict]
    assert record.baseline.system_prompt_digest is None
    assert record.candidate.system_prompt_digest is not None
    assert record.baseline.model_digest == record.candidate.model_digest
    assert [item.instances for item in record.slices] == [10]


def test_a_gateway_that_trims_the_head_fails(runs: dict[str, Path]) -> None:
    record = evaluate(runs["baseline"], runs["trimmed"])
    beginning = next(item for item in record.slices if item.position == "beginning")
    assert beginning.candidate_accuracy == 0.0
    assert beginning.verdict == "FAIL"
    assert record.verdict == "FAIL" and record.exit_code == 1


def test_a_gateway_whose_usage_shows_the_trim_gives_error_rows_not_a_model_verdict(
    runs: dict[str, Path],
) -> None:
    record = evaluate(runs["baseline"], runs["trimmed-reported"])
    assert record.errors.candidate_errors == 10 and record.slices == []
    assert record.verdict == "INCONCLUSIVE" and "rows in error" in record.reasons[0]


def test_slices_below_the_minimum_are_inconclusive(tmp_path: Path) -> None:
    small = build_config(_config(limit=3, depths=["end"]))
    first = run_experiment(small, run_dir=tmp_path / "a")
    record = evaluate(first, first)  # the run against itself: every slice pairs, each too small
    assert record.verdict == "INCONCLUSIVE" and record.exit_code == 3
    assert "fewer than the plan's minimum 10" in record.slices[0].reason


def test_warm_and_cold_llamacpp_answer_alike(runs: dict[str, Path]) -> None:
    cache = load_summary(runs["baseline"]).model_dump()["cache_control"]
    assert cache["checked"] == 4
    assert cache["incident"] is False, cache["examples"]
