"""The unit tests mirror ``src/rotscope/`` (CONTRIBUTING.md, "The test loops"): a folder of
``tests/unit/`` is a package of ``src/rotscope/`` (``tests/unit/execution/calls/`` for
``execution/calls/``), and each test module there imports that package (a top-level one,
``tests/unit/test_NAME.py``, a top-level module of rotscope); a module moved without its tests
leaves a stale mirror, which fails here."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "tests" / "unit"
SRC = ROOT / "src" / "rotscope"

NOT_MIRRORED = {
    "test_component_names.py": "searches the whole of src/ for the built-ins' names",
    "test_test_tree.py": "checks this tree",
    "filler/test_perturb.py": "drives filler/perturb.py through `rotscope perturb`, the command it is",
}


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name == "rotscope" or name.startswith("rotscope.")}


def stale_mirrors() -> dict[str, str]:
    """Each unit test module that is not where the code it imports is, with what is wrong."""
    stale: dict[str, str] = {}
    for path in sorted(UNIT.rglob("test_*.py")):
        relative = path.relative_to(UNIT)
        key = relative.as_posix()
        if key in NOT_MIRRORED:
            continue
        folder = relative.parts[:-1]
        if not SRC.joinpath(*folder).is_dir():
            stale[key] = f"no package src/rotscope/{'/'.join(folder)}"
            continue
        imports = _imports(path)
        if folder:
            package = ".".join(("rotscope", *folder))
            mirrored = {name for name in imports if name == package or name.startswith(package + ".")}
        else:  # a top-level module of rotscope, not a package's
            mirrored = {
                name
                for name in imports
                if name.count(".") == 1 and (SRC / f"{name.partition('.')[2]}.py").is_file()
            }
        if not mirrored:
            stale[key] = f"imports nothing of its mirror ({sorted(imports)})"
    return stale


def test_every_unit_test_module_sits_where_the_code_it_tests_is() -> None:
    assert stale_mirrors() == {}


def test_the_exceptions_are_still_there() -> None:
    assert all((UNIT / name).is_file() for name in NOT_MIRRORED)
