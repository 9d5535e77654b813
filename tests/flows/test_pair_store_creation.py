"""A paired session's subject stores are created whole too: SIGKILLed inside either subject's
store creation, each subject folder holds a whole store (every planned row, its metadata) or none,
and a folder with none is one a run takes back. (Resuming the session as a whole after such a
kill, before ``pair.json`` exists, is the paired session's own resume.)"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rotscope.config.experiment import ExperimentConfig
from rotscope.execution.state.identity import config_digest
from rotscope.execution.state.run_folder import CREATING, check_run_dir, has_store
from rotscope.modes.pair import SUBJECTS, parse_pair, run_pair
from rotscope.store import RunStore
from tests.support.tiny_runs import tiny_niah_config

MODELS = "fake/lexical,fake/lexical-recent"


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory, prose: Callable[..., str]) -> ExperimentConfig:
    return tiny_niah_config(tmp_path_factory.mktemp("pair-creation"), "pair-creation")


def _creating(out: Path) -> bool:
    return any((out / role / name).exists() for role in SUBJECTS for name in (CREATING, "run.db"))


def test_a_kill_inside_a_subjects_store_creation_leaves_it_whole_or_absent(
    config: ExperimentConfig, tmp_path: Path
) -> None:
    run_pair(config, parse_pair(MODELS), tmp_path / "whole")
    with RunStore.read(tmp_path / "whole" / "baseline") as store:
        planned = len(store.rows())
    rng = random.Random(5)
    absent = 0
    for number in range(4):
        out = tmp_path / f"killed-{number}"
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child is killed
            try:
                run_pair(config, parse_pair(MODELS), out)
            finally:
                os._exit(0)
        deadline = time.monotonic() + 60
        while not _creating(out):
            assert os.waitpid(pid, os.WNOHANG) == (0, 0) and time.monotonic() < deadline
            time.sleep(0.0002)
        time.sleep(0.0 if number == 0 else rng.uniform(0, 0.04))  # the first at once: inside it
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        for role in SUBJECTS:
            folder = out / role
            if has_store(folder):
                with RunStore.read(folder) as store:
                    assert len(store.rows()) == planned and "config_digest" in store.meta()
                    assert store.meta()["pair"]["role"] == role
            else:
                absent += 1
                assert not (folder / "run.db").exists()
                check_run_dir(folder, config_digest(config), resume=False)  # a run takes it back
    assert absent  # some kill landed before a subject's store was in place
