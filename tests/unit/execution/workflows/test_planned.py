"""The line a run prints before its first call counts cases and their controls apart."""

from __future__ import annotations

import pytest

from rotscope.backends import create_backend
from rotscope.config.experiment import build_config
from rotscope.execution.workflows.planned import planned_line
from rotscope.plan.workitems import build_plan


@pytest.mark.parametrize(("controls", "counted"), [(True, "(2 cases, 2 controls)"), (False, "(2 cases)")])
def test_the_planned_line_counts_cases_and_controls(controls: bool, counted: str) -> None:
    config = build_config(
        {"model": "fake/lexical", "tasks": ["niah"], "lengths": [256], "depths": [0.5], "limit": 2,
         "controls": controls}
    )  # fmt: skip
    plan = build_plan(config, create_backend(config))
    line = planned_line(plan)
    assert line.startswith(f"planned {len(plan.items)} calls {counted}, "), line
