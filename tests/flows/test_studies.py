"""The study files of ``examples/studies/`` plan as their README documents: every prompt rendered
and verified (spans checked by the verifier), the item counts stated there, and at every length of
every task at least ``MIN_PAIRS`` instances (prompts' clusters), so no paired gap can say "too few
pairs". Planned on the scripted ``fake/lexical`` model, without running any model."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from rotscope.backends import create_backend
from rotscope.config.experiment import load_config
from rotscope.plan.workitems import Plan, build_plan
from rotscope.stats import MIN_PAIRS

STUDIES = Path(__file__).resolve().parents[2] / "examples" / "studies"

# file: (work items, rejected prompts, {task: cases per length}), as examples/studies/README.md says
EXPECTED: dict[str, tuple[int, int, dict[str, int]]] = {
    "heatmap.yaml": (108, 0, {"nolima": 6, "multihop": 6}),
    "latent-join.yaml": (20, 0, {"latent": 5, "join": 5}),
    "cre.yaml": (144, 0, {"reasoning": 6}),
    "session.yaml": (48, 0, {"instruction": 6}),
}


def _plan(name: str) -> Plan:
    config = load_config(STUDIES / name, {"model": "fake/lexical"})
    return build_plan(config, create_backend(config))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_study_plans_as_documented(name: str) -> None:
    items, rejected, cases = EXPECTED[name]
    plan = _plan(name)
    assert len(plan.rejected) == rejected, plan.rejected[:3]
    assert len(plan.items) == items
    instances: dict[tuple[str, int], set[str]] = defaultdict(set)  # the cases measured (clusters)
    for item in plan.items:
        if not item.case.control:
            instances[item.case.task, item.layout.length_tokens].add(item.case.case_id)
    config = load_config(STUDIES / name)
    for task, count in cases.items():
        for length in config.lengths:
            assert len(instances[task, length]) == count, (task, length)
            assert count >= MIN_PAIRS
    for item in plan.items:  # every piece of evidence has its verified span, inside the prompt
        assert {span.evidence_id for span in item.prompt.spans} >= {e.evidence_id for e in item.case.evidence}
        for span in item.prompt.spans:
            assert 0 <= span.token_start < span.token_end <= len(item.prompt.token_ids)


def test_latent_join_asks_nine_keys_per_prompt() -> None:
    plan = _plan("latent-join.yaml")
    assert {len(item.case.case_id.split("+")) for item in plan.items} == {9}


def test_latent_join_agent_arm_is_the_scripted_stand_in() -> None:
    config = load_config(STUDIES / "latent-join.yaml")
    (agent,) = config.subjects
    assert agent.model.startswith("cmd/") and (STUDIES / "agent-standin.py").is_file()
