"""The code filler lists the standard library (or an installed package) once a process, since each
haystack variant reads the source again; a folder given as ``path`` is listed every time (it may
have changed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rotscope.config.experiment import FillerConfig
from rotscope.filler import code


def test_installed_sources_are_listed_once_and_a_folder_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed: list[Path] = []
    original = code.source_files

    def counted(root: Path) -> list[Path]:
        listed.append(root)
        return original(root)

    monkeypatch.setattr(code, "source_files", counted)
    code._installed_files.cache_clear()
    stdlib = FillerConfig(kind="code")
    firsts = [next(code.code_documents(stdlib, seed)).name for seed in range(5)]
    assert len(listed) == 1 and len(set(firsts)) > 1  # one walk, five orders
    (tmp_path / "a.py").write_text("x = 1\n", encoding="utf-8")
    folder = FillerConfig(kind="code", path=str(tmp_path))
    assert [d.name for d in code.code_documents(folder, 0)] == ["a.py"]
    (tmp_path / "b.py").write_text("y = 2\n", encoding="utf-8")
    assert sorted(d.name for d in code.code_documents(folder, 0)) == ["a.py", "b.py"]
    assert len(listed) == 3
    code._installed_files.cache_clear()
