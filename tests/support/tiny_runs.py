"""The smallest niah experiment on the lexical fake over a folder of prose: what the store's creation,
lock and pair tests run (2 cases x 2 lengths x 2 depths, controls included)."""

from __future__ import annotations

from pathlib import Path

from rotscope.config.experiment import ExperimentConfig, build_config
from tests.conftest import filler_text


def tiny_niah_config(folder: Path, name: str) -> ExperimentConfig:
    """The experiment, its corpus of three prose files written under ``folder / "corpus"``."""
    corpus = folder / "corpus"
    corpus.mkdir()
    for number in range(3):
        (corpus / f"doc{number}.txt").write_text(filler_text(60, seed=number), encoding="utf-8")
    return build_config(
        {
            "name": name,
            "model": "fake/lexical",
            "tasks": ["niah"],
            "limit": 2,
            "lengths": [200, 300],
            "depths": [0.0, 1.0],
            "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
        }
    )
