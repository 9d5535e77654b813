"""Outside components bringing options of their own, each one file in a temporary
``acme_rotscope-1.0.dist-info`` (``tests.support.entry_points``), reached from the command line as a
built-in is: a backend with its own typed section of the experiment file (a path option resolved
against the experiment file's folder, a runtime option outside the run's identity, a wrong value
one line and exit 2, its keys in the generated reference), a filler source whose
``filler.options`` are typed, and a task family with an answer kind of its own (its prompt
instruction and a partial-credit measure, reported by name in the summary's cells)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import rotscope
from tests.flows.test_discovery import rotscope_cli
from tests.support.cli_helpers import nonsense_corpus
from tests.support.entry_points import write_dist_info

ACME_BACKEND = '''
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict

from rotscope.backends import register_backend
from rotscope.backends.fake import FakeBackend, responder_for
from rotscope.errors import BadInput
from rotscope.config.options import PathOption, RuntimeOption
from rotscope.types import Capabilities


class AcmeOptions(BaseModel):
    """Options of the acme engine."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    notes: Annotated[str | None, PathOption()] = None
    """A file the engine must find; relative to the experiment file."""
    threads: Annotated[int, RuntimeOption()] = 1
    """Threads the engine uses: never changes an answer."""
    temperature: float = 0.0
    """Changes answers: part of the identity."""


class AcmeBackend(FakeBackend):
    def __init__(self, name):
        super().__init__(name, responder_for(name), provider="acme")
        self.capabilities = Capabilities(local=True, exact_ids=True, max_concurrency=1, clearable_cache=True)


@register_backend("acme", hint="acme/NAME: the lexical fake with options", options=("acme", AcmeOptions))
def acme_backend(name, config):
    options = config.section(AcmeOptions)
    if options.notes is None or not Path(options.notes).is_file():
        raise BadInput(f"acme.notes: no file {options.notes}")
    return AcmeBackend(name)
'''

ACME_FILLER = """
from pydantic import BaseModel, ConfigDict, Field

from rotscope.filler import Document, register_filler


class LoremOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    word: str = "lorem"
    words: int = Field(default=60, gt=0)


@register_filler("lorem", options=LoremOptions, describe=lambda config: "lorem:" + config.options["word"])
def lorem(config, seed, avoid):
    options = LoremOptions.model_validate(config.options)
    for index in range(40):
        words = (" ".join(f"{options.word}{index}q{n}z{k}" for k in range(8)) for n in range(options.words))
        lines = (line + "." for line in words)
        yield Document(f"lorem-{index}", "\\n".join(lines) + "\\n")
"""


ACME_FAMILY = """
from rotscope.answer_kinds import register_scorer
from rotscope.tasks import register_cases
from rotscope.types import Case, ClaimReport, Evidence, Oracle, Score

TAGS = ("QX7", "ZR4", "KW9")


@register_scorer("tag", instruction="Answer with the three-character tag alone.", measures=("tag_chars",))
def score_tag(case, completion, filler):
    expected = case.oracle.answer
    reply = (completion.text or "").upper()
    found = sum(char in reply for char in expected) / len(expected)
    outcome = "correct" if expected in reply else "incorrect"
    return Score(outcome, None, ClaimReport(partial={"tag_chars": found}))


@register_cases("acme_tags")
def acme_tags():
    return [
        Case(
            case_id=f"tag-{index}",
            task="acme_tags",
            evidence=(Evidence("needle", f"The vault of Orrindel {index} carries the tag {tag}."),),
            question=f"What tag does the vault of Orrindel {index} carry?",
            oracle=Oracle(answer=tag, kind="tag"),
            guarded=(tag,),
        )
        for index, tag in enumerate(TAGS)
    ]
"""


@pytest.fixture
def site(tmp_path: Path) -> Path:
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "acme_engine.py").write_text(ACME_BACKEND, encoding="utf-8")
    (folder / "acme_lorem.py").write_text(ACME_FILLER, encoding="utf-8")
    (folder / "acme_tags.py").write_text(ACME_FAMILY, encoding="utf-8")
    write_dist_info(
        folder,
        "acme-rotscope",
        "1.0",
        {
            "rotscope.backends": {"acme": "acme_engine"},
            "rotscope.fillers": {"lorem": "acme_lorem"},
            "rotscope.tasks": {"acme_tags": "acme_tags"},
            "rotscope.scorers": {"tag": "acme_tags"},
        },
    )
    return folder


def _experiment(folder: Path, **extra: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = {
        "name": "outside",
        "model": "acme/lexical",
        "tasks": ["niah"],
        "lengths": [200],
        "depths": [0.5],
        "limit": 1,
        "controls": False,
        **extra,
    }
    path = folder / "exp.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _reference(site: Path) -> subprocess.CompletedProcess[str]:
    """``python -m rotscope.config.reference --show`` with the outside package on the path."""
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "rotscope.config.reference", "--show"],
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=180,
    )


def _one_line_error(done: Any) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return str(lines[0])


def test_a_backend_section_resolves_paths_keeps_runtime_out_of_identity_and_is_documented(
    site: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "exp"
    folder.mkdir()
    (folder / "notes.txt").write_text("notes\n", encoding="utf-8")
    corpus = nonsense_corpus(tmp_path / "corpus")
    filler = {"kind": "text", "glob": str(corpus / "*.txt")}
    experiment = _experiment(folder, filler=filler, acme={"notes": "notes.txt", "threads": 2})
    run = tmp_path / "run"
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    done = rotscope_cli("run", experiment, "--out", run, site=site)
    assert done.returncode == 0, done.stderr
    stored = yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8"))
    assert stored["acme"] == {"notes": str(folder / "notes.txt"), "threads": 2, "temperature": 0.0}
    assert rotscope.load_summary(run).model_dump()["items"]["done"] == 1

    stored["acme"]["threads"] = 7  # a runtime option: resume takes it
    (run / "config.yaml").write_text(yaml.safe_dump(stored), encoding="utf-8")
    resumed = rotscope_cli("run", "--resume", run, site=site)
    assert resumed.returncode == 0, resumed.stderr

    stored["acme"]["temperature"] = 0.5  # not runtime: the identity refuses it, naming the key
    (run / "config.yaml").write_text(yaml.safe_dump(stored), encoding="utf-8")
    refused = _one_line_error(rotscope_cli("run", "--resume", run, site=site))
    assert "acme.temperature changed from 0.0 to 0.5" in refused

    wrong = _experiment(tmp_path / "wrong", filler=filler, acme={"notes": "n.txt", "threads": "many"})
    assert "field 'acme.threads'" in _one_line_error(rotscope_cli("run", wrong, site=site))
    unknown = _experiment(tmp_path / "unknown", filler=filler, acme={"thread": 2})
    assert "unknown key 'acme.thread'" in _one_line_error(rotscope_cli("run", unknown, site=site))
    unclaimed = _experiment(tmp_path / "unclaimed", filler=filler, acmee={"threads": 2})
    assert "unknown key 'acmee'" in _one_line_error(rotscope_cli("run", unclaimed, site=site))

    listed = rotscope_cli("models", site=site)
    assert listed.returncode == 0, listed.stderr
    assert "  acme/NAME: the lexical fake with options" in listed.stdout.splitlines()

    shown = _reference(site)
    assert shown.returncode == 0, shown.stderr
    rows = shown.stdout.splitlines()
    assert "| `acme` | mapping | see its keys | Options of the acme engine. (from acme_engine) |" in rows
    assert any(row.startswith("| `acme.notes` | string or null | `null` | A file the engine") for row in rows)
    assert "| `acme.threads` | integer | `1` | Threads the engine uses: never changes an answer. |" in rows


def test_a_filler_source_with_typed_options_runs_and_refuses_a_bad_value(site: Path, tmp_path: Path) -> None:
    experiment = _experiment(
        tmp_path / "exp", model="fake/lexical", filler={"kind": "lorem", "options": {"word": "ipsum"}}
    )
    run = tmp_path / "run"
    done = rotscope_cli("run", experiment, "--out", run, site=site)
    assert done.returncode == 0, done.stderr
    stored = yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8"))
    assert stored["filler"]["options"] == {"word": "ipsum", "words": 60}
    assert rotscope.load_summary(run).model_dump()["items"]["done"] == 1

    bad = _experiment(
        tmp_path / "bad", model="fake/lexical", filler={"kind": "lorem", "options": {"words": 0}}
    )
    line = _one_line_error(rotscope_cli("run", bad, site=site))
    assert "field 'filler.options.words'" in line and "greater than 0" in line
    extra = _experiment(
        tmp_path / "extra", model="fake/lexical", filler={"kind": "lorem", "options": {"wrd": "x"}}
    )
    assert "unknown key 'filler.options.wrd'" in _one_line_error(rotscope_cli("run", extra, site=site))


def test_a_task_family_with_its_own_answer_kind_reports_its_partial_credit_by_name(
    site: Path, tmp_path: Path
) -> None:
    experiment = _experiment(
        tmp_path / "exp",
        model="fake/lexical",
        tasks=["acme_tags"],
        limit=3,
        filler={"kind": "lorem", "options": {"word": "ipsum"}},
    )
    run = tmp_path / "run"
    done = rotscope_cli("run", experiment, "--out", run, site=site)
    assert done.returncode == 0, done.stderr
    summary = rotscope.load_summary(run).model_dump()
    assert summary["items"]["done"] == 3
    cells = [cell for cell in summary["cells"] if cell.get("task") == "acme_tags"]
    assert cells and all(0.0 <= cell["mean_tag_chars"] <= 1.0 for cell in cells)
    exported = rotscope_cli("export", run, site=site)
    assert exported.returncode == 0, exported.stderr
    assert '""partial"": {""tag_chars"": ' in exported.stdout  # stored by name with each row

    unknown = _experiment(tmp_path / "unknown", model="fake/lexical", tasks=["acme_tag"])
    assert "acme_tags" in _one_line_error(rotscope_cli("run", unknown, site=site))
