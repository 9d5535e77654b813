"""rotscope: measure where a language model stops using its context well."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rotscope._version import __version__

if TYPE_CHECKING:
    from rotscope.config.experiment import ExperimentConfig
    from rotscope.records.summary import Summary

__all__ = ["__version__", "load_summary", "run", "stats"]


def __getattr__(name: str) -> Any:
    # Submodules on first use, so `rotscope --help` does not pay for scipy and statsmodels.
    if name == "stats":
        import importlib

        return importlib.import_module("rotscope.stats")
    raise AttributeError(name)


def run(config: ExperimentConfig | Path | str) -> Path:
    """Run an experiment from an ``ExperimentConfig`` or a YAML path; returns the run folder."""
    from rotscope.config.experiment import ExperimentConfig, load_config
    from rotscope.execution.workflows.runner import run_experiment

    if not isinstance(config, ExperimentConfig):
        config = load_config(Path(config))
    return run_experiment(config)


def load_summary(run_dir: Path | str) -> Summary:
    """The typed summary of a run folder (``rotscope.records.summary.Summary``; its ``model_dump()``
    is the summary JSON, its keys in docs/records.md)."""
    from rotscope.analysis.summary import load_summary as _load

    return _load(run_dir)
