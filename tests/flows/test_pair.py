"""The paired session: baseline and candidate in one session, one seeded interleaving of both
subjects' calls, shared seeds, two ordinary run folders that the gate judges as it judges two
separate runs, and a resume that completes both after a stop mid-pair."""

from __future__ import annotations

import itertools
import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.config.experiment import load_config
from rotscope.execution.workflows.runner import Interrupted
from rotscope.modes.pair import SUBJECTS, run_pair
from rotscope.plan.schedule import paired_rounds, trie_runs
from rotscope.store import RunStore
from rotscope.types import GenerateRequest
from tests.support.cli_helpers import assert_bad_input, count_fake_calls, invoke, nonsense_corpus

PAIR = "fake/lexical,fake/lexical-recent"
ROTSCOPE = Path(sys.executable).with_name("rotscope")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pair")
    data: dict[str, Any] = {
        "name": "exp",
        "model": "fake/lexical",
        "tasks": ["niah"],
        "lengths": [200],
        "depths": ["beginning", "midpoint", "end"],
        "limit": 16,
        "filler": {"kind": "text", "glob": str(nonsense_corpus(root / "corpus", files=16) / "*.txt")},
        "gate": {"min_instances": 5, "margin": 0.3},
    }
    (root / "exp.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    assert invoke("plan", root / "exp.yaml", "-o", root / "plan.json").exit_code == 0
    return root


def _rows(run_dir: Path) -> list[dict[str, Any]]:
    with RunStore.read(run_dir) as store:
        return [dict(row) for row in store.rows()]


def _meta(run_dir: Path) -> dict[str, Any]:
    with RunStore.read(run_dir) as store:
        return store.meta()


def _gate(folder: Path, baseline: Path, candidate: Path) -> tuple[int, dict[str, Any]]:
    result = invoke(
        "gate", "--baseline", baseline, "--candidate", candidate, "--plan", folder / "plan.json", "--json"
    )
    return result.exit_code, json.loads(result.stdout)


def _slices(record: dict[str, Any]) -> list[tuple[Any, ...]]:
    keys = ("task", "length", "position", "pairs", "baseline_accuracy", "candidate_accuracy", "verdict")
    return sorted(tuple(json.dumps(entry[key]) for key in keys) for entry in record["slices"])


def test_a_paired_session_gates_as_two_separate_runs_do(folder: Path) -> None:
    experiment, plan = folder / "exp.yaml", folder / "plan.json"
    result = invoke("run", experiment, "--plan", plan, "--pair", PAIR, "--out", folder / "paired")
    assert result.exit_code == 0, result.output
    for name, extra in (
        ("apart-b", ()),
        ("apart-c", ("--model", "fake/lexical-recent", "--allow-deviation")),
    ):
        separate = invoke("run", experiment, "--plan", plan, "--out", folder / name, *extra)
        assert separate.exit_code == 0, separate.output
    paired_code, paired = _gate(folder, folder / "paired" / "baseline", folder / "paired" / "candidate")
    apart_code, apart = _gate(folder, folder / "apart-b", folder / "apart-c")
    assert paired_code == apart_code == 1
    assert paired["verdict"] == apart["verdict"] == "FAIL"
    assert _slices(paired) == _slices(apart)
    assert {s["verdict"] for s in paired["slices"]} >= {"FAIL", "not shown to fail"}


def test_the_stored_order_alternates_subjects_and_seeds_are_shared(folder: Path) -> None:
    out = folder / "paired"  # made by the test above when run in order; made here otherwise
    if not (out / "session.json").is_file():
        assert (
            invoke(
                "run", folder / "exp.yaml", "--plan", folder / "plan.json", "--pair", PAIR, "--out", out
            ).exit_code
            == 0
        )
    metas = {role: _meta(out / role) for role in SUBJECTS}
    assert metas["baseline"]["pair"]["order"] == metas["candidate"]["pair"]["order"]
    assert {role: meta["pair"]["role"] for role, meta in metas.items()} == {role: role for role in SUBJECTS}
    assert metas["candidate"]["pair"]["subjects"] == {
        "baseline": "fake/lexical",
        "candidate": "fake/lexical-recent",
    }
    order = metas["baseline"]["pair"]["order"]
    roles = [role for role, _ in order]  # one entry per group of calls
    rows = {role: _rows(out / role) for role in SUBJECTS}
    for role in SUBJECTS:
        calls = [call for owner, group in order if owner == role for call in group]
        assert calls == [
            row["call_id"] for row in rows[role]
        ]  # each folder's plan order is its part of the joint order
    assert all(len(set(roles[i : i + 3])) == 2 for i in range(len(roles) - 2))  # never three in a row
    switches = sum(a != b for a, b in itertools.pairwise(roles))
    assert switches >= len(roles) // 2  # alternating, not one subject after the other
    half = roles[: len(roles) // 2]
    assert abs(half.count("baseline") - half.count("candidate")) <= 1  # both in every stretch
    assert "prefix groups" in metas["baseline"]["pair"]["grouping"]["baseline"]
    seeds = {
        role: {(r["case_id"], r["length_target"], r["position"], r["trial"]): r["seed"] for r in rows[role]}
        for role in SUBJECTS
    }
    assert seeds["baseline"] == seeds["candidate"]
    record = json.loads((out / "session.json").read_text())
    assert record["subjects"] == [["baseline", "fake/lexical"], ["candidate", "fake/lexical-recent"]]


class _StopAfter:
    """The candidate's fake, interrupted (a Ctrl-C) at its ``after``-th call."""

    def __init__(self, after: int) -> None:
        self.calls = 0
        self.after = after
        self.respond = lexical_responder(0.5)

    def __call__(self, request: GenerateRequest) -> str:
        self.calls += 1
        if self.calls == self.after:
            raise KeyboardInterrupt
        return self.respond(request)


def test_a_pair_stopped_midway_resumes_as_a_pair_and_completes_both(folder: Path) -> None:
    out = folder / "stopped"
    config = load_config(folder / "exp.yaml")
    backends = {
        "baseline": FakeBackend("lexical", lexical_responder()),
        "candidate": FakeBackend("lexical-recent", _StopAfter(20)),
    }
    with pytest.raises(Interrupted) as stopped:
        run_pair(config, ("fake/lexical", "fake/lexical-recent"), out, backends=backends)
    assert stopped.value.run_dir == out and 0 < stopped.value.done < stopped.value.total
    before = {role: [row["status"] for row in _rows(out / role)] for role in SUBJECTS}
    for statuses in before.values():
        assert "ok" in statuses and "pending" in statuses
    assert before["candidate"].count("ok") == 19

    result = invoke("run", "--resume", out)
    assert result.exit_code == 0, result.output
    for role in SUBJECTS:
        assert {row["status"] for row in _rows(out / role)} == {"ok"}
    code, record = _gate(folder, out / "baseline", out / "candidate")
    assert code == 1 and record["verdict"] == "FAIL"


def test_bad_pairs_are_one_line_of_bad_input(folder: Path) -> None:
    experiment = folder / "exp.yaml"
    assert_bad_input(invoke("run", experiment, "--pair", "fake/lexical", "--out", folder / "x"), "--pair")
    same = invoke("run", experiment, "--pair", "fake/lexical,fake/lexical", "--out", folder / "aa")
    assert same.exit_code == 0, same.output  # an A/A session is no bad pair: it is what must PASS
    assert {path.name for path in (folder / "aa").iterdir()} >= {"baseline", "candidate"}
    assert_bad_input(invoke("run", experiment, "--pair", PAIR), "--out")
    refused = invoke("run", experiment, "--pair", PAIR, "--lengths", "5000000", "--out", folder / "refused")
    assert_bad_input(refused, "context window")
    assert not (folder / "refused").exists()
    (folder / "busy").mkdir()
    (folder / "busy" / "notes.txt").write_text("mine")
    assert_bad_input(invoke("run", experiment, "--pair", PAIR, "--out", folder / "busy"), "not empty")


@pytest.mark.parametrize("planned", [True, False])
def test_a_paired_dry_run_plans_both_subjects_and_calls_no_model(
    folder: Path, monkeypatch: pytest.MonkeyPatch, planned: bool
) -> None:
    calls = count_fake_calls(monkeypatch)
    out = folder / f"dry-pair-{planned}"
    plan = ("--plan", folder / "plan.json") if planned else ()
    result = invoke("run", folder / "exp.yaml", *plan, "--pair", PAIR, "--dry-run", "--out", out)
    assert result.exit_code == 0, result.output
    assert "baseline:" in result.stdout and "candidate:" in result.stdout
    assert calls == [] and not out.exists()
    with_model = invoke("run", folder / "exp.yaml", "--pair", PAIR, "--model", "fake/echo", "--dry-run")
    assert_bad_input(with_model, "--pair", "--model")


def test_paired_rounds_hold_one_group_of_each_subject_in_a_seeded_order() -> None:
    rounds = paired_rounds((6, 4), seed=3)
    assert sorted(rounds) == sorted([(0, n) for n in range(6)] + [(1, n) for n in range(4)])
    for number in range(4):
        assert {rounds[2 * number], rounds[2 * number + 1]} == {(0, number), (1, number)}
    assert rounds[8:] == [(0, 4), (0, 5)]
    firsts = {tuple(s for s, _ in paired_rounds((20, 20), seed))[::2] for seed in range(4)}
    assert len(firsts) > 1  # the seed decides who goes first in each round


def test_trie_runs_keep_prompts_that_share_most_of_their_prefix_together() -> None:
    shared = list(range(100))
    ids = [[*shared, 1, 2], [7] * 50, [*shared, 1, 3], [*shared[:10], *[9] * 90]]
    assert trie_runs(ids) == [[3], [0, 2], [1]]  # trie order; 3 shares only 10 tokens with 0


def _statuses(database: Path) -> dict[str, int]:
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=1) as db:
            return dict(db.execute("SELECT status, count(*) FROM items GROUP BY status").fetchall())
    except sqlite3.Error:  # not created yet, or its tables not yet written
        return {}


def test_a_pair_killed_midway_resumes_and_completes_both(folder: Path) -> None:
    out = folder / "killed"
    grid = ["--task", "niah", "--limit", "10", "--lengths", "200", "--depths", "0,0.5,1", "--trials", "12"]
    command = [str(ROTSCOPE), "run", folder / "exp.yaml", *grid, "--pair", PAIR, "--out", out]
    process = subprocess.Popen(
        [str(part) for part in command], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            if _statuses(out / "candidate" / "run.db").get("ok", 0) >= 1:
                break
            time.sleep(0.02)
        assert process.poll() is None, "the pair ended before it could be killed"
        process.kill()  # SIGKILL: no handler runs, no row is finished on the way out
        process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    seen = {role: _statuses(out / role / "run.db") for role in SUBJECTS}
    assert all(counts.get("pending", 0) > 0 for counts in seen.values()), seen
    assert all(counts.get("ok", 0) > 0 for counts in seen.values()), seen

    result = invoke("run", "--resume", out)
    assert result.exit_code == 0, result.output
    for role in SUBJECTS:
        done = _statuses(out / role / "run.db")
        assert set(done) == {"ok"} and done["ok"] == sum(seen[role].values())


def test_a_remote_pair_interleaves_blocks_of_its_providers_concurrency(folder: Path) -> None:
    config = load_config(
        folder / "exp.yaml",
        {"limits": {"fake-remote": {"concurrency": 3}}, "cache": {"enabled": False}, "limit": 6},
    )
    out = folder / "remote"
    run_pair(config, ("fake-remote/lexical", "fake-remote/lexical-recent"), out)
    pair = _meta(out / "baseline")["pair"]
    sizes = [len(group) for _, group in pair["order"]]
    assert max(sizes) == 3 and all(size <= 3 for size in sizes)
    assert "concurrency" in pair["grouping"]["candidate"]
    roles = [role for role, _ in pair["order"]]
    assert all(len(set(roles[i : i + 3])) == 2 for i in range(len(roles) - 2))
    for role in SUBJECTS:
        assert {row["status"] for row in _rows(out / role)} == {"ok"}
