"""The subject spec: ``subjects:`` validated strictly, a subject resolved into its run's config (its
overrides applied, its own definition kept, the other's not), a plain model name kept as a model,
an unknown name refused naming the defined ones; a chat template file renders a local engine's
prompts and is refused for a remote API; the rollback's unsupported lengths."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from rotscope.backends import create_backend
from rotscope.backends.llamacpp.options import LlamaCppOptions
from rotscope.config.experiment import build_config
from rotscope.config.subjects import resolve_subject
from rotscope.errors import BadInput
from rotscope.execution.state.identity import config_fields
from rotscope.gate.rollback import rollback, unsupported_lengths

BASE: dict[str, Any] = {
    "model": "fake/lexical",
    "llamacpp": {"n_batch": 256},
    "subjects": [
        {"name": "current", "model": "fake/lexical"},
        {"name": "batched", "model": "fake/lexical", "llamacpp": {"n_batch": 512}, "system_prompt": "S."},
    ],
}


@pytest.mark.parametrize(
    ("subjects", "fragment"),
    [
        ([{"name": "a", "model": "x", "llamacpp": {"n_bach": 1}}], "llamacpp.n_bach: unknown key"),
        ([{"name": "a", "model": "x", "llamacpp": {"n_batch": 0}}], "llamacpp.n_batch"),
        ([{"name": "a", "model": "x"}, {"name": "a", "model": "y"}], "defined twice"),
        ([{"name": "a/b", "model": "x"}], "subjects.0.name"),
        ([{"name": "bundled", "model": "x"}], "names the bundled model"),
        ([{"name": "a", "model": "x", "temperature": 0.5}], "unknown key 'subjects.0.temperature'"),
        ([{"name": "a"}], "subjects.0.model"),
    ],
)
def test_subjects_are_validated_strictly(subjects: list[dict[str, Any]], fragment: str) -> None:
    with pytest.raises(BadInput, match=r"^config: ") as raised:
        build_config({"subjects": subjects})
    assert fragment in str(raised.value) and "\n" not in str(raised.value)


def test_a_subject_resolves_to_its_overrides_and_its_own_definition_alone() -> None:
    config = build_config(BASE)
    batched = resolve_subject(config, "batched", "--pair candidate")
    assert (batched.section(LlamaCppOptions).n_batch, batched.system_prompt, batched.subject) == (
        512,
        "S.",
        "batched",
    )
    assert [subject.name for subject in batched.subjects] == ["batched"]
    current = resolve_subject(config, "current", "--pair baseline")
    assert (current.section(LlamaCppOptions).n_batch, current.system_prompt) == (256, None)
    # each run's identity holds its own overrides, never the other subject's
    assert config_fields(batched)["subjects"] != config_fields(current)["subjects"]
    assert (
        "batched" not in str(config_fields(current)) and config_fields(batched)["llamacpp"]["n_batch"] == 512
    )
    plain = resolve_subject(config, "fake/lexical-recent", "--pair candidate")
    assert (plain.model, plain.subject, plain.subjects) == ("fake/lexical-recent", None, [])


def test_an_unknown_subject_names_itself_and_the_defined_ones() -> None:
    with pytest.raises(BadInput) as raised:
        resolve_subject(build_config(BASE), "nope", "--pair candidate")
    assert str(raised.value).startswith(
        "--pair candidate: unknown subject 'nope' (defined subjects: current, batched)"
    )
    with pytest.raises(BadInput, match="defines no subjects"):
        resolve_subject(build_config({}), "nope", "--pair candidate")
    with pytest.raises(BadInput, match="field 'subject'"):
        build_config({**BASE, "subject": "nope"})


def test_a_chat_template_file_renders_a_local_engines_prompts(tmp_path: Path) -> None:
    template = tmp_path / "chat.jinja"
    template.write_text(
        "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}<go>", encoding="utf-8"
    )
    plain = create_backend(build_config({"model": "fake/lexical"}))
    templated = create_backend(build_config({"model": "fake/lexical", "chat_template": str(template)}))
    messages = [{"role": "user", "content": "hello"}]
    assert templated.tokenizer().render_chat(messages) == "<user>hello<go>"
    assert plain.tokenizer().render_chat(messages) != "<user>hello<go>"
    assert templated.tokenizer().digest() != plain.tokenizer().digest()
    assert templated.describe()["template_digest"] and templated.capabilities == plain.capabilities
    again = copy.copy(templated)  # rebuilt from its state, as pickling for a worker process does
    assert again.tokenizer().render_chat(messages) == "<user>hello<go>"
    with pytest.raises(BadInput, match="applies its own"):
        create_backend(build_config({"model": "fake-remote/lexical", "chat_template": str(template)}))
    with pytest.raises(BadInput, match="chat_template: cannot read"):
        create_backend(build_config({"model": "fake/lexical", "chat_template": str(tmp_path / "none")}))


def _slice(task: str, length: int, verdict: str) -> dict[str, Any]:
    return {"task": task, "length": length, "position": "midpoint", "verdict": verdict}


def test_unsupported_lengths_follow_the_window_else_the_shortest_failing_length() -> None:
    slices = [_slice("a", 100, "PASS"), _slice("a", 200, "FAIL"), _slice("a", 400, "PASS")]
    slices += [_slice("b", 100, "PASS"), _slice("b", 200, "PASS"), _slice("b", 0, "FAIL")]
    assert unsupported_lengths({"slices": slices}) == {"a": [200, 400]}
    assert unsupported_lengths({"slices": slices, "supported_up_to": {"a": 100, "b": None}}) == {
        "a": [200, 400],
        "b": [100, 200],
    }
    assert unsupported_lengths({"slices": slices, "supported_up_to": {"a": {"length_tokens": 200}}}) == {
        "a": [400]
    }
    binding = {"path": "runs/x", "model": "m", "run": "x"}
    assert rollback({"verdict": "PASS", "slices": slices}) is None
    failed = rollback({"verdict": "FAIL", "slices": slices, "baseline": binding, "candidate": binding})
    assert failed is not None and failed.lengths_from == "failing slices"
    assert (
        failed.cases_command == "rotscope cases runs/x --failing --since runs/x -o newly-failing-cases.jsonl"
    )
