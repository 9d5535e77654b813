"""Reading a file of per-item results (CSV with a header, or JSON Lines) into ``ImportedItem``s,
checked value by value: anything wrong is one ``BadInput`` line naming the file, the line and the
column (docs/commands.md, ``rotscope import``, has the column table).

Required: ``item_id``, ``instance_id``, ``length_tokens`` (the condition's nominal length),
``depth`` (0-1, kept exact) or ``position``, and ``correct`` (0/1, ``true``/``false`` in any case, or a
score in [0, 1]); optional: ``model``, ``task``, ``tokenizer``, ``prompt_tokens`` (the item's own
count), ``cost_usd``, ``trial``, ``unit``, ``context_window``, ``control``, and the gold answer's
likelihood as ``rotscope export`` writes it (``LIKELIHOOD_COLUMNS``). Other columns are ignored (and listed
in the folder's metadata). ``bin_edges`` (``--bin-lengths``) bins lengths that vary per item;
``model_column`` (``--model-column``) reads several models' results from one file.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rotscope.errors import BadInput
from rotscope.imports.export_rows import IMPORT_NAMES, converted, is_export
from rotscope.imports.items import DEFAULT_TASK, UNKNOWN_POSITION, ImportedItem
from rotscope.imports.source import open_regular, text_lines
from rotscope.position import Position

REQUIRED = ("item_id", "instance_id", "length_tokens", "correct")
"""Columns every file has (with ``depth`` or ``position``: ``PLACES``)."""
PLACES = ("depth", "position")
LIKELIHOOD_COLUMNS = ("answer_logprob", "answer_tokens", "first_token_prob", "absent_logprob")
"""The answer's log-probability (natural log, at most 0), its token count, its first token's
probability and the evidence-absent control's log-probability: ``rotscope export``'s columns,
so an export's likelihoods import as they were."""
OPTIONAL = (
    "model", "task", "tokenizer", "prompt_tokens", "cost_usd", "trial", "unit", "context_window", "control",
    "haystack_variant",
    *LIKELIHOOD_COLUMNS,
)  # fmt: skip
RUN_ONLY_POSITIONS = ("absent", "evidence-only")
"""The positions a run stores for an evidence-absent control and an evidence-only prompt
(``plan.workitems.CONTROL_POSITION``, ``types.EVIDENCE_ONLY_POSITION``): a run's own export
imports with them."""
UNITS = ("tokens", "characters", "words")
"""What a file's lengths count (``unit``; tokens unless it says)."""
BOOLEANS = {"true": 1.0, "false": 0.0}
"""``correct`` as text, in any case (``True``, ``FALSE``): what CSV writers put for booleans."""
COLUMNS = (*REQUIRED, *PLACES, *OPTIONAL)
MAX_ROWS = 2_000_000
"""The most rows one file may hold: every row is checked before the first is written, so they are
held in memory until then."""
MAX_COUNT = 10**9
"""The largest count a file may give (``length_tokens``, ``prompt_tokens``, ``context_window``,
``answer_tokens``, ``trial``): a billion tokens is far past any context window, and a larger number
could only be a mistake (or overflow the store's 64-bit integers)."""
MAX_COST_USD = 1_000_000.0
"""The largest ``cost_usd`` of one item."""
MIN_LOGPROB = -1_000_000.0
"""The smallest log-probability (``answer_logprob``, ``absent_logprob``) a file may give."""
MAX_TEXT_CHARS = 1024
"""The longest text value (an id, a model, task, tokenizer or unit name)."""
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
"""What a text value may not hold: control characters (tab and newline too) and lone surrogates."""
FORMATS = {".csv": "csv", ".jsonl": "jsonl"}
"""The table formats by file suffix (an Inspect log, ``.eval``, is read by the Inspect integration)."""


@dataclass(frozen=True)
class ImportedTable:
    """What a file holds: its items, the tokenizer it names, and the columns it has that are ignored."""

    items: list[ImportedItem]
    tokenizer: str | None
    ignored_columns: list[str]
    unit: str = "tokens"
    """What the lengths count (the file's ``unit`` column; tokens where it has none)."""
    context_windows: dict[str, int] | None = None
    """Each model's context window in tokens, where the file's ``context_window`` column gives it."""
    bin_edges: list[int] | None = None
    """The edges lengths were binned to (``--bin-lengths``), each item's own length kept as its
    ``prompt_tokens``."""

    def by_model(self) -> dict[str, list[ImportedItem]]:
        """The items of each model, in the order the file first names them."""
        models: dict[str, list[ImportedItem]] = {}
        for item in self.items:
            models.setdefault(item.model or "imported", []).append(item)
        return models


class _Line:
    """One line of the file: its values by column, and the file and line number for messages."""

    def __init__(self, source: str, number: int, values: Mapping[str, Any]) -> None:
        self.source, self.line_number, self.values = source, number, values

    def fail(self, column: str, problem: str) -> BadInput:
        return BadInput(f"{self.source}: line {self.line_number}, column {column}: {problem}")

    def text(self, column: str, *, required: bool = True) -> str | None:
        value = self.values.get(column)
        if value is None or (isinstance(value, str) and not value.strip()):
            if required:
                raise self.fail(column, "empty")
            return None
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise self.fail(column, f"{_shown(value)} is not text")
        text = str(value).strip() if isinstance(value, str) else _int_text(self, column, value)
        if len(text) > MAX_TEXT_CHARS:
            raise self.fail(column, f"{len(text):,} characters, over the limit of {MAX_TEXT_CHARS:,}")
        control = _CONTROL.search(text)
        if control is not None:
            raise self.fail(
                column, f"{_shown(text)} holds the control character U+{ord(control.group()):04X}"
            )
        return text

    def number(self, column: str) -> float | None:
        """The column's number (``None`` when empty); refuses text, booleans and non-finite values."""
        value = self.values.get(column)
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        if isinstance(value, bool):
            raise self.fail(column, f"{_shown(value)} is not a number")
        try:
            found = float(value)
        except (TypeError, ValueError):
            raise self.fail(column, f"{_shown(value)} is not a number") from None
        except OverflowError:  # an integer too large for a float
            raise self.fail(column, f"{_shown(value)} is not a finite number") from None
        if not math.isfinite(found):
            raise self.fail(column, f"{_shown(value)} is not a finite number")
        return found

    def count(self, column: str, *, minimum: int) -> int | None:
        """A whole number in [``minimum``, ``MAX_COUNT``] (``None`` when empty)."""
        found = self.number(column)
        if found is None:
            return None
        if not found.is_integer() or found < minimum:
            raise self.fail(column, f"{_shown(self.values[column])} is not a whole number >= {minimum}")
        if found > MAX_COUNT:
            raise self.fail(column, f"{_shown(self.values[column])} is above the limit of {MAX_COUNT:,}")
        return int(found)


def _int_text(line: _Line, column: str, value: int) -> str:
    """A JSON integer given where text is expected (an id), as text."""
    if abs(value) >= 10**MAX_TEXT_CHARS:
        raise line.fail(column, f"a number of over {MAX_TEXT_CHARS:,} digits")
    return str(value)


def _shown(value: Any) -> str:
    """A value as a message shows it: short, its type visible (text quoted)."""
    if isinstance(value, str):
        text = repr(value[:40])
    elif isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**40:
        text = f"a number of {len(str(abs(value)))} digits"
    else:
        try:
            text = json.dumps(value)
        except (RecursionError, ValueError):  # cannot happen for a parsed line; kept short anyway
            text = type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def _position(line: _Line) -> Position | None:
    """The evidence's place: ``position`` (a name, ``@N``, a fraction, or empty / ``unknown``), else
    ``depth`` (a fraction in [0, 1], or empty: unknown)."""
    named = line.values.get("position")
    if isinstance(named, str) and named.strip() and named.strip() != UNKNOWN_POSITION:
        text = named.strip()
        if len(text) > 64:
            raise line.fail("position", f"{_shown(text)} is not a position (too long)")
        if text in RUN_ONLY_POSITIONS:  # a rotscope run's own rows, exported: kept as it stored them
            return Position.from_stored(text, line.number("depth") or 0.0)
        try:
            found = Position.parse(float(text) if _is_number(text) else text)
        except ValueError as error:
            raise line.fail("position", str(error)) from None
        if (found.offset_tokens or 0) > MAX_COUNT:
            raise line.fail("position", f"{_shown(text)} is above the limit of {MAX_COUNT:,} tokens")
        return found
    if isinstance(named, int | float) and not isinstance(named, bool):
        try:
            return Position.parse(named)
        except ValueError as error:
            raise line.fail("position", str(error)) from None
    depth = line.number("depth")
    if depth is None:
        return None
    if not 0.0 <= depth <= 1.0:
        raise line.fail("depth", f"{_shown(line.values['depth'])} is outside [0, 1]")
    return Position(depth)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _item(line: _Line) -> ImportedItem:
    item_id = line.text("item_id")
    instance_id = line.text("instance_id")
    length = line.count("length_tokens", minimum=1)
    if length is None:
        raise line.fail("length_tokens", "empty")
    correct = line.values.get("correct")
    if isinstance(correct, bool):
        score: float | None = float(correct)
    elif isinstance(correct, str) and correct.strip().lower() in BOOLEANS:
        score = BOOLEANS[correct.strip().lower()]
    else:
        score = line.number("correct")
    if score is None:
        raise line.fail("correct", "empty")
    if not 0.0 <= score <= 1.0:
        raise line.fail("correct", f"{_shown(correct)} is outside [0, 1]")
    cost = line.number("cost_usd")
    if cost is not None and cost < 0:
        raise line.fail("cost_usd", f"{_shown(line.values['cost_usd'])} is negative")
    if cost is not None and cost > MAX_COST_USD:
        raise line.fail(
            "cost_usd", f"{_shown(line.values['cost_usd'])} is above the limit of ${MAX_COST_USD:,.0f}"
        )
    assert item_id is not None and instance_id is not None  # required text is never None
    return ImportedItem(
        item_id=item_id,
        instance_id=instance_id,
        length=length,
        position=_position(line),
        outcome="correct" if score == 1.0 else "incorrect",
        score=score,
        task=line.text("task", required=False) or DEFAULT_TASK,
        model=line.text("model", required=False),
        prompt_tokens=line.count("prompt_tokens", minimum=0),
        cost_usd=cost,
        trial=line.count("trial", minimum=0) or 0,
        control=_flag(line, "control"),
        haystack_variant=line.count("haystack_variant", minimum=0),
        where=f"line {line.line_number}",
        likelihood=_likelihood(line),
    )


def _flag(line: _Line, column: str) -> bool:
    """A 0/1 column (JSON booleans and ``true``/``false`` text too); empty is 0."""
    value = line.values.get(column)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in BOOLEANS:
        return bool(BOOLEANS[value.strip().lower()])
    found = line.number(column)
    if found not in (None, 0.0, 1.0):
        raise line.fail(column, f"{_shown(value)} is not 0 or 1")
    return bool(found)


def _likelihood(line: _Line) -> dict[str, float | int] | None:
    """The line's likelihood columns that are not empty, checked; ``None`` where none is given."""
    found: dict[str, float | int] = {}
    for column in ("answer_logprob", "absent_logprob"):
        logprob = line.number(column)
        if logprob is not None:
            if logprob > 0:
                raise line.fail(column, f"{_shown(line.values[column])} is above 0 (a log-probability)")
            if logprob < MIN_LOGPROB:
                raise line.fail(
                    column, f"{_shown(line.values[column])} is below the limit of {MIN_LOGPROB:,.0f}"
                )
            found[column] = logprob
    tokens = line.count("answer_tokens", minimum=1)
    if tokens is not None:
        found["answer_tokens"] = tokens
    first = line.number("first_token_prob")
    if first is not None:
        if not 0.0 <= first <= 1.0:
            raise line.fail(
                "first_token_prob", f"{_shown(line.values['first_token_prob'])} is outside [0, 1]"
            )
        found["first_token_prob"] = first
    return found or None


def _binned(line: _Line, item: ImportedItem, edges: list[int]) -> ImportedItem:
    """``item`` at the smallest edge at or above its length, its own length kept as its
    ``prompt_tokens`` (unless the file gives one)."""
    for edge in edges:
        if item.length <= edge:
            own = item.prompt_tokens if item.prompt_tokens is not None else item.length
            return replace(item, length=edge, prompt_tokens=own)
    raise line.fail("length_tokens", f"{item.length} is above the last --bin-lengths edge {edges[-1]:,}")


def _csv_lines(source: str, texts: Iterator[str]) -> tuple[list[str], Iterator[_Line]]:
    """The header's names and the lines of a CSV file; a value over csv's field limit (128 KiB),
    or text csv cannot read, is one line naming the line (and the column where it can)."""
    pulled: list[str] = []  # the text of the record being read, to name the column of a long value

    def fed() -> Iterator[str]:
        for text in texts:
            pulled.append(text)
            yield text

    reader = csv.reader(fed())
    names: list[str] = []

    def record() -> list[str] | None:
        pulled.clear()
        try:
            return next(reader, None)
        except csv.Error as error:
            raise BadInput(_csv_problem(source, reader.line_num, names, "".join(pulled), error)) from None

    header = record()
    if header is None:
        raise BadInput(f"{source}: empty (a CSV file needs a header line)")
    names = [name.strip() for name in header]
    for number, name in enumerate(names, start=1):
        if not name:
            raise BadInput(f"{source}: line 1, column {number}: an empty column name")
        if len(name) > MAX_TEXT_CHARS or _CONTROL.search(name):
            raise BadInput(f"{source}: line 1, column {number}: {_shown(name)} is not a column name")
        if names.index(name) != number - 1:
            raise BadInput(f"{source}: line 1, column {name}: named twice")

    def lines() -> Iterator[_Line]:
        while (values := record()) is not None:
            if not any(value.strip() for value in values):
                continue  # a blank line
            line = _Line(source, reader.line_num, dict(zip(names, values, strict=False)))
            if len(values) != len(names):
                raise BadInput(
                    f"{source}: line {reader.line_num}: {len(values)} values for {len(names)} columns"
                )
            yield line

    return names, lines()


def _csv_problem(source: str, line_number: int, names: list[str], text: str, error: csv.Error) -> str:
    limit = csv.field_size_limit()
    if "field limit" not in str(error):
        return f"{source}: line {line_number}: not CSV ({error})"
    index = _long_field(text, limit)
    column = "" if index is None else f", column {names[index] if index < len(names) else index + 1}"
    return (
        f"{source}: line {line_number}{column}: a value over {limit:,} characters (the limit of a CSV field)"
    )


def _long_field(text: str, limit: int) -> int | None:
    """The index of the first value of a CSV record's ``text`` longer than ``limit``."""
    index, size, quoted = 0, 0, False
    for char in text:
        if char == '"':
            quoted = not quoted  # a doubled quote inside a quoted value toggles twice
        elif char == "," and not quoted:
            index, size = index + 1, 0
            continue
        size += 1
        if size > limit:
            return index
    return None


def _jsonl_lines(source: str, texts: Iterator[tuple[int, str]]) -> Iterator[_Line]:
    for number, raw in texts:
        if not raw.strip(" \t\r\n"):
            continue
        try:
            values = json.loads(raw)
        except json.JSONDecodeError as error:
            raise BadInput(f"{source}: line {number}: not JSON ({error.msg}, column {error.colno})") from None
        except RecursionError:
            raise BadInput(f"{source}: line {number}: not a flat JSON object (nested too deep)") from None
        except ValueError:  # an integer of more digits than Python converts
            raise BadInput(f"{source}: line {number}: a number of too many digits") from None
        if not isinstance(values, dict):
            raise BadInput(f"{source}: line {number}: not a JSON object")
        yield _Line(source, number, values)


def _as_import(line: _Line, values: dict[str, Any]) -> _Line:
    return _Line(line.source, line.line_number, values)


def _check_columns(source: str, where: str, names: set[str]) -> None:
    missing = [name for name in REQUIRED if name not in names]
    if not names & set(PLACES):
        missing.append("depth or position")
    if missing:
        raise BadInput(f"{source}: {where}: missing column {missing[0]}")


def read_table(
    path: Path,
    source: str | None = None,
    *,
    bin_edges: list[int] | None = None,
    model_column: str | None = None,
) -> ImportedTable:
    """The items of a CSV or JSONL file of per-item results, each value checked; ``BadInput`` in
    one line naming the line and column of the first problem. ``source`` names it in messages;
    ``bin_edges`` bins the lengths (ascending); ``model_column`` names the column that says each
    row's model (a file of several models; without it a second model is refused)."""
    shown = source or str(path)
    kind = FORMATS.get(path.suffix.lower())
    if kind is None:
        raise BadInput(f"{shown}: not a .csv, .jsonl or Inspect .eval file")
    with open_regular(path, shown) as handle:
        if kind == "csv":
            names, lines = _csv_lines(shown, (text for _, text in text_lines(handle, shown, lone_cr=True)))
            if is_export(set(names)):  # rotscope's own export, read back (``export_rows``)
                names = list(IMPORT_NAMES)
                lines = converted(lines, _as_import)
            _check_columns(shown, "line 1", set(names))
            if model_column is not None and model_column not in names:
                raise BadInput(f"{shown}: line 1: no column {model_column!r} (--model-column)")
            seen_columns = set(names)
        else:
            lines, seen_columns = converted(_jsonl_lines(shown, text_lines(handle, shown)), _as_import), set()
        return _checked(shown, lines, kind, seen_columns, bin_edges=bin_edges, model_column=model_column)


def _checked(
    source: str,
    lines: Iterator[_Line],
    kind: str,
    seen_columns: set[str],
    *,
    bin_edges: list[int] | None,
    model_column: str | None,
) -> ImportedTable:
    items: list[ImportedItem] = []
    unit: tuple[str, int] | None = None
    windows: dict[str, tuple[int, int]] = {}
    conditions: dict[tuple[Any, ...], int] = {}  # by model too: each model's rows are a run of their own
    instances: dict[tuple[str | None, str, str], tuple[str, int]] = {}
    model: tuple[str, int] | None = None
    tokenizer: tuple[str, int] | None = None
    for line in lines:
        if len(items) == MAX_ROWS:
            raise BadInput(
                f"{source}: line {line.line_number}: over {MAX_ROWS:,} rows, the limit of one import"
            )
        if kind == "jsonl":
            _check_columns(source, f"line {line.line_number}", set(line.values))
            seen_columns |= set(line.values)
        item = _item(line)
        if model_column is not None:
            item = replace(item, model=line.text(model_column))
        if bin_edges:
            item = _binned(line, item, bin_edges)
        first = conditions.setdefault((item.model, *item.condition), line.line_number)
        if first != line.line_number:
            raise line.fail(
                "item_id",
                f"{item.item_id!r} is already at length {item.length}, position {item.place}"
                f"{'' if not item.trial else f' and trial {item.trial}'} (line {first}; reruns "
                "of one question in one condition need a trial column)",
            )
        unit = _one_unit(line, unit)
        window = line.count("context_window", minimum=1)
        if window is not None:
            held = windows.setdefault(item.model or "imported", (window, line.line_number))
            if held[0] != window:
                raise line.fail(
                    "context_window", f"{window}, where line {held[1]} has {held[0]} for this model"
                )
        known = instances.setdefault(
            (item.model, item.task, item.item_id), (item.instance_id, line.line_number)
        )
        if known[0] != item.instance_id:
            raise line.fail(
                "instance_id", f"item {item.item_id!r} is in instance {known[0]!r} at line {known[1]}"
            )
        if item.model is not None and model_column is None:
            model = model or (item.model, line.line_number)
            if item.model != model[0]:
                raise line.fail(
                    "model",
                    f"{item.model!r}, where line {model[1]} has {model[0]!r} (one import is one model's "
                    "results: split the file by model)",
                )
        named = line.text("tokenizer", required=False)
        if named is not None:
            tokenizer = tokenizer or (named, line.line_number)
            if named != tokenizer[0]:
                raise line.fail("tokenizer", f"{named!r}, where line {tokenizer[1]} has {tokenizer[0]!r}")
        items.append(item)
    if not items:
        raise BadInput(f"{source}: no rows")
    # A file of 0/1 outcomes is binary; one with a score strictly between is kept as partial credit.
    if all(item.score in (0.0, 1.0) for item in items):
        items = [replace(item, score=None) for item in items]
    return ImportedTable(
        items=items,
        tokenizer=tokenizer[0] if tokenizer else None,
        ignored_columns=sorted(seen_columns - set(COLUMNS) - {model_column}),
        unit=unit[0] if unit else "tokens",
        context_windows={name: held[0] for name, held in windows.items()} or None,
        bin_edges=bin_edges,
    )


def _one_unit(line: _Line, unit: tuple[str, int] | None) -> tuple[str, int] | None:
    """The file's unit (one per file), checked against the units rotscope knows."""
    named = line.text("unit", required=False)
    if named is None:
        return unit
    if named.lower() not in UNITS:
        raise line.fail("unit", f"{_shown(named)} is not one of {', '.join(UNITS)}")
    if unit is not None and unit[0] != named.lower():
        raise line.fail(
            "unit", f"{named.lower()!r}, where line {unit[1]} has {unit[0]!r} (one unit per file)"
        )
    return unit or (named.lower(), line.line_number)
