"""Items of the ``reasoning`` family: GSM8K and ARC-Challenge from local files, and a seeded
generator of multi-step arithmetic word problems that no model has seen.

Nothing is downloaded: the files are the user's own copies (GSM8K as JSONL with ``question`` and
``answer`` ending in ``#### <number>``; ARC as JSONL or Parquet in the Hugging Face layout with
``question``, ``choices.text``, ``choices.label`` and ``answerKey``).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rotscope._util.jsonl import read_jsonl
from rotscope.errors import BadInput
from rotscope.types import AnswerKind

_FINAL = re.compile(r"^-?\d+(?:\.\d+)?$")
_CALCULATOR = re.compile(r"<<[^>]*>>")


@dataclass(frozen=True)
class ReasoningItem:
    """One problem: its text (options included for multiple choice), worked solution lines (none
    for ARC) and the answer (an integer as text, or the correct option's label)."""

    item_id: str
    question: str
    steps: tuple[str, ...]
    answer: str
    kind: AnswerKind


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) of a JSONL file, or of a Parquet file's rows (numbered from 1)."""
    if not path.is_file():
        raise BadInput(f"reasoning.path: {path} does not exist")
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as parquet
        except ImportError:
            raise BadInput(
                f"{path}: reading Parquet needs pyarrow (pip install 'rotscope[parquet]')"
            ) from None
        try:
            rows = parquet.read_table(path).to_pylist()
        except Exception as error:  # pyarrow raises several unrelated types for a broken file
            raise BadInput(f"{path}: not a readable Parquet file ({type(error).__name__})") from None
        yield from enumerate(rows, start=1)
        return
    yield from read_jsonl(path)


def _text(record: dict[str, Any], field: str, where: str) -> str:
    value = record.get(field)
    if not isinstance(value, str) or not value.strip():
        raise BadInput(f"{where}: field {field!r} is missing or not a non-empty string")
    return value.strip()


def load_gsm8k(path: Path) -> list[ReasoningItem]:
    """GSM8K-shaped JSONL: the worked solution is the answer's text before ``####``, with the
    calculator annotations (``<<3*4=12>>``) removed; the answer is the number after it."""
    items = []
    for number, record in _records(path):
        where = f"{path}:{number}"
        question = _text(record, "question", where)
        solution, marker, final = _text(record, "answer", where).rpartition("####")
        final = final.strip().replace(",", "")
        if not marker or not _FINAL.match(final):
            raise BadInput(f"{where}: field 'answer' must end with '#### <number>', got {final[-40:]!r}")
        steps = tuple(line.strip() for line in _CALCULATOR.sub("", solution).splitlines() if line.strip())
        items.append(ReasoningItem(f"gsm8k-{number}", " ".join(question.split()), steps, final, "number"))
    if not items:
        raise BadInput(f"{path}: no items")
    return items


def _choices(record: dict[str, Any], where: str) -> list[tuple[str, str]]:
    choices = record.get("choices")
    if not isinstance(choices, dict):
        raise BadInput(f"{where}: field 'choices' must hold 'text' and 'label' lists")
    texts, labels = choices.get("text"), choices.get("label")
    if not isinstance(texts, list) or not isinstance(labels, list) or len(texts) != len(labels) or not texts:
        raise BadInput(f"{where}: fields 'choices.text' and 'choices.label' must be lists of equal length")
    pairs = [
        (str(label).strip(), " ".join(str(text).split())) for label, text in zip(labels, texts, strict=True)
    ]
    if len({label for label, _ in pairs}) != len(pairs) or not all(label for label, _ in pairs):
        raise BadInput(f"{where}: field 'choices.label' must hold distinct non-empty labels")
    return pairs


def load_arc(path: Path) -> list[ReasoningItem]:
    """ARC-Challenge-shaped JSONL or Parquet: the question with its options as ``(A) text`` lines."""
    items = []
    for number, record in _records(path):
        where = f"{path}:{number}"
        question = " ".join(_text(record, "question", where).split())
        pairs = _choices(record, where)
        answer = _text(record, "answerKey", where)
        if answer not in {label for label, _ in pairs}:
            raise BadInput(f"{where}: field 'answerKey' {answer!r} is not one of the choice labels")
        options = "\n".join(f"({label}) {text}" for label, text in pairs)
        item_id = str(record.get("id") or f"arc-{number}")
        items.append(ReasoningItem(item_id, f"{question}\n{options}", (), answer, "choice"))
    if not items:
        raise BadInput(f"{path}: no items")
    return items


_ONSETS = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z"]
_VOWELS = ["a", "e", "i", "o", "u"]
_MULTIPLIERS = {2: "doubles", 3: "triples"}
_MAX_VALUE = 400


def _word(rng: random.Random) -> str:
    """An invented two-syllable word (``tavo``, ``mezi``): no model has facts about it."""
    return "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(2))


def _step(rng: random.Random, value: int, name: str) -> tuple[str, str, int]:
    """One operation on the running count: (sentence, worked line, new count)."""
    options = ["add", "add"]
    if value > 2:
        options.append("subtract")
    if value * 2 <= _MAX_VALUE:
        options.append("multiply")
    if any(value % n == 0 for n in range(2, 6)):
        options.append("divide")
    operation = rng.choice(options)
    if operation == "add":
        amount = rng.randint(2, 40)
        return f"{name} finds {amount} more.", f"{value} + {amount} = {value + amount}", value + amount
    if operation == "subtract":
        amount = rng.randint(1, value - 1)
        return f"{name} gives {amount} away.", f"{value} - {amount} = {value - amount}", value - amount
    if operation == "multiply":
        factor = rng.choice([n for n in _MULTIPLIERS if value * n <= _MAX_VALUE])
        return f"The pile {_MULTIPLIERS[factor]}.", f"{value} * {factor} = {value * factor}", value * factor
    parts = rng.choice([n for n in range(2, 6) if value % n == 0])
    return (
        f"{name} splits them into {parts} equal heaps and keeps one.",
        f"{value} / {parts} = {value // parts}",
        value // parts,
    )


def generate_item(rng: random.Random, number: int) -> ReasoningItem:
    """A word problem of 2-4 steps about an invented person and invented things, with its worked
    solution (one line per step) and an integer answer."""
    name, things = _word(rng).capitalize(), _word(rng) + "s"
    value = rng.randint(5, 60)
    sentences = [f"{name} has {value} {things}."]
    steps = []
    for _ in range(rng.randint(2, 4)):
        sentence, line, value = _step(rng, value, name)
        sentences.append(sentence)
        steps.append(line)
    sentences.append(f"How many {things} does {name} have now?")
    return ReasoningItem(f"gen-{number:04d}", " ".join(sentences), tuple(steps), str(value), "number")


def generated_items(seed: int) -> Iterator[ReasoningItem]:
    """Endless distinct generated problems, the same for the same seed on every machine."""
    rng = random.Random(f"reasoning-items:{seed}")
    seen: set[str] = set()
    number = 0
    while True:
        number += 1
        item = generate_item(rng, number)
        if item.question not in seen:
            seen.add(item.question)
            yield item
