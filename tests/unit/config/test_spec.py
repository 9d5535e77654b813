"""What each options class declares about its section (``SectionSpec``), read typed: the built-in
sections keep the identity behaviour they had (only ``serve`` counts once set), the engines take a
subject's overrides, and a class that declares nothing keeps what a plain pydantic section had."""

from __future__ import annotations

from pydantic import BaseModel

from rotscope import registry
from rotscope.config.experiment import ExperimentConfig, SubjectConfig
from rotscope.config.spec import UNDECLARED, SectionSpec, StrictOptions, section_spec


def test_the_built_in_sections_keep_their_identity_and_subject_behaviour() -> None:
    specs = {name: section_spec(section.model) for name, section in registry.sections().items()}
    assert {name for name, spec in specs.items() if spec.identity_when_set} == {"serve"}
    assert {name for name, spec in specs.items() if spec.subject_overrides} == {
        "llamacpp",
        "hf",
        "remote",
        "cmd",
        "vllm",
        "serve",
    }
    assert {name: spec.model_name_form for name, spec in specs.items() if spec.model_name_form} == {
        "llamacpp": "path",
        "hf": "path",
        "vllm": "path",
        "cmd": "path-or-command",
    }


def test_a_new_section_counts_once_set_and_an_undeclared_class_as_it_always_did() -> None:
    class New(StrictOptions):
        pass

    class Plain(BaseModel):
        pass

    assert section_spec(New) == SectionSpec(identity_when_set=True)
    assert section_spec(Plain) is UNDECLARED
    assert not UNDECLARED.identity_when_set and not UNDECLARED.subject_overrides


def test_the_experiment_takes_sections_and_a_subject_their_overrides() -> None:
    assert section_spec(ExperimentConfig).takes_sections
    assert not section_spec(ExperimentConfig).takes_overrides
    assert section_spec(SubjectConfig).takes_overrides
    assert not section_spec(SubjectConfig).takes_sections
