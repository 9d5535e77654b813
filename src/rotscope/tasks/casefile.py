"""Reading the YAML case files shipped in ``tasks/data``."""

from __future__ import annotations

from importlib import resources
from typing import Any

from rotscope._util.strict_yaml import load_yaml


def load_records(task: str) -> list[dict[str, Any]]:
    text = resources.files("rotscope.tasks").joinpath("data", f"{task}.yaml").read_text(encoding="utf-8")
    records: list[dict[str, Any]] = load_yaml(text, f"rotscope/tasks/data/{task}.yaml")
    return records
