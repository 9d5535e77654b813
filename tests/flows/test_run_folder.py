"""A run folder that cannot be written (disk full, under a file, read-only) is one line and exit 2,
with every row finished before it kept."""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rotscope.cli import app
from rotscope.store import RunStore

DISK_FULL = "database or disk is full"


@pytest.fixture()
def experiment(tmp_path: Path, corpus: Path) -> Path:
    path = tmp_path / "experiment.yaml"
    path.write_text(
        "\n".join(
            [
                "model: fake/lexical",
                "tasks: [niah]",
                "limit: 2",
                "lengths: [200, 300]",
                "depths: [0.0, 1.0]",
                f"filler: {{kind: text, glob: '{corpus}/*.txt'}}",
            ]
        ),
        encoding="utf-8",
    )
    return path


def one_line(result: Any) -> str:
    """The run's single error line (progress goes to stdout; stderr holds only the error)."""
    assert "Traceback" not in result.output, result.output
    lines = result.stderr.strip().splitlines()
    joined = " ".join(" ".join(lines).split())
    assert joined.startswith("rotscope: ") and joined.count("rotscope: ") == 1, result.stderr
    return joined


def ok_rows(run_dir: Path) -> int:
    with closing(sqlite3.connect(run_dir / "run.db")) as db:
        return int(db.execute("SELECT COUNT(*) FROM items WHERE status = 'ok'").fetchone()[0])


def test_disk_full_mid_run_is_one_line_exit_2_and_earlier_rows_are_kept(
    experiment: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = RunStore.record
    written = []

    def filling(store: RunStore, results: Mapping[str, Mapping[str, Any]]) -> None:
        if len(written) == 3:
            raise sqlite3.OperationalError(DISK_FULL)
        record(store, results)
        written.append(results)

    monkeypatch.setattr(RunStore, "record", filling)
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", str(experiment), "--out", str(run_dir)])
    assert result.exit_code == 2, result.output
    message = one_line(result)
    assert "disk full" in message and f"rotscope run --resume {run_dir}" in message
    assert "another rotscope version" not in message
    assert ok_rows(run_dir) == 3

    monkeypatch.setattr(RunStore, "record", record)  # room again: the resume finishes the run
    resumed = CliRunner().invoke(app, ["run", "--resume", str(run_dir)])
    assert resumed.exit_code == 0, resumed.output
    assert ok_rows(run_dir) == 12


def test_disk_full_while_storing_the_plan_says_disk_full(
    experiment: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(*args: Any) -> int:
        raise sqlite3.OperationalError(DISK_FULL)

    monkeypatch.setattr(RunStore, "add_planned", full)
    result = CliRunner().invoke(app, ["run", str(experiment), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    message = one_line(result)
    assert "disk full" in message and "another rotscope version" not in message


def test_no_space_left_as_an_os_error_is_one_line(
    experiment: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(self: Path, *args: Any, **kwargs: Any) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))

    monkeypatch.setattr(Path, "write_text", full)
    result = CliRunner().invoke(app, ["run", str(experiment), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    assert "disk full" in one_line(result)


def test_out_under_a_regular_file_is_one_line_exit_2(experiment: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(experiment), "--out", str(blocker / "run")])
    assert result.exit_code == 2, result.output
    message = one_line(result)
    assert "out: cannot write" in message and "is a file, not a folder" in message


def test_out_on_a_read_only_file_system_is_one_line_exit_2(
    experiment: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Tests run as root here, where permissions do not stop a write: the file system's answer is
    # simulated where the run first writes to its folder (creating its lock file).
    real_open = os.open

    def read_only(path: Any, flags: int, *args: Any) -> int:
        if str(path).startswith(str(tmp_path / "run")) and flags & os.O_CREAT:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", read_only)
    result = CliRunner().invoke(app, ["run", str(experiment), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    assert "read-only file system" in one_line(result)


def test_a_store_that_is_not_sqlite_is_not_blamed_on_a_version(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "run.db").write_text("not a database", encoding="utf-8")
    result = CliRunner().invoke(app, ["show", str(run_dir)])
    assert result.exit_code == 2, result.output
    assert "another rotscope version" not in one_line(result)
