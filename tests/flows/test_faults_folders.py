"""Issue 52's fault battery, folders: every reader of a folder's own files given crafted folders
(paths ``../x``, absolute, links out, ``..`` inside names, NUL bytes, very long names, wrong types,
missing keys, truncated JSON; links planted where rotscope writes its own files) ends with exit 0
or 2 and no traceback, and touches nothing outside the folder; unfinished folders given to
compare, gate and report are named with their pending items and the command that goes on."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from rotscope._util.inside import inside
from rotscope._util.resume_hint import resume_command
from rotscope.errors import BadInput
from tests.support.cli_helpers import invoke
from tests.support.fault_battery import assert_no_traceback, bystander, tree_digest

pytestmark = pytest.mark.fault_battery

SUBJECTS = ("fake/lexical", "fake/curve-500")
FOLDERS = ("fake-lexical", "fake-curve-500")


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished two-subject --models session, copied by every case that crafts it."""
    root = tmp_path_factory.mktemp("finished")
    experiment = {
        "name": "exp",
        "model": "fake/lexical",
        "tasks": ["niah"],
        "limit": 2,
        "lengths": [200, 300],
        "depths": [0.0, 1.0],
    }
    (root / "exp.yaml").write_text(yaml.safe_dump(experiment), encoding="utf-8")
    result = invoke("run", root / "exp.yaml", "--models", ",".join(SUBJECTS), "--out", root / "S")
    assert result.exit_code == 0, result.output
    return root / "S"


def _copy(finished: Path, tmp_path: Path, name: str = "S") -> tuple[Path, Path]:
    """The session copied to ``tmp_path/name`` and a bystander folder ``tmp_path/V`` beside it."""
    session = tmp_path / name
    shutil.copytree(finished, session)
    return session, bystander(tmp_path / "V")


def _edit(session: Path, change: Callable[[dict[str, Any]], object]) -> None:
    path = session / "session.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def _first_folder(value: Any, planned: bool) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        data["subjects"][0][0] = value
        data["planned"] = planned

    return change


# ---------------------------------------------------------------- session.json: the subject folders

FOLDER_VALUES: dict[str, Any] = {
    "parent": "../V",
    "parent-deep": "fake-lexical/../../V",
    "absolute": "ABSOLUTE_V",
    "dotdot": "..",
    "dot": ".",
    "empty": "",
    "nul": "fake\x00lexical",
    "very-long": "x" * 5000,
    "own-record": "session.json",
    "hidden": ".rotscope.lock",
    "backslash": "..\\V",
    "number": 7,
    "null": None,
    "list": ["fake-lexical"],
}


@pytest.mark.parametrize("planned", [False, True], ids=["planning", "planned"])
@pytest.mark.parametrize("key", list(FOLDER_VALUES))
def test_resume_of_a_session_naming_a_folder_outside_is_refused(
    finished: Path, tmp_path: Path, key: str, planned: bool
) -> None:
    session, outside = _copy(finished, tmp_path)
    value = FOLDER_VALUES[key]
    value = str(outside) if value == "ABSOLUTE_V" else value
    _edit(session, _first_folder(value, planned))
    before, kept = tree_digest(outside), tree_digest(session)
    result = invoke("run", "--resume", session)
    assert_no_traceback(result, allowed=(2,))
    assert tree_digest(outside) == before
    assert tree_digest(session) == kept  # refused before anything was written or deleted


def test_resume_of_a_session_whose_subject_folder_is_a_link_out_is_refused(
    finished: Path, tmp_path: Path
) -> None:
    session, outside = _copy(finished, tmp_path)
    shutil.rmtree(session / FOLDERS[0])
    (session / FOLDERS[0]).symlink_to(outside, target_is_directory=True)
    _edit(session, lambda data: data.update(planned=False))
    before = tree_digest(outside)
    result = invoke("run", "--resume", session)
    assert_no_traceback(result, allowed=(2,))
    assert tree_digest(outside) == before


RECORD_DAMAGE: dict[str, Callable[[Path], None]] = {
    "truncated": lambda path: path.write_text(path.read_text(encoding="utf-8")[:40], encoding="utf-8"),
    "empty-file": lambda path: path.write_text("", encoding="utf-8"),
    "not-utf8": lambda path: path.write_bytes(b"\xff\xfe{\x00"),
    "a-list": lambda path: path.write_text("[1, 2]", encoding="utf-8"),
    "no-subjects": lambda path: _drop(path, "subjects"),
    "one-subject": lambda path: _set(path, "subjects", [["fake-lexical", "fake/lexical"]]),
    "subject-triple": lambda path: _set(path, "subjects", [["a", "b", "c"], ["d", "e", "f"]]),
    "subjects-a-string": lambda path: _set(path, "subjects", "fake-lexical"),
    "folder-twice": lambda path: _set(path, "subjects", [["fake-lexical", "a"], ["fake-lexical", "b"]]),
    "empty-model": lambda path: _set(path, "subjects", [["fake-lexical", ""], ["fake-curve-500", "x"]]),
    "planned-a-string": lambda path: _set(path, "planned", "no"),
    "unknown-kind": lambda path: _set(path, "kind", "triple"),
    "planning-without-experiment": lambda path: (_set(path, "planned", False), _drop(path, "experiment")),
    "experiment-a-list": lambda path: (_set(path, "planned", False), _set(path, "experiment", [1])),
    "a-folder": lambda path: (path.unlink(), path.mkdir()),
    "deep-nesting": lambda path: path.write_text("[" * 100_000, encoding="utf-8"),
}


def _set(path: Path, key: str, value: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    data[key] = value
    path.write_text(json.dumps(data), encoding="utf-8")


def _drop(path: Path, key: str) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    data.pop(key, None)
    path.write_text(json.dumps(data), encoding="utf-8")


@pytest.mark.parametrize("command", ["resume", "compare"])
@pytest.mark.parametrize("damage", list(RECORD_DAMAGE))
def test_a_damaged_session_record_is_one_line(
    finished: Path, tmp_path: Path, damage: str, command: str
) -> None:
    session, outside = _copy(finished, tmp_path)
    RECORD_DAMAGE[damage](session / "session.json")
    before = tree_digest(outside)
    result = invoke("run", "--resume", session) if command == "resume" else invoke("compare", session)
    assert_no_traceback(result)
    assert tree_digest(outside) == before


@pytest.mark.parametrize("key", ["parent", "absolute", "nul", "very-long", "own-record"])
def test_compare_of_a_session_naming_a_folder_outside_is_refused(
    finished: Path, tmp_path: Path, key: str
) -> None:
    session, outside = _copy(finished, tmp_path)
    value = FOLDER_VALUES[key]
    _edit(session, _first_folder(str(outside) if value == "ABSOLUTE_V" else value, True))
    result = invoke("compare", session)
    assert_no_traceback(result, allowed=(2,))


# ------------------------------------------------- links planted where rotscope writes its own files


@pytest.mark.parametrize(
    ("where", "command"),
    [
        ("S/.rotscope.lock", "resume"),
        ("S/fake-lexical/.rotscope.lock", "resume"),
        ("S/.session.json.partial", "resume"),
        ("S/fake-lexical/.config.yaml.writing", "resume"),
        ("S/fake-lexical/.rejections.jsonl.writing", "resume"),
        ("S/fake-lexical/report.html", "report"),
        ("S/fake-curve-500/gate-vs-fake-lexical.json", "gate"),
    ],
)
def test_a_link_planted_at_a_file_of_rotscope_leads_no_write_out(
    finished: Path, tmp_path: Path, where: str, command: str
) -> None:
    session, outside = _copy(finished, tmp_path)
    planted = tmp_path / where
    planted.unlink(missing_ok=True)
    planted.symlink_to(outside / "precious.txt")
    if command == "resume":
        _edit(session, lambda data: data.update(planned=False))  # planned again: every file rewritten
        result = invoke("run", "--resume", session)
    elif command == "report":
        result = invoke("report", session / FOLDERS[0])
    else:
        base, cand = session / FOLDERS[0], session / FOLDERS[1]
        result = invoke("gate", "--baseline", base, "--candidate", cand)
    assert_no_traceback(result, allowed=(0, 1, 2, 3))
    assert (outside / "precious.txt").read_text(encoding="utf-8") == "do not touch\n"


# ------------------------------------------------------------------ inside(): the one boundary check

OUTSIDE_PATHS = ["../V", "../V/x", "a/../../V", "/", "/tmp", "..", ".", "a\x00b", "a/" + "../" * 300 + "V"]


@pytest.mark.parametrize("relative", OUTSIDE_PATHS)
def test_inside_refuses_every_path_that_leaves_the_folder(tmp_path: Path, relative: str) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    with pytest.raises(BadInput) as refused:
        inside(folder, folder / relative)
    assert "\n" not in str(refused.value) and "\x00" not in str(refused.value)


def test_inside_follows_links(tmp_path: Path) -> None:
    folder, outside = tmp_path / "run", bystander(tmp_path / "V")
    folder.mkdir()
    (folder / "steps").symlink_to(outside, target_is_directory=True)
    with pytest.raises(BadInput):
        inside(folder, folder / "steps" / "01-L200")
    (folder / "own").mkdir()
    assert inside(folder, folder / "own" / "x") == (folder / "own" / "x").resolve()


# ------------------------------------------------------------------------------ unfinished folders


def _unfinish(run_dir: Path, rows: int, status: str = "pending") -> None:
    """``rows`` of the run's rows put back as a killed run leaves them (or in error)."""
    with sqlite3.connect(run_dir / "run.db") as db:
        chosen = "SELECT rowid FROM items WHERE status = 'ok' ORDER BY rowid LIMIT ?"
        if status == "pending":
            db.execute(
                "UPDATE items SET status = 'pending', response = NULL, outcome = NULL "
                f"WHERE rowid IN ({chosen})",
                (rows,),
            )
        else:
            db.execute(
                f"UPDATE items SET status = 'error', error = 'boom' WHERE rowid IN ({chosen})", (rows,)
            )


@pytest.mark.parametrize("form", ["session", "folders", "json", "markdown", "csv"])
def test_compare_refuses_an_unfinished_folder_naming_its_pending_items(
    finished: Path, tmp_path: Path, form: str
) -> None:
    session, _ = _copy(finished, tmp_path, "model runs")
    _unfinish(session / FOLDERS[1], 9)
    given = [session] if form == "session" else [session / name for name in FOLDERS]
    flags = [] if form in ("session", "folders") else [f"--{form}"]
    result = invoke("compare", *given, *flags)
    assert_no_traceback(result, allowed=(2,))
    assert "fake-curve-500: 3 of 12 items done, 9 pending" in result.stderr
    assert resume_command(session) in result.stderr  # the session resumes, its folder quoted
    assert "'" in resume_command(session)


def test_compare_names_rows_in_error_beside_its_leaderboard(finished: Path, tmp_path: Path) -> None:
    session, _ = _copy(finished, tmp_path)
    _unfinish(session / FOLDERS[1], 2, "error")
    result = invoke("compare", session)
    assert_no_traceback(result, allowed=(0,))
    assert "fake-curve-500: 10 of 12 items done, 2 in error — retry them with" in result.stderr


@pytest.mark.parametrize("role", ["baseline", "candidate"])
def test_gate_on_an_unfinished_run_is_inconclusive_and_names_it(
    finished: Path, tmp_path: Path, role: str
) -> None:
    session, _ = _copy(finished, tmp_path)
    base, cand = session / FOLDERS[0], session / FOLDERS[0 if role == "baseline" else 1]
    if role == "candidate":
        _unfinish(cand, 5)
    else:
        cand = tmp_path / "cand"
        shutil.copytree(base, cand)
        _unfinish(base, 5)
    result = invoke("gate", "--baseline", base, "--candidate", cand, "--json")
    assert_no_traceback(result, allowed=(3,))
    record = json.loads(result.stdout)
    assert record["verdict"] == "INCONCLUSIVE"
    [reason] = [line for line in record["reasons"] if "unfinished" in line]
    assert f"{role} run is unfinished" in reason and "7 of 12 items done, 5 pending" in reason
    assert "rotscope run --resume" in reason


@pytest.mark.parametrize("status", ["pending", "error"])
def test_report_of_an_unfinished_run_is_written_and_marked(
    finished: Path, tmp_path: Path, status: str
) -> None:
    session, _ = _copy(finished, tmp_path, "a session")
    _unfinish(session / FOLDERS[1], 4, status)
    result = invoke("report", session / FOLDERS[1])
    assert_no_traceback(result, allowed=(0,))
    assert (session / FOLDERS[1] / "report.html").is_file()
    said = "4 pending — resume it with" if status == "pending" else "4 in error — retry them with"
    assert said in result.output and resume_command(session) in result.output


def test_a_finished_run_is_not_marked(finished: Path, tmp_path: Path) -> None:
    session, _ = _copy(finished, tmp_path)
    result = invoke("report", session / FOLDERS[0])
    assert_no_traceback(result, allowed=(0,))
    assert "unfinished" not in result.output


# ------------------------------------------------------------------------------------ smaller items


@pytest.mark.parametrize("name", ["run 1", "it's", "a;rm -rf x", "$(x)", "plain"])
def test_the_resume_hint_quotes_the_folder_for_a_shell(name: str) -> None:
    import shlex

    command = resume_command(Path("/tmp") / name, "--max-cost LARGER")
    words = shlex.split(command)
    assert words[:3] == ["rotscope", "run", "--resume"] and words[3] == f"/tmp/{name}"
    assert words[4:] == ["--max-cost", "LARGER"]


@pytest.mark.parametrize("odd", ["\u2028", "\u2029", "\u0085", "\r", "\x0b", "\x0c"])
def test_the_scripted_tokenizer_keeps_every_line_break(odd: str) -> None:
    from rotscope.tokenizers.local import FakeTokenizer

    tokenizer = FakeTokenizer()
    text = f"note 1:{odd}caf\u00e9 done\nnext"
    assert tokenizer.decode(tokenizer.encode(text)) == text
