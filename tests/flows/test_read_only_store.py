"""The read commands (show, report, export, gate) open run.db read-only: they never migrate it,
never change its journal mode, never create tables in a file that is not a run store (that is
refused with one line, exit 2), and read a run on a read-only mount."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from typer.testing import CliRunner

import rotscope
from rotscope.cli import app
from rotscope.store import SCHEMA_VERSION, RunStore

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
ROTSCOPE = Path(sys.executable).parent / "rotscope"
OLD_SCHEMA = 7  # the fixtures were written before the engine_mode migration


def read_commands(run_dir: Path, out: Path) -> list[list[str]]:
    """Every read command on ``run_dir``; what they write goes to ``out``, never into the run."""
    return [
        ["show", str(run_dir)],
        ["show", str(run_dir), "--json"],
        ["report", str(run_dir), "-o", str(out / "report.html")],
        ["export", str(run_dir), "--format", "csv"],
        ["export", str(run_dir), "--format", "jsonl", "-o", str(out / "rows.jsonl")],
        ["gate", "--baseline", str(run_dir), "--candidate", str(run_dir), "-o", str(out / "gate.json")],
    ]


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Bytes and modification time of each file of ``folder``."""
    return {path.name: (path.read_bytes(), path.stat().st_mtime_ns) for path in sorted(folder.iterdir())}


def test_an_empty_run_db_is_refused_and_left_empty(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "run.db").write_bytes(b"")
    before = snapshot(run_dir)
    for command in [*read_commands(run_dir, tmp_path), ["run", "--resume", str(run_dir)]]:
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 2, (command, result.output)
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "not a rotscope run store (an empty file)" in lines[0], lines
    assert snapshot(run_dir) == before


def test_a_foreign_sqlite_file_is_refused_untouched(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with closing(sqlite3.connect(run_dir / "run.db")) as db, db:
        db.execute("CREATE TABLE notes (body TEXT)")
        db.execute("INSERT INTO notes VALUES ('mine')")
    before = snapshot(run_dir)
    for command in [*read_commands(run_dir, tmp_path), ["run", "--resume", str(run_dir)]]:
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 2, (command, result.output)
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "not a rotscope run store (no items or meta table)" in lines[0], lines
    assert snapshot(run_dir) == before
    with closing(sqlite3.connect(run_dir / "run.db")) as db:
        assert [row[0] for row in db.execute("SELECT name FROM sqlite_master")] == ["notes"]


@pytest.mark.parametrize("name", ["v1-lexical", "v1-lexical-recent"])
def test_old_runs_are_read_without_being_migrated(tmp_path: Path, name: str) -> None:
    run_dir = Path(shutil.copytree(FIXTURES / name, tmp_path / name))
    database = run_dir / "run.db"
    before = (database.read_bytes(), database.stat().st_mtime_ns)
    for command in read_commands(run_dir, tmp_path):
        result = CliRunner().invoke(app, command)
        assert result.exit_code in (0, 3), (command, result.output)  # gate: INCONCLUSIVE on 3 instances
    assert (database.read_bytes(), database.stat().st_mtime_ns) == before
    with closing(sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == OLD_SCHEMA < SCHEMA_VERSION
        assert "engine_mode" not in {row[1] for row in db.execute("PRAGMA table_info(items)")}
    with RunStore.read(run_dir) as store:
        rows = store.rows()
    assert len(rows) == 48 and {row["engine_mode"] for row in rows} == {None}  # added later: NULL
    assert json.loads((tmp_path / "rows.jsonl").read_text().splitlines()[0])["engine_mode"] is None


def test_a_finished_run_is_read_unchanged(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "doc.txt").write_text("plain words in a line of filler text.\n" * 80, encoding="utf-8")
    config = tmp_path / "experiment.yaml"
    config.write_text(
        "model: fake/lexical\ntasks: [niah]\nlimit: 2\nlengths: [200]\ndepths: [0.5]\n"
        f"filler: {{kind: text, glob: '{corpus}/*.txt'}}\n"
    )
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", str(config), "--out", str(run_dir)])
    assert result.exit_code == 0, result.output
    database = run_dir / "run.db"
    before = (database.read_bytes(), database.stat().st_mtime_ns)
    for command in read_commands(run_dir, tmp_path):
        shown = CliRunner().invoke(app, command)
        assert shown.exit_code in (0, 3), (command, shown.output)
    assert (database.read_bytes(), database.stat().st_mtime_ns) == before


def _read_only_mount_works() -> bool:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return False
    probe = subprocess.run(["unshare", "-m", "mount", "-t", "tmpfs", "none", "/mnt"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _read_only_mount_works(), reason="needs root and unshare -m to mount read-only")
def test_a_run_on_a_read_only_mount_is_read(tmp_path: Path) -> None:
    """A WAL run store on a read-only bind mount (no shared-memory file can be made there)."""
    source = Path(shutil.copytree(FIXTURES / "v1-lexical", tmp_path / "source"))
    mounted, out = tmp_path / "mounted", tmp_path / "out"
    mounted.mkdir()
    out.mkdir()
    commands = [" ".join([str(ROTSCOPE), *command]) for command in read_commands(mounted, out)]
    script = (
        f"mount --bind {source} {mounted} && mount -o remount,bind,ro {mounted} && "
        f"! touch {mounted}/probe 2>/dev/null && "
        + " && ".join(f"{{ {command} > /dev/null; test $? -eq 0 -o $? -eq 3; }}" for command in commands)
        + f" && {ROTSCOPE} show {mounted} --json"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(rotscope.__file__).parents[1])}
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["items"]["total"] == 48
    assert (out / "report.html").stat().st_size > 0 and (out / "gate.json").is_file()
    assert sorted(path.name for path in source.iterdir()) == ["config.yaml", "run.db"]
