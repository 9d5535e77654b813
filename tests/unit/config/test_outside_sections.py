"""An outside component's own options section, in process: validated by its class, its paths
resolved, its runtime fields outside the identity, a key claimed twice one line naming both, and a
config without outside sections dumped exactly as before sections existed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, ConfigDict

from rotscope import registry
from rotscope.config.experiment import build_config, quick_config_data, resolve_paths
from rotscope.config.options import PathOption, RuntimeOption
from rotscope.config.reference import key_rows
from rotscope.errors import BadInput
from rotscope.execution.state.identity import config_digest, config_fields

# Computed with the code of main at 2cafe62 (before outside sections existed) by
# ``config_digest(build_config(data))`` for each mapping below: the dump of a config without
# outside sections, and so every identity and digest, must not change.
MAIN_DIGESTS = {
    "default": "a5e9a011d64cbfc9",
    "quick": "1b8dabc17b93160b",
    "mixed": "ffdfde15dab1065c",
    "sections": "15c495703dbbac0b",
}
"""``sections``: computed with the code of main at d0ae691, when the built-in sections were still
fields of the experiment model and ``SubjectConfig`` had one field per engine section."""
BUILT_IN_SECTIONS = ("llamacpp", "hf", "reasoning", "remote", "cmd", "vllm", "serve", "codebase")
MIXED = {
    "name": "m",
    "model": "fake/lexical",
    "tasks": ["niah", "multihop"],
    "lengths": [300, 200],
    "out": "/tmp/x",
    "filler": {"kind": "text", "glob": "/tmp/c/*.txt", "options": {"a": 1}},
    "max_cost": 1.5,
}
SECTIONS = {
    "name": "s",
    "model": "fake/lexical",
    "tasks": ["niah", "reasoning", "codebase"],
    "llamacpp": {"n_batch": 128, "n_threads": 2},
    "remote": {
        "base_url": "http://127.0.0.1:9/v1",
        "tokenizer": "tiktoken:o200k_base",
        "server_log": "/tmp/s.log",
    },
    "cmd": {"args": ["{prompt_file}"], "prompt": "file", "timeout_s": 5.0},
    "reasoning": {"items": 4, "layouts": ["end"]},
    "codebase": {
        "cases": [
            {
                "id": "c1",
                "question": "q?",
                "answer": 719,
                "evidence": {"file": "a.py", "line_contains": "x = 1"},
            }
        ]
    },
    "judge": {"model": "openai/gpt-4o-mini", "remote": {"timeout_s": 30.0}},
    "subjects": [
        {"name": "base", "model": "fake/lexical", "llamacpp": {"n_batch": 512}},
        {
            "name": "cand",
            "model": "openai/x",
            "remote": {"base_url": "http://127.0.0.1:8/v1"},
            "system_prompt": "hi",
            "hf": {"dtype": "bfloat16"},
        },
    ],
}
"""Every built-in section given, the judge's own ``remote`` and subjects overriding engine keys."""


class AcmeOptions(BaseModel):
    """The acme engine's options."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    weights: Annotated[str | None, PathOption()] = None
    """A weights file; relative to the experiment file."""
    threads: Annotated[int, RuntimeOption()] = 1
    """Threads: never change an answer."""
    temperature: float = 0.0


@pytest.fixture
def acme(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``acme`` registered; the sections as they were afterwards."""
    monkeypatch.setattr(registry, "_SECTIONS", registry.sections())
    registry.register_section("acme", AcmeOptions, module="acme_engine")
    yield


def _old_variants(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with ``filler.variants`` at the default these digests were computed under (3): since
    issue 48 a config that leaves it unset reads one haystack per case, a different experiment whose
    identity says so."""
    filler = dict(data.get("filler") or {})
    return {**data, "filler": {**filler, "variants": filler.get("variants", 3)}}


def test_configs_without_outside_sections_keep_main_s_digests() -> None:
    given = {"default": {}, "quick": quick_config_data(), "mixed": MIXED, "sections": SECTIONS}
    found = {name: config_digest(build_config(_old_variants(data))) for name, data in given.items()}
    assert found == MAIN_DIGESTS
    assert config_digest(build_config({})) != MAIN_DIGESTS["default"]  # the new default is its own


def test_a_section_is_validated_resolved_and_its_runtime_fields_stay_out_of_the_identity(acme: None) -> None:
    config = build_config(resolve_paths({"acme": {"weights": "w.bin", "threads": 3}}, Path("/data/exp")))
    options = config.section(AcmeOptions)
    assert options == AcmeOptions(weights="/data/exp/w.bin", threads=3)
    assert config.sections["acme"] == options
    assert set(config.sections) == {*BUILT_IN_SECTIONS, "acme"} - {"codebase"}  # codebase left out: None
    assert config.model_dump()["acme"] == {"weights": "/data/exp/w.bin", "threads": 3, "temperature": 0.0}
    assert config_fields(config)["acme"] == {"weights": "/data/exp/w.bin", "temperature": 0.0}
    assert "acme" not in config.model_dump(exclude={"acme"})
    assert config.model_dump(exclude={"acme": {"threads"}})["acme"] == {
        "weights": "/data/exp/w.bin",
        "temperature": 0.0,
    }
    faster = build_config({**config.model_dump(mode="json"), "acme": {**options.model_dump(), "threads": 9}})
    assert config_digest(faster) == config_digest(config)
    warmer = build_config(
        {**config.model_dump(mode="json"), "acme": {**options.model_dump(), "temperature": 1}}
    )
    assert config_digest(warmer) != config_digest(config)
    assert build_config({}).section(AcmeOptions) == AcmeOptions()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"acme": {"threads": "x"}}, "config: field 'acme.threads': Input should be a valid integer"),
        ({"acme": {"thread": 2}}, "config: unknown key 'acme.thread'"),
        ({"acme": 3}, "config: field 'acme': Input should be a valid dictionary"),
        ({"acmee": {}}, "config: unknown key 'acmee'"),
    ],
)
def test_bad_section_input_is_one_line_naming_the_field(
    acme: None, data: dict[str, object], message: str
) -> None:
    with pytest.raises(BadInput) as raised:
        build_config(data)
    assert str(raised.value).startswith(message)


def test_a_section_claimed_twice_names_both_providers(acme: None) -> None:
    registry.register_section("acme", AcmeOptions, module="acme_engine")  # a re-import replaces
    with pytest.raises(
        BadInput,
        match=r"^options section 'acme' is registered by acme_engine \(acme_engine\) "
        r"and by other_engine \(other_engine\)$",
    ):
        registry.register_section("acme", AcmeOptions, module="other_engine")


def test_the_reference_lists_outside_sections_only_when_asked(acme: None) -> None:
    assert not [row for row in key_rows() if row.key.startswith("acme")]
    rows = {row.key: row for row in key_rows(outside=True) if row.key.startswith("acme")}
    assert list(rows) == ["acme", "acme.weights", "acme.threads", "acme.temperature"]
    assert rows["acme"].description == "The acme engine's options. (from acme_engine)"
    assert rows["acme.threads"].description == "Threads: never change an answer."


def test_a_copied_config_keeps_its_sections(acme: None) -> None:
    config = build_config({"acme": {"threads": 4}})
    assert config.model_copy(update={"name": "other"}).section(AcmeOptions).threads == 4


def test_register_task_and_register_backend_claim_their_options_section(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rotscope.backends import BACKENDS, register_backend
    from rotscope.tasks import TASKS, register_task

    monkeypatch.setattr(registry, "_SECTIONS", registry.sections())
    for kind in (BACKENDS, TASKS):
        for attribute in ("_entries", "_modules", "_attributed"):
            monkeypatch.setattr(kind, attribute, dict(getattr(kind, attribute)))
    register_task("acme_family", options=("acme_family", AcmeOptions), module="acme_tasks")(
        lambda config: config  # never built here
    )
    register_backend("acme_engine", hint="acme_engine/NAME", options=("acme_engine", AcmeOptions))(
        lambda name, config: config  # never built here
    )
    claimed = registry.sections()
    assert (claimed["acme_family"].module, claimed["acme_family"].model) == ("acme_tasks", AcmeOptions)
    assert claimed["acme_engine"].model is AcmeOptions
    assert build_config({"acme_family": {"threads": 2}}).section(AcmeOptions).threads == 2
