"""Evidence already in the corpus: the layout moves the file that holds the evidence line so the
line lands at the asked depth, spans it exactly once, and the verifier checks it like inserted
evidence. Runs with the fake tokenizer and the real GGUF vocabulary; the code base is generated."""

from __future__ import annotations

import json
import random
import sqlite3
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from rotscope.backends import create_backend
from rotscope.cli import app
from rotscope.config.experiment import load_config
from rotscope.errors import BadInput
from rotscope.filler import Document
from rotscope.filler.anchor import AnchoredCorpus, anchor_document
from rotscope.filler.corpus import tokenize_corpus
from rotscope.plan.workitems import build_plan
from rotscope.prompt.builder import PromptBuilder
from rotscope.prompt.verify import verify_prompt
from rotscope.types import Case, Evidence, Layout, Oracle, RenderedPrompt, Span, Tokenizer

LINE = 'ttl = opts.get("ttl", opts.get("NIBBLER", 719))'
NAMES = ("planet", "express", "delivery", "crate", "engine", "hull", "route", "cargo", "beacon", "dock")


def _module(seed: int, classes: int = 4) -> str:
    """Indented, realistic-looking Python with no number 719 and no NIBBLER."""
    rng = random.Random(seed)
    out = [f'"""Module {seed}: helpers for {rng.choice(NAMES)} handling."""', "", "import os", ""]
    for number in range(classes):
        name = f"{rng.choice(NAMES).title()}{rng.choice(NAMES).title()}{seed}x{number}"
        out += ["", f"class {name}:", f"    limit = {rng.randint(2, 99)}", ""]
        for method in range(3):
            out += [
                f"    def {rng.choice(NAMES)}_{method}(self, key, value=None):",
                f"        # keep the {rng.choice(NAMES)} in step with the {rng.choice(NAMES)}",
                f"        if key in self.{rng.choice(NAMES)}:",
                f"            return os.path.join(key, str(value or {rng.randint(2, 99)}))",
                f"        return self.{rng.choice(NAMES)}.get(key, {rng.randint(2, 99)})",
                "",
            ]
    return "\n".join(out) + "\n"


def _evidence_module() -> str:
    return _module(100, classes=2).replace(
        "class ",
        f"class BenderCache:\n    def __init__(self, opts):\n        {LINE}\n"
        "        self.ttl = ttl\n\n\nclass ",
        1,
    )


def _code_base(folder: Path, files: int = 8) -> Path:
    (folder / "backends").mkdir(parents=True)
    for number in range(files):
        (folder / f"mod{number}.py").write_text(_module(number), encoding="utf-8")
    (folder / "backends" / "base.py").write_text(_evidence_module(), encoding="utf-8")
    # the fake needles of the broad question, planted in other backends
    (folder / "backends" / "memcached.py").write_text("RETRY_TTL = 60\nIDLE_TTL = 3600\n", encoding="utf-8")
    return folder


def _anchored(tokenizer: Tokenizer, longest: int) -> AnchoredCorpus:
    others = [Document(f"mod{n}.py", _module(n)) for n in range(8)]
    document = Document("backends/base.py", _evidence_module())
    return anchor_document(document, others, tokenizer, longest, allow_repeat=False, origin="test")


def _builder(tokenizer: Tokenizer, longest: int) -> PromptBuilder:
    main = tokenize_corpus(
        [Document(f"mod{n}.py", _module(n)) for n in range(8)],
        tokenizer,
        longest,
        allow_repeat=False,
        origin="t",
    )
    return PromptBuilder(tokenizer, main, anchors={"backends/base.py": _anchored(tokenizer, longest)})


CASE = Case(
    case_id="ttl",
    task="codebase",
    evidence=(Evidence("line", LINE, "answer", source="backends/base.py"),),
    question="What default value did you notice in the Bender cache?",
    oracle=Oracle(answer="719"),
    guarded=(LINE,),
)


def _reached(prompt: RenderedPrompt, builder: PromptBuilder) -> float:
    frame = builder.frame(CASE.question)
    before = prompt.spans[0].token_start - len(frame.prefix) - len(frame.header)
    return before / prompt.haystack_tokens


@pytest.mark.parametrize("length", [300, 700])
@pytest.mark.parametrize("depth", [0.0, 0.25, 0.5, 0.75, 1.0])
def test_evidence_line_lands_at_the_asked_depth(tokenizer: Tokenizer, length: int, depth: float) -> None:
    builder = _builder(tokenizer, 700)
    prompt = builder.render(CASE, Layout(length, depth))
    (span,) = prompt.spans
    assert tokenizer.decode(prompt.token_ids[span.token_start : span.token_end]).strip() == LINE
    assert prompt.text.count(LINE) == 1
    assert abs(_reached(prompt, builder) - depth) <= builder.depth_tolerance
    assert abs(span.depth - depth) <= builder.depth_tolerance
    assert abs(prompt.prompt_tokens - length) <= builder.tolerance * length
    assert tuple(tokenizer.encode(prompt.text, special=True)) == prompt.token_ids
    assert "719" in prompt.text and "NIBBLER" in prompt.text


def test_the_line_is_filler_around_it_not_an_insertion(tokenizer: Tokenizer) -> None:
    """The lines next to the evidence are its own file's lines, in their order."""
    prompt = _builder(tokenizer, 700).render(CASE, Layout(500, 0.5))
    assert "    def __init__(self, opts):\n        " + LINE + "\n        self.ttl = ttl\n" in prompt.text


def test_verifier_rejects_a_misplaced_span(tokenizer: Tokenizer) -> None:
    builder = _builder(tokenizer, 700)
    layout = Layout(500, 0.5)
    prompt = builder.render(CASE, layout)
    frame = builder.frame(CASE.question)
    (span,) = prompt.spans
    shifted = replace(prompt, spans=(Span("line", span.token_start + 2, span.token_end + 2, span.depth),))
    problems = verify_prompt(shifted, CASE, layout, tokenizer, frame, builder.tolerance)
    assert any("is not at its span" in problem for problem in problems)
    for start, end in ((-1, 0), (0, 1)):  # one token more, of the neighbouring line
        wider = replace(
            prompt, spans=(Span("line", span.token_start + start, span.token_end + end, span.depth),)
        )
        problems = verify_prompt(wider, CASE, layout, tokenizer, frame, builder.tolerance)
        assert any("is not at its span" in problem for problem in problems)
    elsewhere = verify_prompt(prompt, CASE, Layout(500, 0.9), tokenizer, frame, builder.tolerance)
    assert any("sits at depth" in problem for problem in elsewhere)


def test_a_code_base_too_small_for_every_depth_is_bad_input(fake_tokenizer: Tokenizer) -> None:
    with pytest.raises(BadInput, match=r"too little text besides backends/base\.py"):
        anchor_document(
            Document("backends/base.py", _evidence_module()),
            [Document("mod0.py", _module(0, classes=1))],
            fake_tokenizer,
            5000,
            allow_repeat=False,
            origin="test",
        )


def test_a_line_not_in_the_document_fails_placement(fake_tokenizer: Tokenizer) -> None:
    case = replace(CASE, evidence=(Evidence("line", "nowhere = 1", "answer", source="backends/base.py"),))
    with pytest.raises(BadInput, match="0 lines reading 'nowhere = 1'"):
        _builder(fake_tokenizer, 700).render(case, Layout(400, 0.5))


def _experiment(tmp_path: Path, **changes: Any) -> Path:
    root = _code_base(tmp_path / "code")
    data: dict[str, Any] = {
        "name": "codebase-test",
        "model": "fake/lexical",
        "tasks": ["codebase"],
        "lengths": [300, 600],
        "depths": [0.0, 0.5, 1.0],
        "filler": {"kind": "code", "path": str(root)},
        "codebase": {
            "cases": [
                {
                    "id": "ttl",
                    "question": "What NIBBLER ttl did you notice in the Bender cache?",
                    "answer": 719,
                    "decoys": [60, 3600],
                    "evidence": {"file": "backends/base.py", "line_contains": 'opts.get("NIBBLER"'},
                }
            ]
        },
    }
    data.update(changes)
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_codebase_run_places_every_prompt_and_controls_lack_the_file(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", str(_experiment(tmp_path)), "--out", str(out)])
    assert result.exit_code == 0, result.output
    summary = json.loads(CliRunner().invoke(app, ["show", str(out), "--json"]).stdout)
    schema = json.loads(
        resources.files("rotscope").joinpath("schemas", "summary.schema.json").read_text("utf-8")
    )
    jsonschema.validate(summary, schema, cls=jsonschema.Draft202012Validator)
    # 3 depths x 2 lengths, and the evidence-absent control at each length
    assert (summary["items"]["total"], summary["items"]["done"], summary["items"]["errors"]) == (8, 8, 0)
    cells = {(c["length"], c["depth"]): c for c in summary["cells"] if c["task"] == "codebase"}
    assert {key: cell["n"] for key, cell in cells.items() if key[1] != "absent"} == {
        (length, depth): 1 for length in (300, 600) for depth in (0.0, 0.5, 1.0)
    }
    with sqlite3.connect(out / "run.db") as db:
        rows = db.execute("SELECT control, spans, response, outcome FROM items").fetchall()
    for control, spans, response, outcome in rows:
        if control:
            assert json.loads(spans) == [] and outcome in ("abstained", "correct")
        else:
            assert [(span["text"], span["source"]) for span in json.loads(spans)] == [
                (LINE, "backends/base.py")
            ]
            assert outcome == "correct", response


def test_the_evidence_only_control_gives_the_line_alone(tmp_path: Path) -> None:
    """The control runs the evidence line without the code around it; every layout of the case
    and the control agree beyond padding, so nothing is dropped."""
    config = load_config(_experiment(tmp_path, evidence_only=True, controls=False))
    plan = build_plan(config, create_backend(config))
    assert plan.rejected == []
    alone = [item for item in plan.items if item.layout.position == "evidence-only"]
    assert len(alone) == 1 and len(plan.items) == 7
    assert alone[0].prompt.haystack_tokens == 0
    assert [span.evidence_id for span in alone[0].prompt.spans] == ["line"]
    assert LINE in alone[0].prompt.text


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"line_contains": "return"}, "codebase.cases.0.evidence.line_contains"),
        ({"file": "backends/missing.py"}, "codebase.cases.0.evidence.file"),
    ],
)
def test_bad_evidence_reference_is_bad_input(tmp_path: Path, change: dict[str, str], fragment: str) -> None:
    path = _experiment(tmp_path)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["codebase"]["cases"][0]["evidence"].update(change)
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(path), "--dry-run"])
    assert result.exit_code == 2, result.output
    assert fragment in result.stderr and "Traceback" not in result.output


def test_answer_must_be_on_the_evidence_line(tmp_path: Path) -> None:
    path = _experiment(tmp_path)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["codebase"]["cases"][0]["answer"] = 720
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(path), "--dry-run"])
    assert result.exit_code == 2 and "codebase.cases.0.answer" in result.stderr
