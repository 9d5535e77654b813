"""Haystack variants (``filler.variants``): prompts of one length draw on several filler texts.

Before, every prompt of a length was cut from the one corpus, so the results spoke for that text
only (with 49 essays as filler, 3 were ever used)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from rotscope import load_summary
from rotscope.backends import create_backend
from rotscope.config.experiment import ExperimentConfig, build_config
from rotscope.execution.workflows.runner import run_experiment
from rotscope.filler import documents
from rotscope.filler.corpus import tokenize_corpus
from rotscope.plan.workitems import Plan, build_plan
from rotscope.prompt.builder import PromptBuilder
from rotscope.types import WorkItem
from tests.support.cli_helpers import assert_bad_input, invoke, nonsense_corpus


def _config(tmp_path: Path, files: int = 12, **fields: Any) -> ExperimentConfig:
    corpus = nonsense_corpus(tmp_path / "corpus", files=files, lines=12)
    data: dict[str, Any] = {
        "model": "fake/lexical",
        "tasks": ["niah"],
        "lengths": [256, 512],
        "depths": [1.0],
        "limit": 6,
        "filler": {"kind": "text", "glob": str(corpus / "*.txt"), "allow_repeat": True},
    }
    data.update(fields)
    return build_config(data)


def _plan(config: ExperimentConfig) -> Plan:
    return build_plan(config, create_backend(config))


def _with_variants(tmp_path: Path, variants: int, **fields: Any) -> ExperimentConfig:
    config = _config(tmp_path, **fields)
    return config.model_copy(update={"filler": config.filler.model_copy(update={"variants": variants})})


def haystack(item: WorkItem) -> str:
    """The start of a prompt's filler text (how much of it a prompt holds depends on its case)."""
    start, end = item.prompt.filler_chars[0]
    return item.prompt.messages[-1]["content"][start : min(end, start + 300)]


def _by_case(plan: Plan, length: int) -> dict[str, str]:
    return {item.case.case_id: haystack(item) for item in plan.items if item.layout.length_tokens == length}


def test_prompts_of_one_length_use_as_many_haystacks_as_variants(tmp_path: Path) -> None:
    plan = _plan(_with_variants(tmp_path, 3))
    assert plan.rejected == []
    for length in (256, 512):
        texts = _by_case(plan, length)
        cases = [f"niah-{number:02d}" for number in range(1, 7)]
        assert len({texts[case] for case in cases}) == 3
        # case i uses variant i mod 3 at every length, and its control uses the same text
        for index, case in enumerate(cases):
            assert texts[case] == texts[cases[index % 3]]
            assert texts[f"{case}~absent"] == texts[case]
    assert plan.corpus["variants"] == 3 and plan.corpus["variants_asked"] == 3
    assert len({entry["digest"] for entry in plan.corpus["haystacks"]}) == 3


def test_the_default_is_one_haystack_per_case(tmp_path: Path) -> None:
    """Issue 48: with 3 shared variants the bracket could place no length at 16 or 30 cases; one
    haystack per case keeps the cases independent (the default was 3 until then)."""
    config = build_config({"model": "fake/lexical"})
    assert config.filler.variants is None
    plan = _plan(_config(tmp_path))
    assert plan.corpus["variants"] == plan.corpus["variants_asked"] == 6
    texts = _by_case(plan, 256)
    assert len({text for case, text in texts.items() if "~" not in case}) == 6
    # a case keeps its haystack at every length (its prefix is reused across its lengths)
    assert {
        item.case.case_id: item.haystack_variant for item in plan.items if item.layout.length_tokens == 256
    } == {item.case.case_id: item.haystack_variant for item in plan.items if item.layout.length_tokens == 512}


def test_one_variant_gives_the_single_haystack_of_before(tmp_path: Path) -> None:
    config = _with_variants(tmp_path, 1)
    plan = _plan(config)
    assert len(set(_by_case(plan, 512).values())) == 1
    # the prompts are those of one corpus read from the source in the seed's order, as before
    backend = create_backend(config)
    tokenizer = backend.tokenizer()
    corpus = tokenize_corpus(
        documents(config.filler, config.seed), tokenizer, 512, allow_repeat=True, origin="test"
    )
    builder = PromptBuilder(tokenizer, corpus, placement=config.placement, seed=config.seed)
    for item in plan.items:
        assert builder.render(item.case, item.layout).token_ids == item.prompt.token_ids
    assert plan.corpus["digest"] == corpus.digest and plan.corpus["variants"] == 1


def test_variant_zero_keeps_the_prompts_of_one_variant(tmp_path: Path) -> None:
    one = {item.item_id for item in _plan(_with_variants(tmp_path, 1)).items}
    three = _plan(_with_variants(tmp_path, 3)).items
    first = {item.item_id for item in three if item.case.case_id.split("~")[0] in ("niah-01", "niah-04")}
    assert first <= one and len({item.item_id for item in three} - one) > 0


def test_variants_are_deterministic_and_do_not_depend_on_other_lengths(tmp_path: Path) -> None:
    config = _with_variants(tmp_path, 3)
    again = [item.item_id for item in _plan(config).items]
    assert [item.item_id for item in _plan(config).items] == again
    shorter = config.model_copy(update={"lengths": [256]})
    at_256 = {item.item_id for item in _plan(config).items if item.layout.length_tokens == 256}
    assert {item.item_id for item in _plan(shorter).items} == at_256


def test_a_corpus_with_fewer_documents_gives_fewer_variants(tmp_path: Path) -> None:
    plan = _plan(_with_variants(tmp_path, 5, files=2))
    assert plan.corpus["variants"] == 2 and plan.corpus["variants_asked"] == 5
    assert len(set(_by_case(plan, 256).values())) == 2
    assert plan.rejected == []


def test_the_summary_states_the_variants_used(tmp_path: Path) -> None:
    config = _with_variants(tmp_path, 3, lengths=[256], limit=2)
    summary = load_summary(run_experiment(config, run_dir=tmp_path / "run")).model_dump()
    assert summary["corpus"]["variants"] == 2 and summary["corpus"]["variants_asked"] == 3
    schema = json.loads(
        resources.files("rotscope").joinpath("schemas", "summary.schema.json").read_text(encoding="utf-8")
    )
    jsonschema.validate(summary, schema, cls=jsonschema.Draft202012Validator)
    assert {"variants", "variants_asked", "haystacks"} <= set(schema["$defs"]["Corpus"]["properties"])


@pytest.mark.parametrize(("value", "fragment"), [("0", "greater than 0"), ("-2", "greater than 0"),
                                                 ("true", "boolean"), ("many", "integer")])  # fmt: skip
def test_a_bad_number_of_variants_is_one_line_exit_2(tmp_path: Path, value: str, fragment: str) -> None:
    path = tmp_path / "experiment.yaml"
    text = f"model: fake/lexical\nfiller:\n  kind: readinglog\n  variants: {value}\n"
    path.write_text(text, encoding="utf-8")
    assert_bad_input(invoke("run", path, "--dry-run"), "filler.variants", fragment)


def test_a_run_folder_from_before_variants_resumes_with_its_one_haystack(tmp_path: Path) -> None:
    """A folder's config.yaml holds every key; one without ``filler.variants`` was written before
    variants, when a run had one haystack: it resumes as that, not under today's default."""
    import yaml

    from rotscope.execution.workflows.runner import resume_experiment

    config = _with_variants(tmp_path, 1, lengths=[256], limit=3)
    run_dir = run_experiment(config, run_dir=tmp_path / "run")
    stored = yaml.safe_load((run_dir / "config.yaml").read_text(encoding="utf-8"))
    del stored["filler"]["variants"]
    (run_dir / "config.yaml").write_text(yaml.safe_dump(stored, sort_keys=False), encoding="utf-8")
    before = load_summary(run_dir).model_dump()["items"]
    resume_experiment(run_dir)
    assert load_summary(run_dir).model_dump()["items"] == before
    assert load_summary(run_dir).model_dump()["corpus"]["variants"] == 1


@pytest.mark.parametrize("filler", [{"kind": "readinglog"}, {"kind": "code"}], ids=["readinglog", "code"])
def test_every_built_in_source_gives_three_variants(tmp_path: Path, filler: dict[str, Any]) -> None:
    """A generating source names its documents by number (reading-log-1 for every seed): variants
    are told apart by their text."""
    plan = _plan(_config(tmp_path, filler={**filler, "variants": 3}, lengths=[256]))
    assert plan.corpus["variants"] == 3
    assert len({text for case, text in _by_case(plan, 256).items() if "~" not in case}) == 3
