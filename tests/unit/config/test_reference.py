"""The experiment file's generated reference: the shipped JSON Schema and the docs page equal what
``rotscope.config.reference`` generates from ``ExperimentConfig``, the examples follow the schema,
and the table lists every key."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from pydantic import BaseModel, Field

from rotscope import registry
from rotscope.config import reference as config_reference
from rotscope.config.experiment import ExperimentConfig, build_config, load_config
from rotscope.config.reference import experiment_schema, key_rows, key_table, main
from rotscope.errors import BadInput

ROOT = Path(__file__).parents[3]
DOCS = ROOT / "docs" / "experiment-file.md"
REGENERATE = "run python -m rotscope.config.reference --write"


def _is_experiment_file(path: Path) -> bool:
    try:
        load_config(path)
    except BadInput:
        return False
    return True


EXAMPLES = sorted(path for path in (ROOT / "examples").rglob("*.yaml") if _is_experiment_file(path))


def _shipped_schema() -> dict[str, Any]:
    text = (
        resources.files("rotscope").joinpath("schemas", "experiment.schema.json").read_text(encoding="utf-8")
    )
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def _table_keys(page: str) -> list[str]:
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    return [row.split("`")[1] for row in rows]


def test_shipped_schema_is_the_generated_one() -> None:
    assert _shipped_schema() == experiment_schema(), REGENERATE
    assert config_reference.SCHEMA_PATH.read_text(encoding="utf-8") == config_reference.schema_text(), (
        REGENERATE
    )


def test_docs_page_is_the_generated_table() -> None:
    assert DOCS.read_text(encoding="utf-8") == key_table(), REGENERATE


def test_schema_is_a_draft_2020_12_schema_with_a_title() -> None:
    schema = experiment_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"]
    jsonschema.Draft202012Validator.check_schema(schema)


def test_examples_are_found() -> None:
    names = {path.name for path in EXAMPLES}
    assert {"quick.yaml", "niah.yaml", "experiment.yaml"} <= names
    assert "perturbed-django.map.yaml" not in names


@pytest.mark.parametrize(
    "path",
    [pytest.param(path, id=str(path.relative_to(ROOT / "examples"))) for path in EXAMPLES],
)
def test_example_experiment_files_follow_the_schema(path: Path) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    errors = sorted(
        jsonschema.Draft202012Validator(_shipped_schema()).iter_errors(data),
        key=lambda error: error.json_path,
    )
    assert not errors, [f"{error.json_path}: {error.message}" for error in errors]


def test_every_top_level_field_is_a_row() -> None:
    keys = _table_keys(DOCS.read_text(encoding="utf-8"))
    assert set(ExperimentConfig.model_fields) <= set(keys)
    assert len(keys) == len(set(keys)) == len(key_rows())


def test_nested_keys_are_dotted() -> None:
    keys = set(_table_keys(key_table()))
    assert {
        "filler.kind",
        "llamacpp.n_batch",
        "judge.remote.base_url",
        "limits.<provider>.concurrency",
    } <= keys
    assert {"prices.<model>.input", "codebase.cases[].evidence.line_contains"} <= keys


def test_rows_carry_type_default_and_description() -> None:
    rows = {row.key: row for row in key_rows()}
    assert rows["llamacpp.n_batch"].type == "integer (> 0)"
    assert rows["llamacpp.n_batch"].default == "`256`"
    assert rows["judge.model"].default == "required"
    assert rows["tasks"].default == '`["niah"]`'
    assert "KV cache" in rows["llamacpp.prefix_cache"].description
    assert "\n" not in "".join(row.description for row in rows.values())


def test_every_key_has_a_description() -> None:
    undescribed = [row.key for row in key_rows() if not row.description.strip()]
    assert undescribed == []


def _own_undescribed(
    model: type[BaseModel], prefix: str, seen: tuple[type[BaseModel], ...] = ()
) -> list[str]:
    if model in seen:
        return []
    found = []
    for name, field in model.model_fields.items():
        if not (field.description or config_reference._attribute_docstrings(model).get(name)):
            found.append(f"{prefix}{name}")
        for inner, suffix in dict.fromkeys(config_reference._models_in(field.annotation, "")):
            found.extend(_own_undescribed(inner, f"{prefix}{name}{suffix}.", (*seen, model)))
    return found


def test_every_field_has_a_docstring_of_its_own() -> None:
    """Not only the class docstring of the section it holds: the experiment model's fields and
    those of every registered section (and of the models nested in them)."""
    undescribed = _own_undescribed(ExperimentConfig, "")
    for name, section in registry.sections().items():
        undescribed.extend(_own_undescribed(section.model, f"{name}."))
    assert undescribed == []
    assert {"llamacpp.n_batch", "remote.tokenizer", "codebase.cases", "subjects[].remote"} <= {
        row.key for row in key_rows()
    }


class _Plain(BaseModel):
    """A section whose model does not expose attribute docstrings to pydantic."""

    size: int = Field(default=3, gt=0)
    """How many."""


class _Outer(BaseModel):
    inner: dict[str, _Plain] = Field(default_factory=dict)
    """Per shard, its settings."""


def test_attribute_docstrings_are_read_where_pydantic_does_not_expose_them() -> None:
    assert _Plain.model_fields["size"].description is None
    rows = {row.key: row for row in config_reference._walk(_Outer, "", ())}
    assert list(rows) == ["inner", "inner.<shard>.size"]
    assert rows["inner.<shard>.size"].description == "How many."
    assert rows["inner.<shard>.size"].type == "integer (> 0)"


@pytest.mark.parametrize(
    "data",
    [
        {"lenghts": [256]},
        {"filler": {"knd": "code"}},
        {"limits": {"openai": {"concurency": 2}}},
        {"judge": {"model": "openai/gpt-4o-mini", "remote": {"base_ulr": "http://x"}}},
    ],
    ids=["top-level", "section", "mapping-value", "nested-section"],
)
def test_a_misspelled_key_is_rejected(data: dict[str, Any]) -> None:
    with pytest.raises(jsonschema.ValidationError, match="Additional properties are not allowed"):
        jsonschema.validate(data, _shipped_schema(), cls=jsonschema.Draft202012Validator)
    with pytest.raises(BadInput, match="unknown key"):
        build_config(data)


def test_check_names_a_stale_file_and_write_fixes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    schema, docs = tmp_path / "schemas" / "experiment.schema.json", tmp_path / "docs" / "experiment-file.md"
    monkeypatch.setattr(config_reference, "SCHEMA_PATH", schema)
    monkeypatch.setattr(config_reference, "DOCS_PATH", docs)
    assert main(["--write"]) == 0
    assert main(["--check"]) == 0
    docs.write_text("stale\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["--check"]) == 1
    err = capsys.readouterr().err
    assert str(docs) in err and str(schema) not in err
    assert main(["--write"]) == 0
    assert main(["--check"]) == 0
