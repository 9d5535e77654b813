"""A --models session: three subjects in one interleaved session, killed twice at random points
(SIGKILL of the command line mid-session) and resumed, gives each subject the rows and outcomes of
a separate uninterrupted run; the stored order alternates subjects; a dry run calls nothing."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

import tests.support.slow_rotscope  # noqa: F401  (registers slow-remote/NAME in this process too)
from rotscope.execution.state.lock import LOCK_FILE
from rotscope.store import RunStore
from tests.support.cli_helpers import assert_bad_input, count_fake_calls, invoke, nonsense_corpus

SUBJECTS = ["slow-remote/lexical", "slow-remote/lexical-recent", "slow-remote/curve-600"]
FOLDERS = ["slow-remote-lexical", "slow-remote-lexical-recent", "slow-remote-curve-600"]
SLOW = Path(__file__).parents[1] / "support" / "slow_rotscope.py"
KEYS = (
    "item_id",
    "case_id",
    "length_target",
    "position",
    "trial",
    "seed",
    "prompt_digest",
    "outcome",
    "response",
)


def _done(out: Path) -> int:
    total = 0
    for name in FOLDERS:
        try:
            with sqlite3.connect(f"file:{out / name / 'run.db'}?mode=ro", uri=True, timeout=1) as db:
                total += db.execute("SELECT count(*) FROM items WHERE status = 'ok'").fetchone()[0]
        except sqlite3.Error:  # not created yet
            pass
    return total


def _rows(run_dir: Path) -> list[tuple[Any, ...]]:
    with RunStore.read(run_dir) as store:
        return sorted(tuple(json.dumps(row[key]) for key in KEYS) for row in map(dict, store.rows()))


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session killed twice at seeded random numbers of finished calls, then resumed to its end;
    beside it one separate uninterrupted run per subject."""
    root = tmp_path_factory.mktemp("models")
    data: dict[str, Any] = {
        "name": "exp",
        "model": "fake/lexical",
        "tasks": ["niah"],
        "lengths": [200, 400, 800],
        "depths": ["beginning", "end"],
        "limit": 3,
        "filler": {"kind": "text", "glob": str(nonsense_corpus(root / "corpus") / "*.txt")},
    }
    (root / "exp.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    out = root / "session"
    rng = random.Random(36)
    total = 3 * 27  # 3 cases x 3 lengths x 2 depths, and the evidence-absent control at each length
    env = {**os.environ, "SLOW_ROTSCOPE_LATENCY_S": "0.02"}
    for kill_at in sorted(rng.sample(range(3, total - 3), 2)):
        args = (
            ["--resume", str(out)]
            if (out / "session.json").is_file()
            else [str(root / "exp.yaml"), "--models", ",".join(SUBJECTS), "--out", str(out)]
        )
        process = subprocess.Popen(
            [sys.executable, str(SLOW), "run", *args],
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 30
            while process.poll() is None and _done(out) < kill_at and time.monotonic() < deadline:
                time.sleep(0.01)
            assert process.poll() is None, process.communicate()[1]  # ended before it could be killed
            process.kill()
            process.wait()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        assert 0 < _done(out) < total, (kill_at, _done(out))
    finished = subprocess.run(
        [sys.executable, str(SLOW), "run", "--resume", str(out)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr
    (root / "summary.txt").write_text(finished.stdout, encoding="utf-8")
    return root


def test_a_killed_and_resumed_session_gives_each_subject_its_separate_run(
    session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLOW_ROTSCOPE_LATENCY_S", "0")
    out = session / "session"
    kept = sorted(path.name for path in out.iterdir() if path.name != LOCK_FILE)  # the writer's lock
    assert kept == sorted([*FOLDERS, "session.json"])
    outcomes = set()
    for subject, name in zip(SUBJECTS, FOLDERS, strict=True):
        alone = session / f"alone-{name}"
        result = invoke("run", session / "exp.yaml", "--model", subject, "--out", alone)
        assert result.exit_code == 0, result.output
        together = _rows(out / name)
        assert together == _rows(alone)
        assert len(together) == 27
        outcomes.add(tuple(row[7] for row in together))
    assert len(outcomes) > 1  # the subjects differ, so equal rows are not a tautology
    assert "identical prompts" in (session / "summary.txt").read_text(encoding="utf-8")


def test_the_stored_order_alternates_subjects(session: Path) -> None:
    out = session / "session"
    with RunStore.read(out / FOLDERS[0]) as store:
        meta = store.meta()["session"]
    order = [name for name, _ in meta["order"]]
    rounds = [order[i : i + 3] for i in range(0, len(order), 3)]
    assert all(sorted(r) == sorted(FOLDERS) for r in rounds)  # every round holds every subject once
    assert len({tuple(r) for r in rounds}) > 1  # in a seeded order, not one fixed order
    for name in FOLDERS:
        with RunStore.read(out / name) as store:
            rows = [dict(row) for row in store.rows()]
            assert store.meta()["session"]["order"] == meta["order"]
        calls = [call for owner, group in meta["order"] if owner == name for call in group]
        assert calls == [row["call_id"] for row in rows]


def test_a_dry_run_prints_the_total_and_calls_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = count_fake_calls(monkeypatch)
    monkeypatch.chdir(tmp_path)
    result = invoke(
        "run",
        "--lengths",
        "200,400",
        "--limit",
        "2",
        "--models",
        "fake/lexical,fake/lexical-recent,fake/curve-600",
        "--dry-run",
    )
    assert result.exit_code == 0, result.output
    assert calls == []
    assert list(tmp_path.iterdir()) == []
    line = result.output.splitlines()[0]
    assert line.startswith("session of 3 subjects:")
    per_subject = [
        int(n.replace(",", "")) for n in re.findall(r"^calls: ([\d,]+)", result.output, flags=re.MULTILINE)
    ]
    assert len(per_subject) == 3 and f"{sum(per_subject):,} calls" in line


@pytest.mark.parametrize(
    ("models", "needle"),
    [
        ("fake/lexical", "two or more"),
        ("fake/lexical,nobody", "unknown subject"),
        ("fake/lexical,fake/lexical", "twice"),
    ],
)
def test_bad_models_are_one_line(tmp_path: Path, models: str, needle: str) -> None:
    assert_bad_input(invoke("run", "--models", models, "--out", tmp_path / "s"), needle)
    assert not (tmp_path / "s").exists()


def test_an_out_folder_that_is_no_session_is_refused(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "x").write_text("x", encoding="utf-8")
    assert_bad_input(
        invoke("run", "--models", "fake/lexical,fake/curve-600", "--out", tmp_path / "s"), "not empty"
    )


def test_a_subject_folder_resumes_only_with_its_session(session: Path) -> None:
    out = session / "session"
    assert_bad_input(invoke("run", "--resume", out / FOLDERS[1]), "resumes only as a whole", str(out))


def test_a_session_file_as_written_before_the_pair_was_a_session_resumes_shows_and_compares(
    session: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLOW_ROTSCOPE_LATENCY_S", "0")
    out = tmp_path / "session"
    shutil.copytree(session / "session", out, ignore=shutil.ignore_patterns(LOCK_FILE))
    record = json.loads((out / "session.json").read_text(encoding="utf-8"))
    before = ("subjects", "seed", "seeds", "planned", "experiment", "prompts")  # its keys until then
    (out / "session.json").write_text(
        json.dumps({key: record[key] for key in before}, indent=2) + "\n", encoding="utf-8"
    )
    resumed = invoke("run", "--resume", out)
    assert resumed.exit_code == 0, resumed.output
    assert "session run folders:" in resumed.stdout
    tail = " ".join(resumed.stdout.split("session run folders:")[-1].split())
    assert f"Next: rotscope compare {out} (a leaderboard and paired verdicts)" in tail  # issue 53
    for name in FOLDERS:
        assert _rows(out / name) == _rows(session / "session" / name)
        assert invoke("show", out / name, "--json").exit_code == 0
    compared = invoke("compare", out, "--json")
    assert compared.exit_code == 0, compared.output
    assert [run["run"] for run in json.loads(compared.stdout)["runs"]] == FOLDERS
