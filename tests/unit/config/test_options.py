"""Path and runtime-only fields are declared on the option fields (``rotscope.config.options``): what is
derived from the markers equals the hand-kept tables they replaced, so resolved configs and run
identities are unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rotscope.config.experiment import ExperimentConfig, resolve_paths
from rotscope.config.options import path_keys
from rotscope.execution.state.identity import RUNTIME_FIELDS, SECTION_RUNTIME_FIELDS, config_fields

OLD_RUNTIME_FIELDS = {
    "out",
    "max_cost",
    "cache",
    "limits",
    "prices",
    "max_error_rate",
    "executor",
    "analysis",
    "order",
}
OLD_ENGINE_RUNTIME_FIELDS = {
    "llamacpp": {"n_threads", "prefix_cache", "state_cache_mb", "extra_buffers"},
    "hf": {"n_threads", "prefix_cache"},
    "vllm": {"batch_size", "gpu_memory_utilization", "tensor_parallel_size", "enforce_eager"},
    "cmd": {"timeout_s", "max_attempts", "backoff_initial_s", "backoff_max_s"},
    "remote": {"server_log"},
    "serve": {"base_url", "concurrency", "timeout_s", "max_attempts", "unhealthy_after", "probe_after_s"},
}
OLD_PATHS = {
    "model",
    "cases",
    "replay",
    "out",
    "chat_template",
    "filler.path",
    "filler.glob",
    "filler.jsonl",
    "filler.source",
    "filler.static.path",
    "filler.static.glob",
    "filler.static.jsonl",
    "reasoning.path",
    "cache.path",
    "remote.server_log",
    "remote.tokenizer",
    "judge.remote.tokenizer",
    "cmd.tokenizer",
    "cmd.cwd",
}
"""``config.resolve_paths`` before the markers (``_SECTION_PATHS`` and its special cases)."""
NEW_PATHS = {"filler.static.source", "judge.remote.server_log", "serve.tokenizer", "serve.template"}
"""Paths the old list missed: a static filler's ``source`` is refused by validation anyway, and the
judge's ``server_log`` is a path like the main model's; ``serve`` came after the markers."""


def test_runtime_fields_derived_from_markers_equal_the_old_tables() -> None:
    assert RUNTIME_FIELDS == OLD_RUNTIME_FIELDS
    derived = {section: set(names) for section, names in SECTION_RUNTIME_FIELDS.items()}
    assert derived == OLD_ENGINE_RUNTIME_FIELDS


def test_path_fields_derived_from_markers_equal_the_old_table() -> None:
    assert set(path_keys(ExperimentConfig)) == OLD_PATHS | NEW_PATHS


def _nested(keys: set[str], value: str) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key in sorted(keys):
        *sections, last = key.split(".")
        inner = data
        for section in sections:
            inner = inner.setdefault(section, {})
        inner[last] = value
    return data


def _leaves(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            found.update(_leaves(value, f"{prefix}{key}."))
        else:
            found[f"{prefix}{key}"] = value
    return found


def test_resolve_paths_resolves_the_marked_keys_and_nothing_else(tmp_path: Path) -> None:
    marked = OLD_PATHS | NEW_PATHS
    unmarked = {"name", "judge.model", "filler.package", "filler.field", "remote.base_url", "cmd.args"}
    data = _nested(marked | unmarked, "some/file.gguf")
    resolved = _leaves(resolve_paths(data, tmp_path))
    assert {key for key, value in resolved.items() if value != "some/file.gguf"} == marked
    assert resolved["cases"] == str(tmp_path.resolve() / "some" / "file.gguf")
    assert data["filler"]["path"] == "some/file.gguf"  # the input is not changed


def test_named_values_stay_names(tmp_path: Path) -> None:
    data = {
        "model": "hf/bundled",
        "filler": {"source": "generated"},
        "remote": {"tokenizer": "tiktoken:o200k_base"},
        "cmd": {"tokenizer": "tiktoken:cl100k_base"},
    }
    assert resolve_paths(data, tmp_path) == data
    assert resolve_paths({"model": "cmd/claude"}, tmp_path) == {"model": "cmd/claude"}
    agent = resolve_paths({"model": "cmd/bin/agent"}, tmp_path)["model"]
    assert agent == f"cmd/{tmp_path.resolve()}/bin/agent"


def test_subject_overrides_resolve_as_the_experiments_own_keys(tmp_path: Path) -> None:
    subject = {"name": "a", "model": "m.gguf", "chat_template": "t.jinja", "cmd": {"cwd": "w", "args": ["x"]}}
    (resolved,) = resolve_paths({"subjects": [subject]}, tmp_path)["subjects"]
    base = tmp_path.resolve()
    assert resolved == {
        "name": "a",
        "model": str(base / "m.gguf"),
        "chat_template": str(base / "t.jinja"),
        "cmd": {"cwd": str(base / "w"), "args": ["x"]},
    }


def test_runtime_fields_leave_the_identity_a_nested_section_stays_whole() -> None:
    config = ExperimentConfig(judge={"model": "openai/gpt-4o-mini"})  # type: ignore[arg-type]
    fields = config_fields(config)
    assert not OLD_RUNTIME_FIELDS & set(fields)
    for section, names in OLD_ENGINE_RUNTIME_FIELDS.items():
        assert not names & set(fields.get(section, {}))
    assert "serve" not in fields  # a later section at its defaults stays out (SectionSpec.identity_when_set)
    served = config_fields(ExperimentConfig(serve={"tokenizer": "t.gguf", "concurrency": 4}))  # type: ignore[arg-type]
    assert served["serve"]["tokenizer"] == "t.gguf" and "concurrency" not in served["serve"]
    assert "server_log" in fields["judge"]["remote"]
    assert "n_batch" in fields["llamacpp"]


def test_content_keys_come_from_the_path_markers() -> None:
    """The paths a frozen plan compares by digest are the fields whose PathOption names one: the
    static filler's once, the judge's own remote never (no digest covers its tokenizer)."""
    from rotscope.config.experiment import ExperimentConfig
    from rotscope.config.options import content_keys

    keys = content_keys(ExperimentConfig)
    assert keys["cases"] == "cases.digest"
    assert keys["filler.static.jsonl"] == "filler.digest"
    assert keys["remote.tokenizer"] == "subject.tokenizer_digest"
    assert "replay" not in keys and "judge.remote.tokenizer" not in keys
    assert not any(key.startswith("filler.static.static.") for key in keys)
