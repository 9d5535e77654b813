"""The store is the folder's: the lock covers the store file itself (the inode ``run.db`` leads
to), so two folders whose ``run.db`` is one file (a symbolic or a hard link) never have two
writers, and a store removed or replaced while a run writes it stops the run with one line."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.config.experiment import ExperimentConfig
from rotscope.execution.state.lock import LOCK_FILE, RunFolderLocked, RunLock
from rotscope.execution.workflows.runner import resume_experiment, run_experiment
from rotscope.store import RunStore, StoreMoved
from rotscope.types import GenerateRequest
from tests.support.tiny_runs import tiny_niah_config

TOTAL = 12


@pytest.fixture()
def config(tmp_path: Path, prose: Callable[..., str]) -> ExperimentConfig:
    return tiny_niah_config(tmp_path, "store-lock")


def _pending(run_dir: Path) -> None:
    """As if the run was killed before any call finished."""
    with RunStore(run_dir / "run.db") as store, store._db:
        store._db.execute("UPDATE items SET status = 'pending', attempts = 0")


def _during(call: int, act: Callable[[], None]) -> FakeBackend:
    """The lexical fake, doing ``act`` inside its ``call``-th call."""
    respond = lexical_responder()
    count = {"n": 0}

    def responder(request: GenerateRequest) -> str:
        count["n"] += 1
        if count["n"] == call:
            act()
        return respond(request)

    return FakeBackend("lexical", responder)


def test_two_folders_sharing_one_store_by_a_symlink_never_write_it_at_once(
    config: ExperimentConfig, tmp_path: Path
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    run_experiment(config, run_dir=first)
    _pending(first)
    second.mkdir()
    shutil.copy(first / "config.yaml", second / "config.yaml")
    (second / "run.db").symlink_to(first / "run.db")
    refused: list[BaseException] = []

    def other_resume() -> None:
        try:
            resume_experiment(second)
        except Exception as error:  # kept, to be checked below
            refused.append(error)

    backend = _during(2, other_resume)
    run_experiment(config, run_dir=first, resume=True, backend=backend)
    assert backend.calls == TOTAL  # each call made once (was: both folders' runs made them all)
    [error] = refused
    assert isinstance(error, RunFolderLocked), error
    assert "another rotscope run" in str(error) and "same file" in str(error)
    idle = FakeBackend("lexical", lexical_responder())
    run_experiment(config, run_dir=second, resume=True, backend=idle)  # free again once it ended
    assert idle.calls == 0


def test_the_lock_of_a_folder_holds_its_store_through_a_hard_link_too(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    (first / "run.db").write_bytes(b"a store")
    os.link(first / "run.db", second / "run.db")
    with RunLock(first):
        with pytest.raises(RunFolderLocked, match="same file"):
            RunLock(second).acquire()
        assert not (second / LOCK_FILE).read_text(encoding="ascii").strip()  # let go again
    with RunLock(second):  # free once the first let go
        pass


@pytest.mark.parametrize("how", ["replaced", "removed"])
def test_a_store_replaced_or_removed_mid_run_stops_it(
    config: ExperimentConfig, tmp_path: Path, how: str
) -> None:
    run_dir = tmp_path / "run"
    run_experiment(config, run_dir=run_dir)
    _pending(run_dir)
    spare = tmp_path / "spare.db"
    shutil.copy(run_dir / "run.db", spare)

    def swap() -> None:
        if how == "replaced":
            os.replace(spare, run_dir / "run.db")
        else:
            (run_dir / "run.db").unlink()

    backend = _during(3, swap)
    with pytest.raises(StoreMoved, match="removed or replaced while this run was writing it"):
        run_experiment(config, run_dir=run_dir, resume=True, backend=backend)
    assert backend.calls < TOTAL  # was: the run went on to the end, its rows in the unlinked file
