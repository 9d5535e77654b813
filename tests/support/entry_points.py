"""Package metadata in a folder: a ``NAME-VERSION.dist-info`` with ``METADATA`` and
``entry_points.txt``, which ``importlib.metadata`` finds once the folder is on ``sys.path``.

Two uses: the tests' outside packages (``acme-rotscope``), and rotscope's own component entry
points when the installed metadata is older than ``pyproject.toml`` (a shared editable install made
from another checkout): ``tests/conftest.py`` then puts a ``rotscope`` dist-info built from this
tree's ``pyproject.toml`` ahead of the installed one, so the tests see this tree's components.
A fresh ``pip install -e .`` (as CI does) makes the metadata current and this unused.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GROUP_PREFIX = "rotscope."


def write_dist_info(folder: Path, name: str, version: str, groups: Mapping[str, Mapping[str, str]]) -> Path:
    """Write ``NAME-VERSION.dist-info`` under ``folder`` declaring ``groups`` ({group: {name: value}})."""
    info = folder / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8"
    )
    sections = [
        f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in points.items())
        for group, points in groups.items()
    ]
    (info / "entry_points.txt").write_text("\n".join(sections), encoding="utf-8")
    return info


def source_groups() -> dict[str, dict[str, str]]:
    """The component entry-point groups ``pyproject.toml`` declares."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {
        group: dict(points)
        for group, points in project.get("entry-points", {}).items()
        if group.startswith(GROUP_PREFIX)
    }


def installed_groups() -> dict[str, dict[str, str]]:
    """The component entry points the installed rotscope metadata declares."""
    try:
        points = importlib.metadata.distribution("rotscope").entry_points
    except importlib.metadata.PackageNotFoundError:
        return {}
    groups: dict[str, dict[str, str]] = {}
    for point in points:
        if point.group.startswith(GROUP_PREFIX):
            groups.setdefault(point.group, {})[point.name] = point.value
    return groups


def current_rotscope_metadata(folder: Path) -> bool:
    """Put a rotscope dist-info declaring this tree's entry points ahead on ``sys.path`` when the
    installed one differs; whether it had to."""
    wanted = source_groups()
    if installed_groups() == wanted:
        return False
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    groups = {"console_scripts": dict(project.get("scripts", {})), **project.get("entry-points", {})}
    write_dist_info(folder, "rotscope", project["version"], groups)
    sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    return True
