"""Reasoning items: GSM8K and ARC loaders on files the tests write (JSONL and Parquet), their
one-line errors, and the seeded generator whose answers are recomputed from its worked steps."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest

from rotscope.errors import BadInput
from rotscope.tasks.reasoning.items import generated_items, load_arc, load_gsm8k

GSM8K = [
    {
        "question": "Ada has 3 boxes of 4 pens.\nHow many pens does she have?",
        "answer": "She has 3 * 4 = <<3*4=12>>12 pens.\n#### 12",
    },
    {
        "question": "A farm sells 1,200 eggs and 300 more. How many?",
        "answer": "1200 + 300 = 1500\n#### 1,500",
    },
]
ARC = [
    {
        "id": "Mercury_1",
        "question": "Which gas do plants take in?",
        "choices": {"text": ["oxygen", "carbon dioxide", "helium", "neon"], "label": ["A", "B", "C", "D"]},
        "answerKey": "B",
    },
    {
        "id": "Mercury_2",
        "question": "What melts ice?",
        "choices": {"text": ["heat", "cold", "dark"], "label": ["1", "2", "3"]},
        "answerKey": "1",
    },
]


def _jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("\n".join(json.dumps(record) for record in records) + "\n", encoding="utf-8")
    return path


def test_gsm8k_loader_reads_question_steps_and_final_number(tmp_path: Path) -> None:
    items = load_gsm8k(_jsonl(tmp_path / "gsm8k.jsonl", GSM8K))
    assert [item.answer for item in items] == ["12", "1500"]
    first = items[0]
    assert first.question == "Ada has 3 boxes of 4 pens. How many pens does she have?"
    assert first.steps == ("She has 3 * 4 = 12 pens.",)  # calculator annotation removed
    assert first.kind == "number"
    assert first.item_id != items[1].item_id


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "gsm8k.jsonl:2: not valid JSON"),
        (json.dumps({"question": "Q?", "answer": "no marker"}), "gsm8k.jsonl:2: field 'answer'"),
        (json.dumps({"question": "Q?", "answer": "x #### twelve"}), "gsm8k.jsonl:2: field 'answer'"),
        (json.dumps({"answer": "#### 4"}), "gsm8k.jsonl:2: field 'question'"),
        (json.dumps([1, 2]), "gsm8k.jsonl:2: expected a JSON object"),
    ],
)
def test_gsm8k_bad_line_names_file_line_and_field(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "gsm8k.jsonl"
    path.write_text(json.dumps(GSM8K[0]) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(BadInput, match=re.escape(message)) as caught:
        load_gsm8k(path)
    assert "\n" not in str(caught.value)


def test_missing_file_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="does not exist"):
        load_gsm8k(tmp_path / "absent.jsonl")


def _check_arc(items: list[Any]) -> None:
    assert [item.answer for item in items] == ["B", "1"]
    assert items[0].question.splitlines() == [
        "Which gas do plants take in?",
        "(A) oxygen",
        "(B) carbon dioxide",
        "(C) helium",
        "(D) neon",
    ]
    assert items[0].item_id == "Mercury_1"
    assert all(item.kind == "choice" and item.steps == () for item in items)


def test_arc_loader_reads_jsonl(tmp_path: Path) -> None:
    _check_arc(load_arc(_jsonl(tmp_path / "arc.jsonl", ARC)))


def test_arc_loader_reads_parquet_in_the_hugging_face_layout(tmp_path: Path) -> None:
    pyarrow = pytest.importorskip("pyarrow")
    import pyarrow.parquet as parquet

    path = tmp_path / "arc.parquet"
    parquet.write_table(pyarrow.Table.from_pylist(ARC), path)
    _check_arc(load_arc(path))


def test_arc_bad_answer_key_and_bad_choices_name_the_row(tmp_path: Path) -> None:
    wrong_key = {**ARC[0], "answerKey": "E"}
    with pytest.raises(BadInput, match=re.escape("arc.jsonl:2: field 'answerKey' 'E'")):
        load_arc(_jsonl(tmp_path / "arc.jsonl", [ARC[0], wrong_key]))
    uneven = {**ARC[0], "choices": {"text": ["a", "b"], "label": ["A"]}}
    with pytest.raises(BadInput, match=re.escape("arc.jsonl:1: fields 'choices.text' and 'choices.label'")):
        load_arc(_jsonl(tmp_path / "arc.jsonl", [uneven]))


def test_arc_parquet_bad_row_is_named_by_row_number(tmp_path: Path) -> None:
    pyarrow = pytest.importorskip("pyarrow")
    import pyarrow.parquet as parquet

    path = tmp_path / "arc.parquet"
    parquet.write_table(pyarrow.Table.from_pylist([ARC[0], {**ARC[0], "answerKey": "Z"}]), path)
    with pytest.raises(BadInput, match=re.escape("arc.parquet:2: field 'answerKey'")):
        load_arc(path)


_STEP = re.compile(r"^(\d+) ([-+*/]) (\d+) = (\d+)$")


def test_generated_items_are_seeded_distinct_and_their_steps_compute_the_answer() -> None:
    items = list(itertools.islice(generated_items(7), 200))
    assert items == list(itertools.islice(generated_items(7), 200))
    assert items != list(itertools.islice(generated_items(8), 200))
    assert len({item.question for item in items}) == len(items)
    for item in items:
        assert 2 <= len(item.steps) <= 4
        running = int(re.search(r"has (\d+) ", item.question).group(1))  # type: ignore[union-attr]
        for step in item.steps:
            left, operator, right, result = _STEP.match(step).groups()  # type: ignore[union-attr]
            assert int(left) == running
            value = {"+": int.__add__, "-": int.__sub__, "*": int.__mul__, "/": int.__floordiv__}[operator](
                int(left), int(right)
            )
            if operator == "/":
                assert int(left) % int(right) == 0
            assert value == int(result)
            running = value
        assert item.answer == str(running) and running > 0
