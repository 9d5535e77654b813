"""An outside package's backend, installed as a temporary ``acme_rotscope-1.0.dist-info`` beside its
one module (nothing fetched), reached from the command line exactly as a built-in is: listed by
``rotscope models`` with where it came from, and run as ``acme/NAME``; rotscope's own metadata gone
stale is one line, exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import rotscope
from rotscope.registry import STALE
from tests.support.cli_helpers import nonsense_corpus
from tests.support.entry_points import write_dist_info

ACME_BACKEND = '''
from rotscope.backends import register_backend
from rotscope.backends.fake import FakeBackend, responder_for
from rotscope.types import Capabilities


class AcmeBackend(FakeBackend):
    """The lexical fake under another name, as a local engine."""

    def __init__(self, name):
        super().__init__(name, responder_for(name), provider="acme")
        self.capabilities = Capabilities(local=True, exact_ids=True, max_concurrency=1, clearable_cache=True)


@register_backend(
    "acme", hint="acme/NAME: the lexical fake, from outside rotscope", models=lambda: ["acme/lexical"]
)
def acme_backend(name, config):
    return AcmeBackend(name)
'''


def rotscope_cli(*args: str | Path, site: Path) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-c", "from rotscope.cli import main; main()", *(str(arg) for arg in args)],
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.fixture
def site(tmp_path: Path) -> Path:
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "acme_backend.py").write_text(ACME_BACKEND, encoding="utf-8")
    write_dist_info(folder, "acme-rotscope", "1.0", {"rotscope.backends": {"acme": "acme_backend"}})
    return folder


def test_an_outside_backend_is_listed_and_runs_from_the_command_line(site: Path, tmp_path: Path) -> None:
    listed = rotscope_cli("models", site=site)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    at = lines.index("acme")
    assert lines[at + 1 : at + 5] == [
        "  acme/NAME: the lexical fake, from outside rotscope",
        "  from acme-rotscope 1.0",
        "  likelihood: not declared (a run keeps both scores where its models read a likelihood, "
        "else accuracy)",
        "  acme/lexical",
    ]
    fake = lines.index("fake")
    assert lines[fake + 2] == "  from rotscope 0.1.0 (built-in)"
    assert any(line.startswith("task families from rotscope 0.1.0 (built-in): ") for line in lines)

    experiment = tmp_path / "exp.yaml"
    corpus = nonsense_corpus(tmp_path / "corpus")
    experiment.write_text(
        yaml.safe_dump(
            {
                "name": "outside",
                "model": "acme/lexical",
                "tasks": ["niah"],
                "lengths": [200],
                "depths": [0.0, 1.0],
                "limit": 2,
                "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
            }
        ),
        encoding="utf-8",
    )
    run = tmp_path / "run"
    done = rotscope_cli("run", experiment, "--out", run, site=site)
    assert done.returncode == 0, done.stderr
    summary = rotscope.load_summary(run).model_dump()
    assert summary["backend"]["model"] == "acme/lexical"
    assert summary["items"]["done"] == summary["items"]["total"] > 0


def test_stale_rotscope_metadata_is_one_line_from_the_command_line(site: Path) -> None:
    write_dist_info(site, "rotscope", "0.1.0", {"console_scripts": {"rotscope": "rotscope.cli:main"}})
    done = rotscope_cli("models", site=site)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stdout + done.stderr
    assert [line for line in done.stderr.splitlines() if line.strip()] == [f"rotscope: {STALE}"]
