"""The README's sample screen is what the code prints (issue 53): ``rotscope show`` of the quick
run's stored rows (the fixture ``tests/fixtures/runs/quick-both``, a real run of the bundled model)
rendered at 100 columns equals the README's block, and that screen ends with the headline and the
next step. ``python benchmarks/readme_sample.py --write`` regenerates the block."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _sample() -> ModuleType:
    spec = importlib.util.spec_from_file_location("readme_sample", ROOT / "benchmarks" / "readme_sample.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("readme_sample", module)
    spec.loader.exec_module(module)
    return module


def test_readme_sample() -> None:
    sample = _sample()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert sample.readme_block(readme) == sample.block(sample.render()), (
        "README.md's sample screen is out of date: python benchmarks/readme_sample.py --write"
    )


def test_the_sample_ends_with_the_headline_and_the_next_step() -> None:
    lines = _sample().render().rstrip().splitlines()
    last = " ".join(line.strip() for line in lines[-3:])
    assert "Effective length on niah (accuracy): 512 tokens; 95% between 256 and beyond 1,024" in last
    assert "cases would place it" in last
    assert lines[-1] == "Next: rotscope report both (every table and plot)"
    assert max(len(line) for line in lines) <= 100
