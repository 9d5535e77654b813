"""A run's store is created whole or not at all: cut at any byte of its creation (the store under
its temporary name, with or without config.yaml, or what an older rotscope left at ``run.db``:
an empty file, tables without rows, a hot journal), the folder holds no store and the run starts
again, to rows equal to a run never interrupted. Checked at 50 seeded byte points, and by real
SIGKILLs of a forked run inside its creation window."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rotscope.config.experiment import ExperimentConfig
from rotscope.execution.state import run_folder
from rotscope.execution.state.identity import config_digest
from rotscope.execution.state.run_folder import CONFIG_FILE, CREATING, check_run_dir, creation_cut, has_store
from rotscope.execution.workflows.runner import resume_experiment, run_experiment
from rotscope.store import MIGRATIONS
from tests.support.tiny_runs import tiny_niah_config

KILL_POINTS = 50


def _config(folder: Path, prose: Callable[..., str]) -> ExperimentConfig:
    return tiny_niah_config(folder, "creation")


def results(run_dir: Path) -> list[tuple[Any, ...]]:
    """Each row's identity and result (not its timestamps or latency)."""
    with closing(sqlite3.connect(run_dir / "run.db")) as db:
        return db.execute(
            "SELECT item_id, call_id, plan_order, status, outcome, response, attempts FROM items "
            "ORDER BY item_id"
        ).fetchall()


@dataclass
class Reference:
    config: ExperimentConfig
    run_dir: Path
    store_bytes: bytes
    config_text: str


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, prose: Callable[..., str]) -> Reference:
    """An uninterrupted run, and the bytes of its store as they were when it was renamed into place."""
    base = tmp_path_factory.mktemp("creation")
    config = _config(base, prose)
    captured: dict[str, bytes] = {}
    rename = os.replace

    def capturing(source: Any, target: Any) -> None:
        if Path(source).name == CREATING:
            captured["store"] = Path(source).read_bytes()
        rename(source, target)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(run_folder.os, "replace", capturing)
        run_experiment(config, run_dir=base / "ref")
    text = (base / "ref" / CONFIG_FILE).read_text(encoding="utf-8")
    assert len(results(base / "ref")) == 12
    return Reference(config, base / "ref", captured["store"], text)


def _cut(folder: Path, reference: Reference, point: int, config: bool) -> Path:
    """The folder a kill at byte ``point`` of the store's creation leaves."""
    folder.mkdir()
    (folder / ".rotscope.lock").write_text("4242\n", encoding="utf-8")
    (folder / CREATING).write_bytes(reference.store_bytes[:point])
    (folder / f"{CREATING}-wal").write_bytes(os.urandom(point % 997))  # a log torn anywhere
    if config:  # config.yaml is written once the store is filled, just before the rename
        (folder / CONFIG_FILE).write_text(reference.config_text, encoding="utf-8")
    return folder


def _start_again(reference: Reference, folder: Path) -> None:
    """What a user does: ``--resume`` once config.yaml is there, else the same command again."""
    if (folder / CONFIG_FILE).is_file():
        resume_experiment(folder)
    else:
        run_experiment(reference.config, run_dir=folder)


def test_a_cut_at_any_of_50_byte_points_leaves_no_store_and_the_run_starts_again(
    reference: Reference, tmp_path: Path
) -> None:
    size = len(reference.store_bytes)
    points = sorted(random.Random(33).sample(range(size + 1), KILL_POINTS))
    digest = config_digest(reference.config)
    folders = []
    for number, point in enumerate(points):
        folder = _cut(tmp_path / f"cut-{number}", reference, point, config=point == size or number % 2 == 0)
        assert creation_cut(folder) and not has_store(folder) and not (folder / "run.db").exists()
        check_run_dir(folder, digest, resume=False)  # a fresh run takes the folder back
        folders.append(folder)
    # running each of them again costs a run apiece: every seventh, the first and the last
    for folder in [*folders[::7], folders[-1]]:
        _start_again(reference, folder)
        assert results(folder) == results(reference.run_dir)
        assert not any(path.name.startswith(CREATING) for path in folder.iterdir())


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _tables_without_rows(path: Path) -> None:
    with closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA journal_mode=WAL")
        for number, (_name, script) in enumerate(MIGRATIONS, start=1):
            db.executescript(f"BEGIN;\n{script};\nPRAGMA user_version = {number};\nCOMMIT;")


def _hot_journal(path: Path) -> None:
    """A first write killed before it committed, in a rollback journal (before WAL was set)."""
    script = (
        "import os, sqlite3\n"
        f"db = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
        "db.execute('PRAGMA cache_size=1'); db.execute('BEGIN'); db.execute('CREATE TABLE meta (k)')\n"
        "for i in range(3000): db.execute('INSERT INTO meta VALUES (?)', ('x' * 200,))\n"
        "os.kill(os.getpid(), 9)\n"
    )
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child is killed
        try:
            exec(script)
        finally:
            os._exit(1)
    os.waitpid(pid, 0)
    assert path.with_name(path.name + "-journal").exists()


@pytest.mark.parametrize("leave", [_empty, _tables_without_rows, _hot_journal])
def test_what_an_older_creation_left_at_run_db_is_no_store_and_resume_starts_the_run(
    reference: Reference, tmp_path: Path, leave: Callable[[Path], None]
) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / CONFIG_FILE).write_text(reference.config_text, encoding="utf-8")
    leave(folder / "run.db")
    assert not has_store(folder) and creation_cut(folder)
    resume_experiment(folder)  # was: exit 2 on every resume and every rerun
    assert results(folder) == results(reference.run_dir)


def _killed(run: Callable[[], None], folder: Path, delay_s: float) -> None:
    """Run ``run`` in a forked child and SIGKILL it ``delay_s`` after its store creation began."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - measured in the child, which is killed
        try:
            run()
        finally:
            os._exit(0)
    deadline = time.monotonic() + 60
    while not (folder / CREATING).exists() and not (folder / "run.db").exists():
        if os.waitpid(pid, os.WNOHANG) != (0, 0) or time.monotonic() > deadline:
            raise AssertionError("the run ended before its store was created")
        time.sleep(0.0002)
    time.sleep(delay_s)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def test_real_sigkills_inside_the_creation_window_resume_to_the_same_rows(
    reference: Reference, tmp_path: Path
) -> None:
    rng = random.Random(7)
    states = set()
    for number in range(6):
        folder = tmp_path / f"killed-{number}"
        delay_s = 0.0 if number == 0 else rng.uniform(0, 0.03)  # the first at once: inside the window
        _killed(lambda f=folder: run_experiment(reference.config, run_dir=f), folder, delay_s)
        whole = has_store(folder)
        assert whole or not (folder / "run.db").exists()  # a whole store or none
        states.add(whole)
        _start_again(reference, folder)
        assert results(folder) == results(reference.run_dir)
    assert False in states  # at least one kill landed inside the creation
