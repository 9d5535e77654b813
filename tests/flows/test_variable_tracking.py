"""The ``variable_tracking`` family: chains resolved again from the rendered prompt text alone, set
recall scored as RULER's ``string_match_all`` does, its failure categories, its build-time checks,
and its example file run end to end with the fake models."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from rotscope.analysis.summary import load_summary
from rotscope.backends.fake import FakeBackend
from rotscope.config.experiment import build_config, load_config
from rotscope.execution.workflows.runner import run_experiment
from rotscope.plan.workitems import build_plan
from rotscope.scoring import SCORERS, score_parts
from rotscope.scoring.sets import recall
from rotscope.tasks import get_task
from rotscope.tasks.variable_tracking import build_chain_case, holders
from rotscope.types import Case, Completion, GenerateRequest
from tests.support.cli_helpers import nonsense_corpus
from tests.support.ruler_metric import ruler_string_match_all

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "variable_tracking.yaml"
LINE = re.compile(r"^VAR ([A-Z]+) = (?:VAR ([A-Z]+)|(\d+))$", re.MULTILINE)


def _cases() -> list[Case]:
    return list(get_task("variable_tracking").cases())


def _resolve(text: str) -> tuple[str, set[str]]:
    """The asked value and every variable holding it, from a prompt's text alone."""
    context = text.split("<context>", 1)[1].split("</context>", 1)[0]
    value = re.search(r"assigned the value (\d+)", text.split("</context>", 1)[1])
    assert value is not None
    source = {name: ref or number for name, ref, number in LINE.findall(context)}
    held: set[str] = set()
    while True:
        grown = {name for name, src in source.items() if src == value.group(1) or src in held}
        if grown == held:
            return value.group(1), held
        held = grown


def _config(tmp_path: Path, **fields: object) -> object:
    data: dict[str, object] = {
        "name": "vt",
        "model": "fake/lexical",
        "tasks": ["variable_tracking"],
        "lengths": [700],
        "depths": [0.0, 0.5, 1.0],
        "filler": {"kind": "text", "glob": str(nonsense_corpus(tmp_path / "corpus") / "*.txt")},
        "placement": {"support": "before", "distance": 0.1},
    }
    data.update(fields)
    return build_config(data)


def test_cases_cover_every_hop_count_and_chain_count_with_one_piece_per_assignment() -> None:
    cases = _cases()
    assert len(cases) == 12 and len({case.case_id for case in cases}) == 12
    assert {(dict(case.slices)["hops"], dict(case.slices)["chains"]) for case in cases} == {
        (str(h), str(c)) for h in range(1, 5) for c in range(1, 4)
    }
    for case in cases:
        hops, chains = int(dict(case.slices)["hops"]), int(dict(case.slices)["chains"])
        assert len(case.evidence) == chains * (hops + 1)
        assert all(LINE.fullmatch(piece.text) for piece in case.evidence)
        assert [piece.role for piece in case.evidence].count("answer") == 1
        assert len(case.oracle.items) == hops + 1 and case.oracle.kind == "set"
        assert set(case.oracle.items) <= set(case.guarded)


def test_answers_recomputed_from_the_rendered_prompt_text_alone(tmp_path: Path) -> None:
    config = _config(tmp_path)
    backend = FakeBackend("lexical", lambda request: "")
    plan = build_plan(config, backend)  # type: ignore[arg-type]
    probes = [item for item in plan.items if not item.case.control]
    assert len(probes) == 12 * 3 and not plan.rejections
    tokenizer = backend.tokenizer()
    for item in probes:
        _, names = _resolve(item.prompt.text)
        assert names == set(item.case.oracle.items), item.case.case_id
        # every assignment is spanned on its own, at a depth of its own recorded
        assert len(item.prompt.spans) == len(item.case.evidence)
        texts = {piece.evidence_id: piece.text for piece in item.case.evidence}
        for span in item.prompt.spans:
            decoded = tokenizer.decode(item.prompt.token_ids[span.token_start : span.token_end])
            assert decoded.strip() == texts[span.evidence_id]
        answer = next(p.evidence_id for p in item.case.evidence if p.role == "answer")
        assert (
            abs(next(s.depth for s in item.prompt.spans if s.evidence_id == answer) - item.layout.depth)
            <= 0.1
        )
    controls = [item for item in plan.items if item.case.control]
    assert controls and all(not LINE.search(item.prompt.text) for item in controls)


RULER_OUTPUTS = [
    "The variables are: ANPPE, JWJFV, YGCNZ.",
    "ANPPE, JWJFV",
    "  ygcnz anppe",
    "Answer: 79652",
    "None of them.",
    "VAR ANPPE = 79652\nVAR JWJFV = VAR ANPPE\nVAR YGCNZ = VAR JWJFV",
]


def test_set_recall_is_ruler_string_match_all_on_hand_written_outputs() -> None:
    case = build_chain_case("ruler", 2, 1, random.Random(0))
    # the outputs above name the chain ANPPE -> JWJFV -> YGCNZ: put them in a case of that chain
    items = ("ANPPE", "JWJFV", "YGCNZ")
    case = Case(case.case_id, case.task, case.evidence, case.question,
                type(case.oracle)(answer=", ".join(items), kind="set", items=items))  # fmt: skip
    for output in RULER_OUTPUTS:
        ruler = ruler_string_match_all([output], [list(items)])
        assert round(recall(output, items) * 100, 2) == ruler, output
        scored = SCORERS.get("set")(case, Completion(text=output), None)
        assert (scored.outcome == "correct") == (ruler == 100.0), output
        # the partial credit the row keeps (and the summary averages) is RULER's per-sample score
        assert scored.claims is not None and scored.claims.recall is not None
        assert round(scored.claims.recall * 100, 2) == ruler, output
    mean = sum(recall(output, items) for output in RULER_OUTPUTS) / len(RULER_OUTPUTS)
    assert round(mean * 100, 2) == ruler_string_match_all(RULER_OUTPUTS, [list(items)] * len(RULER_OUTPUTS))


def test_failure_categories_and_partial_credit() -> None:
    case = build_chain_case("cat", 3, 2, random.Random(7))
    names = case.oracle.items
    value = case.question.split("value ")[1].split(",")[0]
    distractor = next(v for c, v in case.oracle.traps if c == "distractor_chain")

    def scored(text: str) -> tuple[str, str | None, tuple[str, ...]]:
        result = SCORERS.get("set")(case, Completion(text=text), None)
        assert result.claims is not None
        return result.outcome, result.category, result.claims.missing

    assert scored(", ".join(reversed(names))) == ("correct", None, ())
    assert scored(", ".join(names[:-1])) == ("incorrect", "missed_last_hop", (names[-1],))
    assert scored(", ".join(names[1:])) == ("incorrect", "missed_one", (names[0],))
    assert scored(f"{', '.join(names[:-1])}, {distractor}")[1] == "distractor_chain"
    assert scored(f"{distractor}") == ("incorrect", "distractor_chain", names)
    assert scored(f"{names[0]}, {distractor}")[1] == "distractor_chain"
    assert scored(value) == ("incorrect", "value_not_name", names)
    assert scored(f"{names[1]} and {names[2]}") == ("incorrect", "partial", (names[0], names[3]))
    assert scored("not in the context")[:2] == ("abstained", "abstained")
    assert scored(f"{', '.join(names)}; but it is not in the context")[1] == "hedged"
    assert SCORERS.get("set")(case, Completion(text="", error="boom"), None).outcome == "error"
    control = case.absent_control()
    assert score_parts(control, Completion(text="not in the context"))[0].outcome == "correct"
    assert score_parts(control, Completion(text=names[0]))[0].category == "hallucinated"


def test_build_time_checks_raise_on_bad_data() -> None:
    with pytest.raises(ValueError, match="hops must be 1-4"):
        build_chain_case("bad", 5, 1, random.Random(0))
    with pytest.raises(ValueError, match="hops must be 1-4"):
        build_chain_case("bad", 0, 1, random.Random(0))
    with pytest.raises(ValueError, match="assigned twice"):
        holders(["VAR ABCDE = 12345", "VAR ABCDE = 54321"], "12345")
    with pytest.raises(ValueError, match="not an assignment"):
        holders(["ABCDE := 12345"], "12345")
    assert holders(["VAR BBBBB = VAR AAAAA", "VAR AAAAA = 12345", "VAR CCCCC = 99999"], "12345") == {
        "AAAAA",
        "BBBBB",
    }


def _solver(request: GenerateRequest) -> str:
    """A model that resolves the chain from the prompt text (the right answer by construction)."""
    text = request.messages[-1]["content"]
    if not LINE.search(text):
        return "not in the context"
    return ", ".join(sorted(_resolve(text)[1]))


def test_example_file_runs_with_the_fake_models(tmp_path: Path) -> None:
    overrides = {
        "lengths": [512],
        "limit": 4,
        "filler": {"kind": "text", "glob": str(nonsense_corpus(tmp_path / "c") / "*.txt")},
    }
    for name, backend in (("lexical", None), ("solver", FakeBackend("scripted", _solver))):
        config = load_config(EXAMPLE, {**overrides, "model": "fake/lexical"})
        run_dir = run_experiment(config, run_dir=tmp_path / name, backend=backend)
        summary = load_summary(run_dir).model_dump()
        assert summary["items"] == {"total": 4 * 3 + 4, "done": 16, "errors": 0, "rejected_prompts": 0}
        cells = [cell for cell in summary["cells"] if cell["task"] == "variable_tracking"]
        assert sorted(cell["depth"] for cell in cells) == [0.0, 0.5, 1.0]
        for cell in cells:
            assert sum(cell["categories"].values()) == cell["incorrect"] + cell["abstained"]
            if name == "solver":
                assert (cell["correct"], cell["n"], cell["mean_recall"]) == (4, 4, 1.0)
            else:  # the string matcher finds no line sharing two words with the question
                assert (cell["categories"], cell["mean_recall"]) == ({"abstained": 4}, 0.0)
