"""The records rotscope writes (``rotscope.records``): the committed schemas and docs page equal
what is generated from the models, the fixtures' summaries follow the model and the schema, and a
wrong type or an unknown key fails."""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import ValidationError

from rotscope.analysis.summary import load_summary
from rotscope.config import reference as config_reference
from rotscope.records import RECORDS
from rotscope.records.summary import Summary

FIXTURES = Path(__file__).parents[2] / "fixtures" / "runs"
REGENERATE = "stale: run python -m rotscope.config.reference --write"


def _shipped(name: str) -> dict[str, Any]:
    text = resources.files("rotscope").joinpath("schemas", f"{name}.schema.json").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@cache
def _fixture_summary(name: str) -> dict[str, Any]:
    """The summary of a copy of a fixture folder (SQLite leaves files beside a store it reads, and
    the fixtures stay as committed), through JSON, as a reader of ``rotscope show --json`` gets it."""
    with tempfile.TemporaryDirectory() as scratch:
        copy_dir = Path(shutil.copytree(FIXTURES / name, Path(scratch) / name))
        loaded: dict[str, Any] = json.loads(json.dumps(load_summary(copy_dir).model_dump()))
    return loaded


RUNS = sorted(path.name for path in FIXTURES.iterdir() if (path / "run.db").is_file())


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_each_shipped_schema_is_the_generated_one(name: str) -> None:
    kind = RECORDS[name]
    path = config_reference.record_schema_path(kind)
    assert path.read_text(encoding="utf-8") == kind.schema_text(), f"{path} {REGENERATE}"
    assert _shipped(name)["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(_shipped(name))


def test_the_records_page_is_the_generated_one_and_lists_every_top_level_key() -> None:
    path = config_reference.records_docs_path()
    page = path.read_text(encoding="utf-8")
    assert page == config_reference.records_page(), f"{path} {REGENERATE}"
    for name, kind in RECORDS.items():
        section = page.split(f"## {name}\n", 1)[1].split("\n## ", 1)[0]
        listed = {line.split("`")[1] for line in section.splitlines() if line.startswith("| `")}
        assert set(kind.model.model_fields) <= listed, name
        assert kind.schema_file in section


def test_check_reports_a_stale_record_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(config_reference, "SCHEMA_PATH", tmp_path / "schemas" / "experiment.schema.json")
    monkeypatch.setattr(config_reference, "DOCS_PATH", tmp_path / "docs" / "experiment-file.md")
    assert config_reference.main(["--write"]) == 0
    gate = tmp_path / "schemas" / "gate.schema.json"
    assert gate.is_file() and (tmp_path / "docs" / "records.md").is_file()
    gate.write_text("{}\n", encoding="utf-8")
    capsys.readouterr()
    assert config_reference.main(["--check"]) == 1
    assert f"{gate} is stale" in capsys.readouterr().err


@pytest.mark.parametrize("name", RUNS)
def test_old_run_folders_summaries_follow_the_model_and_the_schema(name: str) -> None:
    summary = _fixture_summary(name)
    parsed = RECORDS["summary"].validate(summary)
    assert isinstance(parsed, Summary) and parsed.run == name and parsed.cells
    jsonschema.validate(summary, _shipped("summary"), cls=jsonschema.Draft202012Validator)


def _mutated(path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    summary = copy.deepcopy(_fixture_summary(RUNS[0]))
    target: Any = summary
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return summary


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("cells", 0, "n"), "3"),  # a count as a string
        (("cells", 0, "correct"), True),  # a bool is no count
        (("items", "total"), -1),  # below its minimum
        (("effective_length", "state"), "fine"),  # not a state
        (("cells", 0, "accuracy"), 1.5),  # a share above 1
        (("cells", 0, "colour"), "red"),  # a key the model does not name
        (("lengths", 0, "colour"), "red"),  # likewise in a length's pooled cell
        (("effective_length", "bracket", "low", "side"), "left"),  # and deep inside
        (("surprise",), 1),  # likewise at the top
    ],
)
def test_a_mutated_summary_fails_the_model_and_the_schema(path: tuple[str | int, ...], value: Any) -> None:
    summary = _mutated(path, value)
    with pytest.raises(ValidationError) as raised:
        RECORDS["summary"].validate(summary)
    assert any(tuple(error["loc"][: len(path)]) == path for error in raised.value.errors()), raised.value
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(summary, _shipped("summary"), cls=jsonschema.Draft202012Validator)


def test_open_parts_take_a_components_keys_and_nothing_else() -> None:
    measured = _mutated(("cells", 0, "mean_overlap"), 0.5)  # a scorer's partial-credit measure
    RECORDS["summary"].validate(measured)
    jsonschema.validate(measured, _shipped("summary"), cls=jsonschema.Draft202012Validator)
    with pytest.raises(ValidationError, match="mean_"):
        RECORDS["summary"].validate(_mutated(("cells", 0, "mean_overlap"), "high"))
    with pytest.raises(ValidationError, match="only open keys"):
        RECORDS["summary"].validate(_mutated(("cells", 0, "overlap"), 0.5))
    own = _mutated(("tasks", 0, "acme_analysis"), {"anything": [1, 2]})  # a family's own analysis
    RECORDS["summary"].validate(own)
    jsonschema.validate(own, _shipped("summary"), cls=jsonschema.Draft202012Validator)
