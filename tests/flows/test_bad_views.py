"""The bad-data battery of the views (issue 35): a task whose every row is an error, a task whose
every layout the verifier rejected, a task with no case at all, a ``search.json`` of the right keys
and the wrong types, bad Inspect task arguments and Ctrl-C anywhere in a search. Each gives a
finished view that says what is missing (exit 0) or one line naming the cause and the fix (exit 2,
130 for Ctrl-C); none a traceback. Every model is a fake (the all-error task is a local
OpenAI-compatible server whose usage under-reports the prompt, so every row is ``prompt
truncated``); the run folders are made once per module and shared."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import Result

from rotscope.prompt.builder import PlacementError, PromptBuilder
from rotscope.types import Case, Layout, RenderedPrompt
from tests.flows.test_search_cli import experiment as search_experiment
from tests.support.chat_server import ChatServer
from tests.support.cli_helpers import assert_bad_input, invoke, nonsense_corpus

ROOT = Path(__file__).resolve().parents[2]
KEY_ENV = "ROTSCOPE_BAD_VIEWS_KEY"
TRUNCATED = "prompt truncated: the backend reports 7 prompt tokens"


def _experiment(folder: Path, corpus: Path, **fields: Any) -> Path:
    data = {
        "name": "bad-views",
        "model": "fake/lexical",
        "tasks": ["niah"],
        "lengths": [200, 300],
        "depths": [0.0, 1.0],
        "limit": 2,
        "controls": False,
        "cache": {"enabled": False},
        "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
        **fields,
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "experiment.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _finished(result: Result) -> str:
    """Exit 0 and no traceback; the output with its line breaks and runs of spaces as one space."""
    assert result.exit_code == 0, (result.output, result.exception)
    assert "Traceback" not in result.output
    return " ".join(result.output.split())


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return nonsense_corpus(tmp_path_factory.mktemp("bad-views") / "corpus")


# ---- a task whose every row is an error ---------------------------------------------------------


@pytest.fixture(scope="module")
def all_error(tmp_path_factory: pytest.TempPathFactory, corpus: Path) -> Iterator[tuple[Path, Result]]:
    """A run on a server whose usage says 7 prompt tokens whatever was sent: every row an error."""
    root = tmp_path_factory.mktemp("all-error")
    server = ChatServer(report_prompt_tokens=lambda counted: 7).start()
    patch = pytest.MonkeyPatch()
    patch.setenv(KEY_ENV, "sk-test")
    remote = {
        "base_url": server.base_url,
        "api_key_env": KEY_ENV,
        "timeout_s": 2.0,
        "backoff_initial_s": 0.01,
    }
    config = _experiment(root, corpus, model="openai/test-model", remote=remote)
    try:
        result = invoke("run", config, "--out", root / "run")
    finally:
        server.stop()
        patch.undo()
    yield root / "run", result


ALL_ERROR_LINE = f'niah: no scores: every row an error — 8 × "{TRUNCATED}'


def test_all_error_run_finishes_naming_the_most_common_error(all_error: tuple[Path, Result]) -> None:
    text = _finished(all_error[1])
    assert ALL_ERROR_LINE in text
    assert "rotscope run --resume retries them once the cause is fixed" in text


def test_all_error_show_names_the_most_common_error(all_error: tuple[Path, Result]) -> None:
    text = _finished(invoke("show", all_error[0]))
    assert ALL_ERROR_LINE in text
    assert "not measured (no data: every call failed" in text


def test_all_error_show_json_holds_the_top_error(all_error: tuple[Path, Result]) -> None:
    result = invoke("show", all_error[0], "--json")
    _finished(result)
    (analysis,) = json.loads(result.stdout)["tasks"]
    assert analysis["data"] == "all-error"
    assert analysis["top_error"]["count"] == analysis["top_error"]["errors"] == 8
    assert analysis["top_error"]["message"].startswith(TRUNCATED)


def test_all_error_markdown_names_the_most_common_error(all_error: tuple[Path, Result]) -> None:
    text = _finished(invoke("show", all_error[0], "--markdown"))
    assert f'**niah**: every row an error — 8 × "{TRUNCATED}' in text


def test_all_error_report_names_the_most_common_error(all_error: tuple[Path, Result], tmp_path: Path) -> None:
    _finished(invoke("report", all_error[0], "-o", tmp_path / "x.html"))
    page = " ".join((tmp_path / "x.html").read_text(encoding="utf-8").split())
    assert f"No scores: every row an error — 8 × &#34;{TRUNCATED}" in page.replace("&quot;", "&#34;")


@pytest.mark.parametrize("form", ["csv", "jsonl"])
def test_all_error_export_has_each_rows_error(all_error: tuple[Path, Result], form: str) -> None:
    result = invoke("export", all_error[0], "--format", form)
    _finished(result)
    assert result.stdout.count(TRUNCATED) == 8


# ---- a task whose every layout the verifier rejected --------------------------------------------


@pytest.fixture(scope="module")
def all_rejected(tmp_path_factory: pytest.TempPathFactory, corpus: Path) -> Iterator[tuple[Path, Result]]:
    """niah beside nolima, whose every prompt the builder refuses: nolima has no work item."""
    root = tmp_path_factory.mktemp("all-rejected")
    config = _experiment(root, corpus, tasks=["niah", "nolima"])
    render = PromptBuilder.render

    def rejecting(self: PromptBuilder, case: Case, layout: Layout) -> RenderedPrompt:
        if case.task == "nolima":
            raise PlacementError(f"case {case.case_id}: no room at length {layout.length_tokens}")
        return render(self, case, layout)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(PromptBuilder, "render", rejecting)
        result = invoke("run", config, "--out", root / "run")
    yield root / "run", result


REJECTED_LINE = "nolima: no scores: the verifier rejected every prompt"


def test_all_rejected_run_finishes_saying_so(all_rejected: tuple[Path, Result]) -> None:
    text = _finished(all_rejected[1])
    assert REJECTED_LINE in text and "niah: accuracy by depth × length" in text


def test_all_rejected_show_says_so(all_rejected: tuple[Path, Result]) -> None:
    assert REJECTED_LINE in _finished(invoke("show", all_rejected[0]))


def test_all_rejected_show_json_marks_the_task(all_rejected: tuple[Path, Result]) -> None:
    result = invoke("show", all_rejected[0], "--json")
    _finished(result)
    data = {analysis["task"]: analysis["data"] for analysis in json.loads(result.stdout)["tasks"]}
    assert data == {"niah": "scored", "nolima": "all-rejected"}


def test_all_rejected_markdown_says_so(all_rejected: tuple[Path, Result]) -> None:
    assert "no data: the verifier rejected every prompt" in _finished(
        invoke("show", all_rejected[0], "--markdown")
    )


def test_all_rejected_report_says_so(all_rejected: tuple[Path, Result], tmp_path: Path) -> None:
    _finished(invoke("report", all_rejected[0], "-o", tmp_path / "x.html"))
    assert "No scores: the verifier rejected every prompt" in (tmp_path / "x.html").read_text(
        encoding="utf-8"
    )


def test_all_rejected_export_has_only_the_measured_task(all_rejected: tuple[Path, Result]) -> None:
    result = invoke("export", all_rejected[0], "--format", "jsonl")
    _finished(result)
    tasks = {json.loads(line)["task"] for line in result.stdout.splitlines()}
    assert tasks == {"niah"}


def test_a_run_whose_every_layout_is_rejected_is_one_line(tmp_path: Path, corpus: Path) -> None:
    config = _experiment(tmp_path, corpus, depths=["@5000"], lengths=[200])
    assert_bad_input(invoke("run", config, "--out", tmp_path / "run"), "nothing to measure", "@5000")
    assert not (tmp_path / "run").exists()


def test_a_dry_run_whose_every_layout_is_rejected_lists_the_rejections(tmp_path: Path, corpus: Path) -> None:
    config = _experiment(tmp_path, corpus, depths=["@5000"], lengths=[200])
    text = _finished(invoke("run", config, "--dry-run"))
    assert "0 work items" in text and "2 rejected by the verifier" in text
    assert "offset @5000 is beyond its" in text


# ---- a task with no case ------------------------------------------------------------------------

NO_CASE = ("nothing to measure: no case was selected", "case_offset 1000", "lower case_offset")


@pytest.mark.parametrize(
    "extra",
    [[], ["--dry-run"], ["--pair", "fake/lexical,fake/lexical-recent"]],
    ids=["run", "dry-run", "pair"],
)
def test_a_case_offset_past_the_cases_is_one_line(tmp_path: Path, corpus: Path, extra: list[str]) -> None:
    config = _experiment(tmp_path, corpus, case_offset=1000)
    assert_bad_input(invoke("run", config, "--out", tmp_path / "run", *extra), *NO_CASE)
    assert not (tmp_path / "run").exists()


def test_a_plan_of_no_case_is_one_line(tmp_path: Path, corpus: Path) -> None:
    config = _experiment(tmp_path, corpus, case_offset=1000)
    assert_bad_input(invoke("plan", config, "-o", tmp_path / "plan.json"), *NO_CASE)
    assert not (tmp_path / "plan.json").exists()


@pytest.mark.parametrize("extra", [[], ["--dry-run"]], ids=["run", "dry-run"])
def test_an_empty_case_file_is_one_line(tmp_path: Path, corpus: Path, extra: list[str]) -> None:
    (tmp_path / "empty.jsonl").write_text("", encoding="utf-8")
    config = _experiment(tmp_path, corpus, tasks=["cases"], cases=str(tmp_path / "empty.jsonl"))
    assert_bad_input(invoke("run", config, "--out", tmp_path / "run", *extra), "empty.jsonl", "holds no case")


def test_a_task_of_no_case_beside_one_with_cases_is_shown_as_such(tmp_path: Path, corpus: Path) -> None:
    """Of two tasks, one without a row (its cases deleted from the store): every view finishes."""
    config = _experiment(tmp_path, corpus, tasks=["niah", "nolima"])
    run_dir = tmp_path / "run"
    _finished(invoke("run", config, "--out", run_dir))
    with closing(sqlite3.connect(run_dir / "run.db")) as db, db:
        db.execute("DELETE FROM items WHERE task = 'nolima'")
    assert "nolima: no scores: no rows (the task had no cases)" in _finished(invoke("show", run_dir))
    assert "no data: no rows (the task had no cases)" in _finished(invoke("show", run_dir, "--markdown"))
    _finished(invoke("report", run_dir, "-o", tmp_path / "x.html"))
    assert "No scores: no rows (the task had no cases)" in (tmp_path / "x.html").read_text(encoding="utf-8")


# ---- search.json of the right keys and the wrong types ------------------------------------------


@pytest.fixture(scope="module")
def search_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("search")
    result = invoke("run", search_experiment(root, 1000), "--search", "--out", root / "out")
    assert result.exit_code == 0, result.output
    return root / "out"


DAMAGES: dict[str, tuple[Callable[[dict[str, Any]], None], tuple[str, ...]]] = {
    "calls-a-string": (lambda r: r.update(calls="240"), ("key 'calls'", "valid integer", "'240'")),
    "bracket-end-a-word": (
        lambda r: r["bracket"].update(passes="short"),
        ("key 'bracket.passes'", "valid integer", "'short'"),
    ),
    "decision-score-a-list": (
        lambda r: r["decisions"][0].update(score=[0.5]),
        ("key 'decisions.0.score'", "valid number"),
    ),
    "verdict-unknown": (lambda r: r.update(verdict="maybe"), ("key 'verdict'", "'decided'", "'maybe'")),
    "fixed-grid-a-number": (lambda r: r.update(fixed_grid=576), ("key 'fixed_grid'", "valid dictionary")),
    "definition-missing-value": (
        lambda r: r["definition"].pop("value"),
        ("key 'definition.value'", "missing"),
    ),
}
SEARCH_VIEWS: dict[str, list[str]] = {"show": ["show"], "show-json": ["show", "--json"], "report": ["report"]}


@pytest.mark.parametrize("view", sorted(SEARCH_VIEWS))
@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_search_record_of_wrong_types_is_one_line(
    search_folder: Path, tmp_path: Path, damage: str, view: str
) -> None:
    folder = tmp_path / "search"
    shutil.copytree(search_folder, folder)
    record = json.loads((folder / "search.json").read_text(encoding="utf-8"))
    change, fragments = DAMAGES[damage]
    change(record)
    (folder / "search.json").write_text(json.dumps(record), encoding="utf-8")
    args = [*SEARCH_VIEWS[view][:1], folder, *SEARCH_VIEWS[view][1:]]
    line = assert_bad_input(invoke(*args), str(folder / "search.json"), *fragments)
    assert f"rotscope run --resume {folder}" in line


@pytest.mark.parametrize("form", ["csv", "jsonl"])
def test_export_of_a_search_folder_names_its_steps(search_folder: Path, form: str) -> None:
    line = assert_bad_input(invoke("export", search_folder, "--format", form), "a search folder")
    assert f"rotscope export {search_folder / 'steps'}/NAME" in line


def test_a_damaged_search_record_is_rebuilt_by_the_resume_it_names(
    search_folder: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "search"
    shutil.copytree(search_folder, folder)
    kept = json.loads((folder / "search.json").read_text(encoding="utf-8"))
    (folder / "search.json").write_text(json.dumps({**kept, "calls": "240"}), encoding="utf-8")
    assert invoke("show", folder).exit_code == 2
    (folder / "search.json").unlink()
    assert invoke("run", "--resume", folder).exit_code == 0
    assert json.loads((folder / "search.json").read_text(encoding="utf-8"))["decisions"] == kept["decisions"]
    assert "effective length" in _finished(invoke("show", folder))


# ---- Inspect task arguments ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argument", "named"),
    [("lengths=256,99999999999", "99999999999"), ("depths=0.5,7", "depth 7")],
    ids=["length-past-the-window", "depth-above-1"],
)
def test_inspect_eval_with_a_bad_task_argument_is_one_message(
    tmp_path: Path, argument: str, named: str
) -> None:
    pytest.importorskip("inspect_ai")
    inspect = Path(sys.executable).with_name("inspect")
    env = {
        **os.environ,
        "INSPECT_LOG_DIR": str(tmp_path / "logs"),
        "TIKTOKEN_CACHE_DIR": str(tmp_path / "tk"),
    }
    found = subprocess.run(
        [str(inspect), "eval", "rotscope/niah", "-T", argument, "--model", "rotscope/fake/lexical"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=240,
    )
    output = found.stdout + found.stderr
    assert found.returncode != 0, output
    assert "Traceback" not in output and "ExceptionGroup" not in output and "Exception Group" not in output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) <= 3, output  # the one message, as Inspect wraps it to the terminal
    assert named in " ".join(output.split()) and "rotscope: " in output


# ---- Ctrl-C anywhere in a search ----------------------------------------------------------------


def _statuses(database: Path) -> dict[str, int]:
    try:
        with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=1)) as db:
            return dict(db.execute("SELECT status, count(*) FROM items GROUP BY status").fetchall())
    except sqlite3.Error:
        return {}


def _folder_made(out: Path) -> bool:
    return (out / "config.yaml").is_file()


def _first_store(out: Path) -> bool:
    return any((out / "steps").glob("*/run.db"))


def _calls_made(out: Path) -> bool:
    return any(_statuses(store).get("ok", 0) >= 1 for store in (out / "steps").glob("*/run.db"))


MOMENTS: dict[str, Callable[[Path], bool]] = {
    "planning": _folder_made,
    "first-store": _first_store,
    "calls": _calls_made,
}


@pytest.mark.parametrize("moment", sorted(MOMENTS))
def test_ctrl_c_in_a_search_names_the_folder_and_the_resume(tmp_path: Path, moment: str) -> None:
    """A real process on a slow fake (its calls after the first wait for a gate that never opens),
    sent SIGINT at each moment: the message names the folder and the exact resume command."""
    config = search_experiment(tmp_path, 1000)
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["model"] = "slow-remote/curve-1000"
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    out = tmp_path / "out"
    env = {**os.environ, "SLOW_ROTSCOPE_LATENCY_S": "0.01", "SLOW_ROTSCOPE_GATE": str(tmp_path / "never")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH")]))
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "support" / "slow_rotscope.py"), "run", str(config), "--search",
         "--out", str(out)],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None and not MOMENTS[moment](out):
            time.sleep(0.01)
        assert process.poll() is None, "the search ended before it could be interrupted"
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    (line,) = [line for line in stderr.splitlines() if line.startswith("rotscope: interrupted")]
    assert f"the search in {out} keeps its" in line, line  # the folder, whichever step ran
    assert line.endswith(f"continue with: rotscope run --resume {out}"), line
