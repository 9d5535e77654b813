"""The import table's reader: columns and values checked one by one, each problem one line naming
the file, the line and the column; places (depth, position, unknown), scores and optional columns
read as documented."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rotscope.errors import BadInput
from rotscope.imports.items import DEFAULT_TASK, UNKNOWN_DEPTH, UNKNOWN_POSITION, planned_row, result_values
from rotscope.imports.table import read_table

HEADER = (
    "item_id,instance_id,length_tokens,depth,position,correct,model,task,tokenizer,prompt_tokens,cost_usd\n"
)


def _csv(tmp_path: Path, *rows: str, header: str = HEADER) -> Path:
    path = tmp_path / "results.csv"
    path.write_text(header + "".join(row + "\n" for row in rows), encoding="utf-8")
    return path


def _refused(path: Path) -> str:
    with pytest.raises(BadInput) as refused:
        read_table(path, path.name)
    message = str(refused.value)
    assert "\n" not in message
    return message


def test_every_documented_column_is_read(tmp_path: Path) -> None:
    table = read_table(
        _csv(tmp_path, "q1,d1,4096,0.25,,1,m,qa,tok-a,4100,0.002", "q1,d1,512,,end,0,m,qa,tok-a,,")
    )
    first, second = table.items
    assert (first.item_id, first.instance_id, first.length, first.task, first.model) == (
        "q1",
        "d1",
        4096,
        "qa",
        "m",
    )
    assert first.position is not None and first.position.fraction == 0.25 and first.outcome == "correct"
    assert (first.prompt_tokens, first.cost_usd, first.score) == (4100, 0.002, None)  # 0/1: no partial credit
    assert second.position is not None and second.position.name == "end" and second.outcome == "incorrect"
    assert table.tokenizer == "tok-a" and table.ignored_columns == []


def test_an_empty_place_is_unknown_and_stored_so(tmp_path: Path) -> None:
    (item,) = read_table(_csv(tmp_path, "q1,d1,4096,,unknown,1,,,,,")).items
    assert item.position is None and item.task == DEFAULT_TASK
    row = planned_row(item, 0, "run", "m")
    assert (row["depth"], row["position"]) == (UNKNOWN_DEPTH, UNKNOWN_POSITION)
    assert row["spans"] == "[]" and row["question"] == "" and row["prompt_tokens"] == 4096


def test_an_offset_and_a_fraction_given_as_position_are_positions(tmp_path: Path) -> None:
    offset, fraction = read_table(_csv(tmp_path, "q1,d1,4096,,@100,1,,,,,", "q1,d1,8192,,0.5,1,,,,,")).items
    assert offset.position is not None and offset.position.offset_tokens == 100
    assert fraction.position is not None and fraction.position.fraction == 0.5


def test_a_score_between_0_and_1_is_partial_credit_and_1_is_correct(tmp_path: Path) -> None:
    low, full = read_table(_csv(tmp_path, "q1,d1,4096,0.5,,0.4,,,,,", "q2,d2,4096,0.5,,1,,,,,")).items
    assert (low.outcome, low.score, full.outcome, full.score) == ("incorrect", 0.4, "correct", 1.0)
    assert json.loads(result_values(low)["claim_report"])["partial"] == {"score": 0.4}


def test_columns_nobody_reads_are_listed(tmp_path: Path) -> None:
    header = "item_id,instance_id,length_tokens,depth,correct,reply\n"
    table = read_table(_csv(tmp_path, "q1,d1,100,0,1,hello", header=header))
    assert table.ignored_columns == ["reply"]


def test_the_same_question_at_two_depths_of_one_length_is_two_conditions(tmp_path: Path) -> None:
    table = read_table(_csv(tmp_path, "q1,d1,4096,0,,1,,,,,", "q1,d1,4096,1,,0,,,,,"))
    assert len(table.items) == 2 and len({item.condition for item in table.items}) == 2


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ("q1,d1,0,0.5,,1,,,,,", "line 2, column length_tokens: '0' is not a whole number >= 1"),
        ("q1,d1,4096.5,0.5,,1,,,,,", "line 2, column length_tokens: '4096.5' is not a whole number >= 1"),
        ("q1,d1,4096,-0.1,,1,,,,,", "line 2, column depth: '-0.1' is outside [0, 1]"),
        ("q1,d1,4096,,middle,1,,,,,", "line 2, column position: unknown position 'middle'"),
        ("q1,d1,4096,0.5,,-1,,,,,", "line 2, column correct: '-1' is outside [0, 1]"),
        ("q1,d1,4096,0.5,,nan,,,,,", "line 2, column correct: 'nan' is not a finite number"),
        ("q1,d1,4096,0.5,,1,,,,,-2", "line 2, column cost_usd: '-2' is negative"),
        ("q1,d1,4096,0.5,,1,,,,-5,", "line 2, column prompt_tokens: '-5' is not a whole number >= 0"),
        ("q1,d1,4096,0.5,,1", "line 2: 6 values for 11 columns"),
        ("q1,d1,4096,0.5,,,,,,,", "line 2, column correct: empty"),
    ],
)
def test_a_bad_value_is_named_by_line_and_column(tmp_path: Path, row: str, expected: str) -> None:
    message = _refused(_csv(tmp_path, row))
    assert message.startswith(f"results.csv: {expected}"), message


def test_two_models_or_two_tokenizers_in_one_file_are_refused(tmp_path: Path) -> None:
    models = _refused(_csv(tmp_path, "q1,d1,4096,0.5,,1,a,,,,", "q2,d2,4096,0.5,,1,b,,,,"))
    assert models.startswith("results.csv: line 3, column model: 'b', where line 2 has 'a'")
    tokenizers = _refused(_csv(tmp_path, "q1,d1,4096,0.5,,1,,,x,,", "q2,d2,4096,0.5,,1,,,y,,"))
    assert tokenizers == "results.csv: line 3, column tokenizer: 'y', where line 2 has 'x'"


def test_a_header_naming_a_column_twice_or_no_rows_is_refused(tmp_path: Path) -> None:
    twice = "item_id,instance_id,length_tokens,depth,correct,depth\n"
    assert _refused(_csv(tmp_path, header=twice)) == "results.csv: line 1, column depth: named twice"
    assert _refused(_csv(tmp_path)) == "results.csv: no rows"
    (tmp_path / "empty.csv").write_text("", encoding="utf-8")
    assert _refused(tmp_path / "empty.csv") == "empty.csv: empty (a CSV file needs a header line)"


def test_a_file_that_is_no_table_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "results.txt").write_text("x", encoding="utf-8")
    assert _refused(tmp_path / "results.txt") == "results.txt: not a .csv, .jsonl or Inspect .eval file"
    (tmp_path / "latin.csv").write_bytes(HEADER.encode() + b"q\xe9,d1,1,0,,1,,,,,\n")
    assert _refused(tmp_path / "latin.csv").startswith("latin.csv: line 2: not UTF-8 text")


def test_jsonl_values_keep_their_types_and_a_text_number_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    good = {"item_id": 7, "instance_id": "d1", "length_tokens": 256, "depth": 1, "correct": False}
    path.write_text(
        json.dumps(good) + "\n\n" + json.dumps({**good, "length_tokens": True}) + "\n", encoding="utf-8"
    )
    assert _refused(path) == "results.jsonl: line 3, column length_tokens: true is not a number"
    path.write_text(json.dumps(good) + "\n" + json.dumps([1, 2]) + "\n", encoding="utf-8")
    assert _refused(path) == "results.jsonl: line 2: not a JSON object"
    path.write_text(json.dumps(good) + "\n", encoding="utf-8")
    (item,) = read_table(path).items
    assert (item.item_id, item.outcome) == ("7", "incorrect")
