"""lm-evaluation-harness's per-sample logs (``lm_eval --log_samples``: ``samples_<task>_<time>.jsonl``
beside ``results_<time>.json``) read as an import's rows, so RULER and LongBench results a user
already has become a run folder every view reads (docs/commands.md, ``rotscope import``).

A sample is one document under one filter: its ``doc``, the reply (``resps``, ``filtered_resps``) and
each metric's value as a key of its own (``metrics`` lists their names). What a row needs:

- **length**: RULER's documents carry ``max_length``, the sequence length they were generated for in
  the model's tokenizer's tokens (the task's ``--metadata max_seq_lengths``), and RULER's metric is
  keyed by that length (``"4096": 1.0``, every other length ``-1``: "not this length");
  LongBench's documents carry ``length``, counted in words (``unit: words``; bin them with
  ``--bin-lengths``). A sample with neither is refused, naming the line.
- **score**: RULER's value at the document's own length; otherwise the first metric the sample
  lists whose value is a number in [0, 1] (a fraction is kept as partial credit, as a table's
  ``correct`` is).
- **instance**: RULER draws new needles at every length and LongBench has one length per document,
  so no document is asked at two lengths: each sample is its own instance, and the paired gaps of
  the views say there are no pairs rather than pairing unrelated documents.
- **model**: ``model_args``'s ``pretrained=`` (or ``model_name``) of a ``results_*.json`` beside the
  samples, else ``lm-eval``.

Only the first filter a file names is read (lm-eval writes a sample per filter; the others would be
the same document twice). No prompt or reply text is kept: only ids, lengths and scores.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from rotscope.errors import BadInput
from rotscope.imports.source import open_regular, text_lines
from rotscope.imports.table import ImportedTable, _checked, _jsonl_lines, _Line

SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+?)_(?P<time>\d{4}-\d{2}-\d{2}T[\d\-.:]+)\.jsonl$")
"""lm-eval's sample file name: the task, then the run's timestamp."""
DEFAULT_MODEL = "lm-eval"


def is_samples(path: Path) -> bool:
    """A folder holding lm-eval sample files, or one such file (by its name, or by its first line
    holding ``doc_id`` and ``filtered_resps``)."""
    if path.is_dir():
        return any(SAMPLES_NAME.match(child.name) for child in path.iterdir())
    if SAMPLES_NAME.match(path.name):
        return True
    if path.suffix.lower() != ".jsonl" or not path.is_file():
        return False
    try:
        with path.open("rb") as stream:
            first = json.loads(stream.readline(1 << 20).decode("utf-8-sig") or "null")
    except (OSError, ValueError):
        return False
    return isinstance(first, dict) and {"doc_id", "filtered_resps"} <= set(first)


def sample_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(child for child in path.iterdir() if SAMPLES_NAME.match(child.name))
    return [path]


def task_of(path: Path) -> str:
    found = SAMPLES_NAME.match(path.name)
    return found.group("task") if found else path.stem


def model_of(folder: Path) -> str:
    """The model a ``results_*.json`` beside the samples names, else ``lm-eval``."""
    for results in sorted(folder.glob("results_*.json"), reverse=True):
        try:
            data = json.loads(results.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        config = data.get("config") if isinstance(data, dict) else None
        args = config.get("model_args") if isinstance(config, dict) else None
        if isinstance(args, str):
            named = re.search(r"(?:^|,)\s*(?:pretrained|model)=([^,]+)", args)
            if named:
                return named.group(1).strip()
        if isinstance(data, dict) and isinstance(data.get("model_name"), str) and data["model_name"]:
            return str(data["model_name"])
    return DEFAULT_MODEL


def _score(line: _Line, record: Mapping[str, Any], length_key: str | None) -> Any:
    if length_key is not None:
        if length_key not in record:
            raise line.fail(length_key, "RULER's metric for the document's own max_length is missing")
        return record[length_key]
    names = record.get("metrics")
    for name in names if isinstance(names, list) else []:
        value = record.get(name) if isinstance(name, str) else None
        if isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= value <= 1.0:
            return value
    raise line.fail("metrics", "no metric with a value in [0, 1]")


def _row(line: _Line, task: str, model: str) -> tuple[str | None, dict[str, Any]]:
    """The import's columns for one sample, and the filter it was scored under."""
    record = line.values
    if "doc_id" not in record:
        raise line.fail("doc_id", "missing: not an lm-eval sample")
    doc = record.get("doc")
    if not isinstance(doc, dict):
        raise line.fail("doc", "missing or not an object: lm-eval writes the document with --log_samples")
    if "max_length" in doc:
        length, unit, length_key = doc["max_length"], "tokens", str(doc["max_length"])
    elif "length" in doc:
        length, unit, length_key = doc["length"], "words", None
    else:
        raise line.fail(
            "doc", "no max_length (RULER) or length (LongBench): nothing says how long the prompt was"
        )
    item = f"{task}:{record['doc_id']}"
    values = {
        "item_id": item,
        "instance_id": item,
        "length_tokens": length,
        "depth": None,
        "correct": _score(line, record, length_key),
        "task": task,
        "model": model,
        "unit": unit,
    }
    kept = record.get("filter")
    return (kept if isinstance(kept, str) else None), values


def read_samples(path: Path, source: str, *, bin_edges: list[int] | None = None) -> ImportedTable:
    """Every sample of ``path`` (a file, or a folder of them), checked as a table's rows are."""
    files = sample_files(path)
    if not files:
        raise BadInput(f"{source}: no lm-eval samples_*.jsonl file")
    model = model_of(path if path.is_dir() else path.parent)

    def lines() -> Iterator[_Line]:
        for file in files:
            shown = source if file == path else f"{source}/{file.name}"
            with open_regular(file, shown) as handle:  # bounded as a table is (``imports.source``)
                task, first_filter = task_of(file), None
                for line in _jsonl_lines(shown, text_lines(handle, shown)):
                    kept, values = _row(line, task, model)
                    first_filter = first_filter or kept
                    if kept is None or kept == first_filter:
                        yield _Line(shown, line.line_number, values)

    return _checked(source, lines(), "jsonl", set(), bin_edges=bin_edges, model_column=None)
