"""Where rotscope's source names a built-in component: each entry-point name of pyproject.toml's
``rotscope.*`` groups, searched in ``src/`` as a quoted string literal (``"llamacpp"``,
``'niah'``) or one that starts with it and a separator (``"llamacpp/PATH"``, ``"session:GLOB"``),
outside the component's own module (and its package, and its helper modules ``NAME_*.py`` beside
it). ``tests/unit/test_component_names.py`` holds the hits that remain, each with its reason;
``python -m tests.support.component_names`` prints them."""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
QUOTED = r"""(["']){name}(?:[/:][^"'\n]*)?\1"""
"""A string literal that is the name, or starts with it and ``/`` or ``:``."""
PRODUCT_GROUPS = {"rotscope.records"}
"""Groups that register a product's record, not a component: their names are the products' own
words (``gate``, ``summary``), said wherever the product is."""


def builtin_names() -> dict[str, set[str]]:
    """Every built-in component's name, with the modules its entry points name (a name two kinds
    share, such as ``instruction``, the task family and the scorer, has both)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    found: dict[str, set[str]] = {}
    for group, points in project["entry-points"].items():
        if group.startswith("rotscope.") and group not in PRODUCT_GROUPS:
            for name, value in points.items():
                found.setdefault(name, set()).add(value.partition(":")[0])
    return found


def module_of(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_own(module: str, owners: set[str]) -> bool:
    """The component's module, a module of its package, a module of the component's own folder
    (``backends/llamacpp/``: the owner ``rotscope.backends.llamacpp.backend``), or a helper
    ``NAME_*`` beside it."""
    for owner in owners:
        package, _, leaf = owner.rpartition(".")
        if module == owner or module.startswith(owner + "."):
            return True
        if package.count(".") >= 2 and module.startswith(package + "."):
            return True
        if module.startswith(f"{package}.{leaf}_") and module.count(".") == owner.count("."):
            return True
    return False


def hits() -> Counter[tuple[str, str]]:
    """``(name, path relative to the repository)`` -> how many lines name it there."""
    names = builtin_names()
    patterns = {name: re.compile(QUOTED.format(name=re.escape(name))) for name in names}
    found: Counter[tuple[str, str]] = Counter()
    for path in sorted(SRC.rglob("*.py")):
        module = module_of(path)
        lines = path.read_text(encoding="utf-8").splitlines()
        for name, pattern in patterns.items():
            if is_own(module, names[name]):
                continue
            count = sum(1 for line in lines if pattern.search(line))
            if count:
                found[(name, path.relative_to(ROOT).as_posix())] = count
    return found


if __name__ == "__main__":
    for (name, path), count in sorted(hits().items(), key=lambda item: (item[0][1], item[0][0])):
        print(f'    ("{name}", "{path}"): {count},')
