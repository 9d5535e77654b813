"""The built-in components' option sections go the outside sections' way: found through the
``rotscope.sections`` entry points, always part of a config (their defaults, or ``None`` for one
that takes keys), a name claimed twice one line naming both, rotscope's own group missing stale
metadata, and a subject overriding an engine section's keys through the registry."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, ClassVar

import pytest

from rotscope import registry
from rotscope.backends.llamacpp.options import LlamaCppOptions
from rotscope.backends.remote_options import RemoteOptions
from rotscope.config.experiment import SubjectConfig, build_config
from rotscope.config.options import RuntimeOption
from rotscope.config.spec import SectionSpec, StrictOptions
from rotscope.errors import BadInput
from rotscope.execution.state.identity import config_digest, config_fields
from rotscope.tasks.codebase_options import CodebaseConfig
from tests.support.entry_points import write_dist_info

BUILT_IN = {
    "llamacpp": "rotscope.backends.llamacpp.options",
    "hf": "rotscope.backends.hf.options",
    "reasoning": "rotscope.tasks.reasoning.options",
    "remote": "rotscope.backends.remote_options",
    "cmd": "rotscope.backends.cmd.options",
    "vllm": "rotscope.backends.vllm.options",
    "codebase": "rotscope.tasks.codebase_options",
}
ENGINES = {"llamacpp", "hf", "vllm", "cmd", "remote"}


class TurboOptions(StrictOptions):
    """An outside engine whose keys a subject may override."""

    SECTION: ClassVar[SectionSpec] = SectionSpec(subject_overrides=True)
    boost: int = 1
    """How much."""
    threads: Annotated[int, RuntimeOption()] = 1
    """Threads."""


@pytest.fixture
def sections(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The registered sections as they were afterwards."""
    monkeypatch.setattr(registry, "_SECTIONS", registry.sections())
    yield


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on ``sys.path`` for a dist-info; the entry points read again afterwards."""
    monkeypatch.setattr(registry, "_SECTIONS", registry.sections())
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    monkeypatch.undo()
    sys.modules.pop("turbo_engine", None)
    importlib.invalidate_caches()
    registry.rediscover()


def test_the_built_in_sections_come_from_their_entry_points() -> None:
    found = registry.sections()
    assert {name: found[name].module for name in BUILT_IN} == BUILT_IN
    assert all(found[name].present for name in BUILT_IN)
    assert {name for name in BUILT_IN if found[name].subject} == ENGINES


def test_a_config_holds_every_built_in_section_left_out_at_its_defaults() -> None:
    config = build_config({})
    dumped = config.model_dump(mode="json")
    assert dumped["llamacpp"] == LlamaCppOptions().model_dump(mode="json")
    assert dumped["codebase"] is None and config.optional_section(CodebaseConfig) is None
    with pytest.raises(BadInput, match=r"^config: section 'codebase': field 'cases': Field required"):
        config.section(CodebaseConfig)
    assert config.section(RemoteOptions) == RemoteOptions()
    assert "llamacpp" not in config.model_dump(exclude_unset=True)
    given = build_config({"llamacpp": {"n_batch": 128}, "codebase": None})
    assert given.model_dump(exclude_unset=True)["llamacpp"] == {"n_batch": 128}
    assert given.model_dump(exclude={"llamacpp": {"n_batch"}})["llamacpp"]["n_threads"] is None
    assert "n_batch" not in given.model_dump(exclude={"llamacpp": {"n_batch"}})["llamacpp"]
    assert build_config(given.model_dump(mode="json")) == given


def test_a_built_in_section_is_validated_as_strictly_as_a_field() -> None:
    with pytest.raises(BadInput, match=r"^config: unknown key 'llamacpp.n_bach'$"):
        build_config({"llamacpp": {"n_bach": 1}})
    with pytest.raises(BadInput, match=r"^config: field 'remote.timeout_s': Input should be greater than 0"):
        build_config({"remote": {"timeout_s": 0}})
    with pytest.raises(BadInput, match=r"^config: field 'judge.remote.max_attempts'"):
        build_config({"judge": {"model": "openai/x", "remote": {"max_attempts": 0}}})


def test_an_outside_entry_point_claiming_a_built_in_key_names_both(site: Path) -> None:
    (site / "turbo_engine.py").write_text(
        "from rotscope.backends.llamacpp.options import LlamaCppOptions as Own\n\n\n"
        "class TurboOptions(Own):\n    pass\n",
        encoding="utf-8",
    )
    write_dist_info(
        site, "turbo-rotscope", "1.0", {"rotscope.sections": {"llamacpp": "turbo_engine:TurboOptions"}}
    )
    importlib.invalidate_caches()
    registry.rediscover()
    with pytest.raises(BadInput) as raised:
        build_config({})
    assert str(raised.value) == (
        "options section 'llamacpp' is registered by rotscope (rotscope.backends.llamacpp.options) "
        "and by turbo-rotscope (turbo_engine)"
    )


def test_an_outside_section_from_the_group_is_dumped_only_when_given(site: Path) -> None:
    (site / "turbo_engine.py").write_text(
        "from pydantic import BaseModel, ConfigDict\n\n\n"
        "class TurboOptions(BaseModel):\n"
        '    model_config = ConfigDict(extra="forbid")\n'
        "    boost: int = 1\n",
        encoding="utf-8",
    )
    before = config_digest(build_config({}))
    write_dist_info(
        site, "turbo-rotscope", "1.0", {"rotscope.sections": {"turbo": "turbo_engine:TurboOptions"}}
    )
    importlib.invalidate_caches()
    registry.rediscover()
    assert config_digest(build_config({})) == before  # installing a plugin changes no identity
    assert not registry.sections()["turbo"].present
    assert build_config({"turbo": {"boost": 3}}).model_dump()["turbo"] == {"boost": 3}


def test_rotscope_s_own_sections_missing_is_stale_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_SECTIONS", {})
    monkeypatch.setattr(registry, "_SECTIONS_LOADED", False)
    real = registry._entry_points
    monkeypatch.setattr(
        registry, "_entry_points", lambda group: [] if group == registry.SECTIONS_GROUP else real(group)
    )
    with pytest.raises(BadInput, match=r"^rotscope's package metadata is stale"):
        build_config({})


def test_a_subject_dumps_every_built_in_engine_as_when_they_were_fields() -> None:
    subject = SubjectConfig.model_validate({"name": "a", "model": "x", "remote": {"base_url": "http://h:1"}})
    dumped = subject.model_dump()
    assert {key: dumped[key] for key in ENGINES} == {
        **{key: {} for key in ENGINES},
        "remote": {"base_url": "http://h:1"},
    }
    assert subject.overrides() == {"model": "x", "remote": {"base_url": "http://h:1"}}
    assert set(subject.model_dump(exclude_unset=True)) == {"name", "model", "remote"}
    with pytest.raises(ValueError, match="reasoning"):
        SubjectConfig.model_validate({"name": "a", "model": "x", "reasoning": {"items": 2}})


def test_a_subject_overrides_an_outside_engine_section(sections: None) -> None:
    registry.register_section("turbo", TurboOptions, module="turbo_engine")
    data = {
        "turbo": {"boost": 2},
        "subjects": [{"name": "a", "model": "x", "turbo": {"boost": 5, "threads": 4}}],
    }
    config = build_config(data)
    assert config.subjects[0].engine("turbo") == {"boost": 5, "threads": 4}
    assert config_fields(config)["turbo"] == {"boost": 2}
    with pytest.raises(BadInput, match=r"^config: field 'subjects': subject 'a': turbo.bost: unknown key"):
        build_config({"subjects": [{"name": "a", "model": "x", "turbo": {"bost": 5}}]})
