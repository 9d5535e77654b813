"""``rotscope perturb``: every kind of rename applied with formatting kept, untouched files
byte-identical, the output compiles, and a rename or key that matches nothing fails loudly."""

from __future__ import annotations

import py_compile
from pathlib import Path

import pytest
import yaml
from click.testing import Result
from typer.testing import CliRunner

from rotscope.cli import app

BASE = '''\
"""Cache backends."""

DEFAULT = object()  # sentinel: no timeout given


class BaseCache:
    def __init__(self, params):
        # the default lives in params
        timeout = params.get("timeout", params.get("TIMEOUT", 300))
        self.timeout = timeout
        self.entries = params.get("max_entries", 300)  # capacity
        self.ratio = 2.5

    def set(self, key, value, timeout=DEFAULT):
        return self.store(key, value, timeout=timeout)


def make(params):
    return BaseCache(params)
'''
PERTURBED_BASE = '''\
"""Cache backends."""

DEFAULT = object()  # sentinel: no timeout given


class BenderCache:
    def __init__(self, fry_opts):
        # the default lives in params
        nibbler_ttl = fry_opts.get("nibbler_ttl", fry_opts.get("NIBBLER", 719))
        self.nibbler_ttl = nibbler_ttl
        self.entries = fry_opts.get("max_entries", 417)  # capacity
        self.ratio = 3.75

    def set(self, key, value, nibbler_ttl=DEFAULT):
        return self.store(key, value, nibbler_ttl=nibbler_ttl)
    _fry_retry = 7


def make(fry_opts):
    return BenderCache(fry_opts)
LIMIT = 13
'''
LOCAL = """from shop.cache.base import BaseCache


class LocalCache(BaseCache):
    def touch(self, key, timeout=None):
        return self.set(key, None, timeout=timeout or self.timeout)
"""
OUTSIDE = "timeout = 300  # not under paths: stays as it is\n"


def _package(root: Path) -> Path:
    (root / "shop" / "cache").mkdir(parents=True)
    (root / "shop" / "__init__.py").write_text("", encoding="utf-8")
    (root / "shop" / "cache" / "__init__.py").write_text("", encoding="utf-8")
    (root / "shop" / "cache" / "base.py").write_text(BASE, encoding="utf-8")
    (root / "shop" / "cache" / "local.py").write_text(LOCAL, encoding="utf-8")
    (root / "shop" / "settings.py").write_text(OUTSIDE, encoding="utf-8")
    (root / "shop" / "cache" / "README.txt").write_bytes(b"BaseCache timeout 300\r\n")
    return root


MAP = {
    "paths": ["shop/cache"],
    "renames": {
        "BaseCache": "BenderCache",
        "timeout": "nibbler_ttl",
        "TIMEOUT": "NIBBLER",
        "params": "fry_opts",
    },
    "literals": {"300": [{"value": 417, "line_contains": "max_entries"}, {"value": 719}], "2.5": 3.75},
    "inject": [
        {"file": "shop/cache/base.py", "after_class": "BenderCache", "code": "_fry_retry = 7"},
        {"file": "shop/cache/base.py", "after_function": "make", "code": "LIMIT = 13"},
    ],
}


def _write_map(path: Path, data: object) -> Path:
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _perturb(source: Path, renames: Path, out: Path) -> Result:
    return CliRunner().invoke(app, ["perturb", str(source), "--renames", str(renames), "-o", str(out)])


def _assert_bad_input(result: Result, *fragments: str) -> None:
    assert result.exit_code == 2, (result.output, result.exception)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("rotscope: "), result.stderr
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return _package(tmp_path / "src")


def test_every_rename_applies_and_formatting_is_kept(tmp_path: Path, source: Path) -> None:
    out = tmp_path / "out"
    result = _perturb(source, _write_map(tmp_path / "map.yaml", MAP), out)
    assert result.exit_code == 0, result.output
    base = (out / "shop" / "cache" / "base.py").read_text(encoding="utf-8")
    # identifiers, attribute, parameters, keyword arguments, string keys, literals, both injections;
    # the comments (one mentions 'timeout' as a word) and blank lines stay as they were
    assert base == PERTURBED_BASE
    local = (out / "shop" / "cache" / "local.py").read_text(encoding="utf-8")
    assert (
        "import BenderCache" in local and "(key, None, nibbler_ttl=nibbler_ttl or self.nibbler_ttl)" in local
    )
    for untouched in ("shop/settings.py", "shop/cache/README.txt", "shop/__init__.py"):
        assert (out / untouched).read_bytes() == (source / untouched).read_bytes()
    for path in out.rglob("*.py"):
        py_compile.compile(str(path), cfile=str(tmp_path / "compiled.pyc"), doraise=True)
    assert "rename BaseCache: 4" in result.output
    assert "literal 300 -> 417 (line_contains 'max_entries'): 1" in result.output
    assert "literal 300 -> 719: 1" in result.output
    assert "inject shop/cache/base.py after_class BenderCache: 1" in result.output
    assert "3 files rewritten, 3 copied unchanged" in result.output


def test_without_paths_every_python_file_is_rewritten(tmp_path: Path, source: Path) -> None:
    out = tmp_path / "out"
    spec = {"renames": {"timeout": "nibbler_ttl"}, "literals": {300: 719}}  # an unquoted key works too
    assert _perturb(source, _write_map(tmp_path / "map.yaml", spec), out).exit_code == 0
    assert (out / "shop" / "settings.py").read_text(encoding="utf-8") == OUTSIDE.replace(
        "timeout = 300", "nibbler_ttl = 719"
    )
    assert (out / "shop" / "cache" / "README.txt").read_bytes() == b"BaseCache timeout 300\r\n"


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"renames": {"BaseCache": "BenderCache", "BaseCash": "X"}}, "renames.BaseCash"),
        ({"literals": {"301": 719}}, "literals.301 -> 719"),
        ({"literals": {"300": [{"value": 1, "line_contains": "nowhere"}]}}, "line_contains 'nowhere'"),
        (
            {"inject": [{"file": "shop/cache/base.py", "after_class": "Nope", "code": "x = 1"}]},
            "after_class Nope",
        ),
    ],
)
def test_an_entry_that_matches_nothing_fails_and_writes_nothing(
    tmp_path: Path, source: Path, change: dict[str, object], fragment: str
) -> None:
    spec = {"paths": ["shop/cache"], **change}
    out = tmp_path / "out"
    renames = _write_map(tmp_path / "map.yaml", spec)
    result = _perturb(source, renames, out)
    _assert_bad_input(result, str(renames), "matched nothing", fragment)
    assert not out.exists()


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ({"renames": {"timeout": "class"}}, "'class' is not a Python identifier"),
        ({"renamez": {"a": "b"}}, "unknown key 'renamez'"),
        ({"literals": {"ten": 10}}, "'ten' is not a number literal"),
        ({"inject": [{"file": "shop/cache/base.py", "code": "x = ("}]}, "is not valid Python"),
        ({"inject": [{"file": "shop/settings.py", "code": "x = 1"}], "paths": ["shop/cache"]}, "inject"),
        ({"paths": ["shop/cahce"], "renames": {"timeout": "t"}}, "paths: 'shop/cahce' matches nothing"),
        (["not", "a", "mapping"], "must be a mapping"),
    ],
)
def test_a_bad_map_is_bad_input(tmp_path: Path, source: Path, spec: object, fragment: str) -> None:
    renames = _write_map(tmp_path / "map.yaml", spec)
    _assert_bad_input(_perturb(source, renames, tmp_path / "out"), str(renames), fragment)


def test_output_folder_must_be_new_or_empty(tmp_path: Path, source: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine", encoding="utf-8")
    renames = _write_map(tmp_path / "map.yaml", {"renames": {"timeout": "t"}})
    _assert_bad_input(_perturb(source, renames, out), "not empty")
    assert (out / "keep.txt").read_text(encoding="utf-8") == "mine"
    _assert_bad_input(_perturb(tmp_path / "missing", renames, tmp_path / "new"), "not found")
    _assert_bad_input(_perturb(source, tmp_path / "nomap.yaml", tmp_path / "new"), "rename map not found")


def test_unparseable_source_under_paths_is_named(tmp_path: Path, source: Path) -> None:
    (source / "shop" / "cache" / "broken.py").write_text("def f(:\n", encoding="utf-8")
    renames = _write_map(tmp_path / "map.yaml", {"renames": {"timeout": "t"}})
    _assert_bad_input(_perturb(source, renames, tmp_path / "out"), "broken.py")


def test_after_line_plants_code_beside_one_rewritten_line(tmp_path: Path) -> None:
    from rotscope.errors import BadInput
    from rotscope.filler.perturb import Injection, PerturbMap, PerturbReport, perturb_tree, rewrite_source

    source = "class A:\n    def f(self, params):\n        ttl = params.get('T', 300)\n        return ttl\n"
    spec = PerturbMap(renames={"params": "fry_opts"}, literals={"300": 719})
    planted = Injection(file="m.py", after_line="fry_opts.get('T', 719)", code="cap = 417\nrate = 13")
    report = PerturbReport()
    code = rewrite_source(source, spec, report, [planted])
    assert (
        "        ttl = fry_opts.get('T', 719)\n        cap = 417\n        rate = 13\n        return ttl\n"
        in code
    )
    assert report.inject[planted.label()] == 1
    twice = PerturbMap(inject=[Injection(file="m.py", after_line="= 1", code="z = 3")])
    folder = tmp_path
    (folder / "src").mkdir()
    (folder / "src" / "m.py").write_text("x = 1\ny = 1\n", encoding="utf-8")
    with pytest.raises(BadInput, match=r"after_line must match one line, not several: .*\(2 lines\)"):
        perturb_tree(folder / "src", twice, folder / "out")
    assert not (folder / "out").exists()
