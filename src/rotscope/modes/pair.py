"""A paired session (``rotscope run CONFIG --pair BASELINE,CANDIDATE --out DIR``): the two-subject
form of a ``--models`` session (``models_session``), its folders named by role, ``DIR/baseline`` and
``DIR/candidate``, the two run folders ``rotscope gate`` judges.

What only a pair does: it may run against a frozen plan (``--plan``), where the candidate's subject is
the point of the pair and every other deviation is bad input unless ``--allow-deviation``
(``intended``); the same model twice is an A/A session, what an unchanged release must PASS; its
calls go in the rounds of ``schedule.paired_rounds`` and its run folders hold the session under
``pair`` with their ``role``, as paired folders always have.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rotscope.config.experiment import ExperimentConfig
from rotscope.errors import BadInput
from rotscope.execution.calls.execute import Reporter
from rotscope.execution.workflows.dry_run import DryRun
from rotscope.modes.models_session import session_dry_run, start_session
from rotscope.modes.session_record import PAIR_FOLDERS
from rotscope.types import Backend

SUBJECTS = PAIR_FOLDERS


def parse_pair(value: str) -> tuple[str, str]:
    """``BASELINE,CANDIDATE`` as two subject names or model names (``rotscope.config.subjects``)."""
    parts = [part.strip() for part in value.split(",")]
    if len(parts) != 2 or not all(parts):
        raise BadInput(f"--pair: {value!r} is not BASELINE,CANDIDATE (subject names or models)")
    return parts[0], parts[1]  # the same twice is an A/A session: what an unchanged release must PASS


def run_pair(
    config: ExperimentConfig,
    models: tuple[str, str],
    out: Path,
    *,
    reporter: Reporter | None = None,
    frozen_plan: Mapping[str, Any] | None = None,
    allow_deviation: bool = False,
    backends: Mapping[str, Backend] | None = None,
) -> Path:
    """Run ``config`` for both models in one interleaved session into ``out``; returns ``out``."""
    return start_session(
        config,
        "pair",
        list(zip(SUBJECTS, models, strict=True)),
        out,
        reporter=reporter,
        frozen_plan=frozen_plan,
        allow_deviation=allow_deviation,
        backends=backends,
    )


def pair_dry_run(
    config: ExperimentConfig,
    models: tuple[str, str],
    *,
    frozen_plan: Mapping[str, Any] | None = None,
    allow_deviation: bool = False,
) -> dict[str, DryRun]:
    """Each subject's dry run by role, as ``run_pair`` would plan it: no model is called and nothing
    is written (no ``--out`` folder is made)."""
    return session_dry_run(
        config, "pair", list(zip(SUBJECTS, models, strict=True)), frozen_plan, allow_deviation
    )
