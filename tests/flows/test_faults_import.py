"""Issue 52's fault battery for ``rotscope import`` and the JSON every command prints: hostile numbers
in every numeric column, hostile strings, special and huge files (small caps set by monkeypatch, not
gigabytes), deep JSON, bad server addresses, kills at several points of an import (the same import
run again finishes and equals an uninterrupted one), and ``--json`` output of runs holding extreme
numbers (parsed with ``Infinity``/``NaN`` refused). Every case: no traceback, one line and exit 2
where refused, nothing outside the output folder touched, no folder left by a refused import."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_helpers import assert_bad_input, invoke
from tests.support.fault_battery import assert_no_traceback, bystander, tree_digest

pytestmark = pytest.mark.fault_battery

ROTSCOPE = Path(sys.executable).with_name("rotscope")
COLUMNS = (
    "item_id", "instance_id", "length_tokens", "depth", "correct", "model", "task", "prompt_tokens",
    "cost_usd", "trial", "context_window", "answer_logprob", "answer_tokens", "first_token_prob",
    "absent_logprob",
)  # fmt: skip


def _row(number: int, length: int = 1000, **values: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "item_id": f"q{number}", "instance_id": f"d{number // 2}", "length_tokens": length,
        "depth": 0.5, "correct": number % 2, "model": "model-a", "task": "t", "prompt_tokens": length,
        "cost_usd": 0.001, "trial": 0, "context_window": 128000, "answer_logprob": -0.5,
        "answer_tokens": 2, "first_token_prob": 0.7, "absent_logprob": -3.0,
    }  # fmt: skip
    row.update(values)
    return row


def _csv_cell(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\r\n') else text


def _csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    lines = [",".join(COLUMNS)] + [",".join(_csv_cell(row[name]) for name in COLUMNS) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _refused(tmp_path: Path, source: Path, *fragments: str) -> str:
    """The import of ``source`` is one line naming ``fragments``, exit 2, no traceback; no output
    folder appears and the bystander folder is untouched."""
    keep = bystander(tmp_path / "bystander")
    before = tree_digest(keep)
    out = tmp_path / "out"
    result = invoke("import", source, "--out", out)
    assert_no_traceback(result)
    line = assert_bad_input(result, *fragments)
    assert not out.exists()
    assert tree_digest(keep) == before
    return line


# --- hostile numbers, in every numeric column, in both formats -------------------------------

HOSTILE_NUMBERS = {
    "length 1e20": ("length_tokens", 1e20),
    "length 2**70": ("length_tokens", 2**70),
    "length 10**400": ("length_tokens", 10**400),
    "length 1e400 as text": ("length_tokens", "1e400"),
    "length nan as text": ("length_tokens", "nan"),
    "length zero": ("length_tokens", 0),
    "prompt_tokens 1e19": ("prompt_tokens", 1e19),
    "prompt_tokens -1": ("prompt_tokens", -1),
    "cost 1e308": ("cost_usd", 1e308),
    "cost Infinity as text": ("cost_usd", "Infinity"),
    "cost negative": ("cost_usd", -5),
    "trial 2**64": ("trial", 2**64),
    "context_window 1e30": ("context_window", 1e30),
    "answer_logprob -1e308": ("answer_logprob", -1e308),
    "answer_logprob -inf as text": ("answer_logprob", "-inf"),
    "absent_logprob -1e300": ("absent_logprob", -1e300),
    "answer_tokens 1e20": ("answer_tokens", 1e20),
    "first_token_prob 1e308": ("first_token_prob", 1e308),
    "depth 1e308": ("depth", 1e308),
    "correct 1e308": ("correct", 1e308),
}


@pytest.mark.parametrize("name", list(HOSTILE_NUMBERS))
def test_a_hostile_number_in_a_jsonl_file_is_one_line_naming_line_and_column(
    name: str, tmp_path: Path
) -> None:
    column, value = HOSTILE_NUMBERS[name]
    source = _jsonl(tmp_path / "r.jsonl", [_row(0), _row(1), _row(2, **{column: value})])
    _refused(tmp_path, source, "r.jsonl", "line 3", f"column {column}")


CSV_NUMBERS = {
    "length 1e20": ("length_tokens", "1e20"),
    "prompt_tokens 1e19": ("prompt_tokens", "1e19"),
    "cost 1e308": ("cost_usd", "1e308"),
    "cost inf": ("cost_usd", "inf"),
    "trial 99999999999999999999999": ("trial", "99999999999999999999999"),
    "answer_logprob -1e308": ("answer_logprob", "-1e308"),
}


@pytest.mark.parametrize("name", list(CSV_NUMBERS))
def test_a_hostile_number_in_a_csv_file_is_one_line_naming_it(name: str, tmp_path: Path) -> None:
    column, value = CSV_NUMBERS[name]
    source = _csv(tmp_path / "r.csv", [_row(0), _row(1), _row(2, **{column: value})])
    _refused(tmp_path, source, "r.csv", "line 4", f"column {column}")


def test_a_huge_position_offset_is_refused(tmp_path: Path) -> None:
    source = _jsonl(tmp_path / "r.jsonl", [_row(0), _row(1, depth=None, position="@" + "9" * 30)])
    _refused(tmp_path, source, "line 2", "column position")


# --- hostile strings ----------------------------------------------------------------------------

HOSTILE_TEXT = {
    "ESC in the model": ("model", "model-\x1b[2J"),
    "NUL in the item": ("item_id", "q\x00x"),
    "C1 CSI in the task": ("task", "t\x9b31m"),
    "DEL in the instance": ("instance_id", "d\x7f"),
    "newline in the model": ("model", "a\nb"),
    "lone surrogate in the item": ("item_id", "q\ud800"),
    "an item id of 5,000 characters": ("item_id", "q" * 5000),
}


@pytest.mark.parametrize("name", list(HOSTILE_TEXT))
def test_a_hostile_text_value_is_refused_naming_its_column(name: str, tmp_path: Path) -> None:
    column, value = HOSTILE_TEXT[name]
    source = _jsonl(tmp_path / "r.jsonl", [_row(0), _row(1, **{column: value})])
    _refused(tmp_path, source, "r.jsonl", "line 2", f"column {column}")


def test_a_csv_value_over_the_field_limit_names_its_line_and_column(tmp_path: Path) -> None:
    source = _csv(tmp_path / "r.csv", [_row(0), _row(1, task="x" * 140_000)])
    _refused(tmp_path, source, "r.csv", "line 3", "column task", "131,072 characters")


def test_a_nul_byte_in_a_csv_file_is_one_line(tmp_path: Path) -> None:
    source = _csv(tmp_path / "r.csv", [_row(0), _row(1, model="a\x00b")])
    _refused(tmp_path, source, "r.csv", "line 3")


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085", "\x0c"])
def test_a_line_separator_inside_a_jsonl_string_imports(separator: str, tmp_path: Path) -> None:
    """Lines end at \\n only: a separator ``str.splitlines`` would cut at is text in a string (an
    ignored column, and the model's name where it is no control character)."""
    source = tmp_path / "r.jsonl"
    model = f"model{separator}a" if separator in "\u2028\u2029" else "model-a"
    rows = [_row(n, model=model, notes=f"x{separator}y") for n in range(2)]
    source.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    result = invoke("import", source, "--out", tmp_path / "out")
    assert_no_traceback(result, allowed=(0,))
    assert "2 rows imported" in result.output
    shown = invoke("show", tmp_path / "out", "--json")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["model"] == model


def test_a_jsonl_line_over_the_line_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("rotscope.imports.source.MAX_LINE_BYTES", 400)
    source = _jsonl(tmp_path / "r.jsonl", [_row(0), _row(1, task="x" * 500)])
    _refused(tmp_path, source, "line 2", "longer than 400 bytes")


def test_a_file_not_utf8_names_its_line(tmp_path: Path) -> None:
    source = tmp_path / "r.jsonl"
    source.write_bytes(json.dumps(_row(0)).encode() + b"\n" + json.dumps(_row(1)).encode()[:-2] + b"\xff}\n")
    _refused(tmp_path, source, "line 2", "not UTF-8")


# --- special and huge files ---------------------------------------------------------------------


def _special(kind: str, tmp_path: Path) -> Path:
    path = tmp_path / "special.csv"
    if kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "link to a folder":
        (tmp_path / "folder").mkdir()
        path.symlink_to(tmp_path / "folder")
    elif kind == "dangling link":
        path.symlink_to(tmp_path / "nowhere.csv")
    elif kind == "empty":
        path.write_text("", encoding="utf-8")
    elif kind == "unreadable":
        path.write_text("x", encoding="utf-8")
        path.chmod(0)
    return path


SPECIAL = {
    "folder": "a folder",
    "fifo": "a FIFO",
    "link to /dev/zero": "a device",
    "link to a folder": "a folder",
    "dangling link": "no such file",
    "empty": "empty",
}


@pytest.mark.parametrize("kind", list(SPECIAL))
def test_a_special_file_is_refused_unread(kind: str, tmp_path: Path) -> None:
    source = _special(kind, tmp_path)
    started = time.monotonic()
    _refused(tmp_path, source, "special.csv", SPECIAL[kind])
    assert time.monotonic() - started < 60  # /dev/zero or a FIFO is never read, never waited on


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("rotscope.imports.source.MAX_FILE_BYTES", 1000)
    source = _jsonl(tmp_path / "r.jsonl", [_row(n) for n in range(20)])
    _refused(tmp_path, source, "r.jsonl", "over the 1,000 bytes")


def test_a_file_over_the_row_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("rotscope.imports.table.MAX_ROWS", 3)
    source = _csv(tmp_path / "r.csv", [_row(n) for n in range(5)])
    _refused(tmp_path, source, "r.csv", "line 5", "over 3 rows")


# --- deep and odd JSON --------------------------------------------------------------------------

DEEP = {
    "100,000 nested [": "[" * 100_000,
    "100,000 nested {": '{"a":' * 100_000,
    "an integer of 5,000 digits": '{"item_id": ' + "9" * 5000 + "}",
    "a list for a value": json.dumps(_row(1, model=["a"])),
    "an object for a value": json.dumps(_row(1, length_tokens={"n": 1})),
}


@pytest.mark.parametrize("name", list(DEEP))
def test_deep_or_odd_json_is_one_line(name: str, tmp_path: Path) -> None:
    source = tmp_path / "r.jsonl"
    source.write_text(json.dumps(_row(0)) + "\n" + DEEP[name] + "\n", encoding="utf-8")
    _refused(tmp_path, source, "r.jsonl", "line 2")


# --- server addresses ---------------------------------------------------------------------------

BAD_URLS = {
    "newline": ("openai/m", "http://127.0.0.1:8000\n/v1"),
    "NUL": ("openai/m", "http://127.0.0.1\x00:8000/v1"),
    "ESC": ("openai/m", "http://127.0.0.1:8000/v1\x1b[2J"),
    "a space": ("openai/m", "http://127.0.0.1 :8000/v1"),
    "ftp": ("openai/m", "ftp://127.0.0.1/v1"),
    "no host": ("openai/m", "http:///v1"),
    "port out of range": ("openai/m", "http://127.0.0.1:99999/v1"),
    "a tab in a replica": ("serve/m", "http://127.0.0.1:8000,http://127.0.0.1\t:8001"),
}


@pytest.mark.parametrize("name", list(BAD_URLS))
def test_a_bad_base_url_is_one_line_before_anything(name: str, tmp_path: Path) -> None:
    model, url = BAD_URLS[name]
    out = tmp_path / "run"
    result = invoke("run", "--model", model, "--base-url", url, "--out", out)
    assert_no_traceback(result)
    assert_bad_input(result, "base_url")
    assert not out.exists()


def test_a_bad_serve_base_url_in_an_experiment_file_is_one_line(tmp_path: Path) -> None:
    experiment = tmp_path / "e.yaml"
    experiment.write_text(
        'name: e\nmodel: serve/m\nserve:\n  base_url: "http://127.0.0.1:8000,http://h\\u0007:1"\n',
        encoding="utf-8",
    )
    out = tmp_path / "run"
    result = invoke("run", experiment, "--out", out)
    assert_no_traceback(result)
    assert_bad_input(result, "base_url", "U+0007")
    assert not out.exists()


# --- kills at several points: the same import then finishes, equal to an uninterrupted one ----

QUESTIONS = 2000


def _big(path: Path, models: tuple[str, ...] = ("model-a",)) -> Path:
    rows = [
        _row(number, length, model=model, correct=(number * 7 + length) % 3 == 0)
        for model in models
        for number in range(QUESTIONS)
        for length in (1000, 8000)
    ]
    return _csv(path, rows)


def _contents(folder: Path) -> tuple[list[Any], list[Any]]:
    """A run folder's item rows (but when each was written) and metadata, as a reader gets them."""
    connection = sqlite3.connect(f"file:{folder / 'run.db'}?mode=ro", uri=True)
    try:
        cursor = connection.execute("SELECT * FROM items ORDER BY item_id")
        names = [column[0] for column in cursor.description]
        kept = [n for n, name in enumerate(names) if name not in ("created_at", "finished_at")]
        items = [tuple(row[n] for n in kept) for row in cursor.fetchall()]
        meta = connection.execute("SELECT * FROM meta ORDER BY key").fetchall()
    finally:
        connection.close()
    return items, meta


def _import_killed_when(source: Path, out: Path, appears: Callable[[], bool], *extra: str) -> None:
    """Run the import in a process of its own and SIGKILL it as soon as ``appears()`` (polled every
    half millisecond); an import that finishes first is no failure of the case."""
    process = subprocess.Popen(
        [str(ROTSCOPE), "import", str(source), "--out", str(out), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while process.poll() is None and not appears() and time.monotonic() < deadline:
            time.sleep(0.0005)
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait()


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each source imported uninterrupted, in folders named as the killed ones are."""
    root = tmp_path_factory.mktemp("reference")
    one = _big(root / "one.csv")
    two = _big(root / "two.csv", ("model-a", "model-b"))
    assert invoke("import", one, "--out", root / "ref" / "run").exit_code == 0
    result = invoke("import", two, "--out", root / "ref" / "session", "--model-column", "model")
    assert result.exit_code == 0, result.output
    return {"one": one, "two": two, "run": root / "ref" / "run", "session": root / "ref" / "session"}


KILL_POINTS: dict[str, Callable[[Path], bool]] = {
    "at the lock": lambda out: (out / ".rotscope.lock").exists(),
    "at the store's temporary name": lambda out: (out / ".run.db.creating").exists(),
    "at the config note": lambda out: (out / "config.yaml").exists(),
    "at the rename": lambda out: (out / "run.db").exists(),
}


@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_an_import_killed_then_run_again_equals_an_uninterrupted_one(
    point: str, reference: dict[str, Path], tmp_path: Path
) -> None:
    keep = bystander(tmp_path / "bystander")
    before = tree_digest(keep)
    out = tmp_path / "run"
    _import_killed_when(reference["one"], out, lambda: KILL_POINTS[point](out))
    again = invoke("import", reference["one"], "--out", out)
    assert_no_traceback(again, allowed=(0,))
    assert _contents(out) == _contents(reference["run"])
    assert not (out / ".run.db.creating").exists()
    assert tree_digest(keep) == before


SESSION_POINTS: dict[str, Callable[[Path], bool]] = {
    "in the first model's creation": lambda out: (out / "model-a" / ".run.db.creating").exists(),
    "after the first model's folder": lambda out: (out / "model-a" / "run.db").exists(),
    "in the second model's creation": lambda out: (out / "model-b" / ".run.db.creating").exists(),
    "before the session record": lambda out: (out / "model-b" / "run.db").exists(),
}


@pytest.mark.parametrize("point", list(SESSION_POINTS))
def test_a_two_model_import_killed_then_run_again_equals_an_uninterrupted_one(
    point: str, reference: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "session"
    _import_killed_when(reference["two"], out, lambda: SESSION_POINTS[point](out), "--model-column", "model")
    again = invoke("import", reference["two"], "--out", out, "--model-column", "model")
    assert_no_traceback(again, allowed=(0,))
    for model in ("model-a", "model-b"):
        assert _contents(out / model) == _contents(reference["session"] / model)
    assert (out / "session.json").read_bytes() == (reference["session"] / "session.json").read_bytes()


def test_a_cut_import_of_another_file_is_finished_only_by_a_fresh_store(tmp_path: Path) -> None:
    """What a cut creation left is no run: a different import into it is not refused either."""
    out = tmp_path / "run"
    out.mkdir()
    (out / ".run.db.creating").write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    (out / "config.yaml").write_text("# a note\n", encoding="utf-8")
    result = invoke("import", _csv(tmp_path / "r.csv", [_row(0), _row(1)]), "--out", out)
    assert_no_traceback(result, allowed=(0,))
    assert sorted(path.name for path in out.iterdir()) == [".rotscope.lock", "config.yaml", "run.db"]


def test_an_import_into_a_folder_holding_another_file_is_refused_and_leaves_it(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "precious.txt").write_text("mine\n", encoding="utf-8")
    (out / ".run.db.creating").write_bytes(b"")
    before = tree_digest(out)
    result = invoke("import", _csv(tmp_path / "r.csv", [_row(0), _row(1)]), "--out", out)
    assert_bad_input(result, "not empty")
    assert tree_digest(out) == before


def test_a_model_named_like_a_path_stays_inside_the_session(tmp_path: Path) -> None:
    keep = bystander(tmp_path / "evil")
    before = tree_digest(keep)
    source = _csv(tmp_path / "r.csv", [_row(0, model="../evil"), _row(1, model="/tmp/evil2"), _row(2)])
    out = tmp_path / "session" / "out"
    result = invoke("import", source, "--out", out, "--model-column", "model")
    assert_no_traceback(result)
    assert tree_digest(keep) == before
    assert not Path("/tmp/evil2").exists() or not (Path("/tmp/evil2") / "run.db").exists()
    for path in (tmp_path / "session").rglob("run.db"):
        assert out in path.parents


# --- JSON output of runs holding extreme numbers ------------------------------------------------


def _strict_json(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise AssertionError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def extreme(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An imported run at the numbers' limits, then given non-finite costs and log-probabilities in
    its store (as an older rotscope or a hand edit may leave them)."""
    root = tmp_path_factory.mktemp("extreme")
    rows = [
        _row(n, length, cost_usd=1_000_000, answer_logprob=-1_000_000, prompt_tokens=10**9)
        for n in range(40)
        for length in (1000, 10**9)
    ]
    result = invoke("import", _csv(root / "r.csv", rows), "--out", root / "run")
    assert result.exit_code == 0, result.output
    connection = sqlite3.connect(root / "run" / "run.db")
    with connection:
        connection.execute(
            "UPDATE items SET cost = 1e999 WHERE item_id IN (SELECT item_id FROM items LIMIT 3)"
        )
        connection.execute("UPDATE items SET answer_logprob = -1e999 WHERE rowid % 5 = 0")
        connection.execute("UPDATE items SET first_token_prob = 1e999 * 0 WHERE rowid % 7 = 0")
    connection.close()
    return root / "run"


@pytest.mark.parametrize(
    "args",
    [
        ["show", "{run}", "--json"],
        ["show", "{run}", "--json", "--score", "likelihood"],
        ["export", "{run}", "--format", "jsonl"],
        ["compare", "{run}", "{run}", "--json"],
        ["gate", "--baseline", "{run}", "--candidate", "{run}", "--json", "--output", "{tmp}/gate.json"],
    ],
    ids=["show", "show likelihood", "export jsonl", "compare", "gate"],
)
def test_json_output_of_a_run_with_extreme_numbers_is_valid_json(
    args: list[str], extreme: Path, tmp_path: Path
) -> None:
    result = invoke(*[arg.format(run=extreme, tmp=tmp_path) for arg in args])
    assert_no_traceback(result, allowed=(0, 1, 2))
    if result.exit_code != 0:
        return  # refused in one line: no JSON to check
    text = result.stdout
    if args[0] == "export":
        for line in text.splitlines():
            _strict_json(line)
    else:
        _strict_json(text)
    assert "Infinity" not in text and "NaN" not in text
