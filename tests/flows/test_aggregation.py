"""The ``aggregation`` family: word counts counted again from the rendered prompt text alone, the
lines spread over the region the depth names, set recall scored as RULER's ``string_match_all``
does, its failure categories and partial credit in the summary, its build-time checks, and its
example file run end to end with the fake models."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from rotscope.analysis.summary import load_summary
from rotscope.backends.fake import FakeBackend
from rotscope.config.experiment import build_config, load_config
from rotscope.errors import BadInput
from rotscope.execution.workflows.runner import run_experiment
from rotscope.plan.workitems import build_plan
from rotscope.prompt.placement import region, spread_depths
from rotscope.scoring import SCORERS, score_parts
from rotscope.tasks import get_task
from rotscope.tasks.aggregation import build_aggregation_case, build_aggregation_cases, counts_in
from rotscope.types import Case, Completion, GenerateRequest
from tests.support.cli_helpers import nonsense_corpus
from tests.support.ruler_metric import ruler_string_match_all

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "aggregation.yaml"
ENTRY = re.compile(r"(?:^|\s)\d+\. ([a-z]+)(?=\s|$)")
CODED = re.compile(r"^Coded line \d+: ([a-z ]+)\.$", re.MULTILINE)
TOP = re.compile(r"Which (\d+) (?:coded )?words appear most often")


def _counted(text: str) -> tuple[int, list[tuple[str, int]]]:
    """From a prompt's text alone: how many words are asked for, and every word of the context's
    list or coded lines with its count, most frequent first."""
    context, footer = text.split("<context>", 1)[1].split("</context>", 1)
    asked = TOP.search(footer)
    assert asked is not None
    words: Counter[str] = Counter()
    for line in context.splitlines():
        if line.startswith("Coded line "):
            words.update(CODED.findall(line)[0].split())
        elif re.fullmatch(r"(\d+\. [a-z]+ ?)+", line):
            words.update(ENTRY.findall(line))
    return int(asked.group(1)), words.most_common()


def _config(tmp_path: Path, **fields: Any) -> Any:
    data: dict[str, Any] = {
        "name": "agg",
        "model": "fake/lexical",
        "tasks": ["aggregation"],
        "lengths": [600],
        "depths": [0.0, 0.5, 1.0],
        "filler": {"kind": "text", "glob": str(nonsense_corpus(tmp_path / "corpus") / "*.txt")},
    }
    data.update(fields)
    return build_config(data)


def test_cases_hold_every_subtask_and_gap_equally_with_lines_spread() -> None:
    cases = list(get_task("aggregation").cases())
    assert len(cases) == 16 and len({case.case_id for case in cases}) == 16
    pairs = Counter((dict(case.slices)["subtask"], dict(case.slices)["gap"]) for case in cases)
    assert pairs == {(s, str(g)): 2 for s in ("common_words", "frequent_words") for g in (1, 2, 3, 4)}
    for case in cases:
        assert case.oracle.kind == "set" and len(case.oracle.items) == 3
        assert all(piece.role == "spread" for piece in case.evidence) and len(case.evidence) >= 4
        words = set(case.guarded)
        assert set(case.oracle.items) <= words and not any(w in case.question for w in words)
        # no word inside another: RULER's substring match and the whole-word match agree
        assert not any(a != b and a in b for a in words for b in words)


def test_region_the_depth_names_and_the_spread_of_pieces_over_it() -> None:
    assert region(0.0) == (0.0, 0.5) and region(0.5) == (0.25, 0.75) and region(1.0) == (0.5, 1.0)
    assert spread_depths(5, 0.5) == [0.25, 0.375, 0.5, 0.625, 0.75]
    assert spread_depths(1, 0.0) == [0.25]


def test_answers_recomputed_from_the_rendered_prompt_text_alone(tmp_path: Path) -> None:
    backend = FakeBackend("lexical", lambda request: "")
    plan = build_plan(_config(tmp_path), backend)
    probes = [item for item in plan.items if not item.case.control]
    assert len(probes) == 16 * 3 and not plan.rejections
    tokenizer = backend.tokenizer()
    for item in probes:
        top, ranked = _counted(item.prompt.text)
        slices = dict(item.case.slices)
        assert top == int(slices["top"]) == len(item.case.oracle.items)
        assert {word for word, _ in ranked[:top]} == set(item.case.oracle.items), item.case.case_id
        assert ranked[top - 1][1] - ranked[top][1] == int(slices["gap"]), item.case.case_id
        # every line spanned, in order, within the region the depth names
        texts = {piece.evidence_id: piece.text for piece in item.case.evidence}
        assert len(item.prompt.spans) == len(texts)
        low, high = region(item.layout.depth)
        for span in item.prompt.spans:
            decoded = tokenizer.decode(item.prompt.token_ids[span.token_start : span.token_end])
            assert decoded.strip() == texts[span.evidence_id]
            assert low - 0.1 <= span.depth <= high + 0.1, (item.case.case_id, span.depth, low, high)
        in_order = sorted(item.prompt.spans, key=lambda span: int(span.evidence_id.removeprefix("line-")))
        starts = [span.token_start for span in in_order]
        assert starts == sorted(starts)
    controls = [item for item in plan.items if item.case.control]
    assert len(controls) == 16 and all(_counted(item.prompt.text)[1] == [] for item in controls)


def _case(subtask: str = "common_words", gap: int = 2) -> Case:
    return build_aggregation_case("t", subtask, gap, random.Random(3))


def test_set_recall_is_ruler_string_match_all_on_hand_written_outputs() -> None:
    case = _case()
    a, b, c = case.oracle.items
    runner = next(value for category, value in case.oracle.traps if category == "runner_up")
    outputs = [
        f"The three most common words are: 1. {a} 2. {b} 3. {c}",
        f"{c.upper()}, {a}",
        f"{a}, {runner}, {b}",
        f"Answer: {runner}",
        "not in the context",
        f"{b}\n{c}\n{a}\n",
    ]
    for output in outputs:
        ruler = ruler_string_match_all([output], [list(case.oracle.items)])
        scored = SCORERS.get("set")(case, Completion(text=output), None)
        assert scored.claims is not None and scored.claims.recall is not None
        assert round(scored.claims.recall * 100, 2) == ruler, output
        assert (scored.outcome == "correct") == (ruler == 100.0), output
    mean = sum(
        r.claims.recall for o in outputs if (r := SCORERS.get("set")(case, Completion(text=o), None)).claims
    )
    assert round(mean / len(outputs) * 100, 2) == ruler_string_match_all(
        outputs, [list(case.oracle.items)] * len(outputs)
    )


def test_failure_categories() -> None:
    case = _case("frequent_words", 1)
    a, b, c = case.oracle.items
    runner = next(value for category, value in case.oracle.traps if category == "runner_up")
    rare = next(value for category, value in case.oracle.traps if category == "rare_word")

    def scored(text: str) -> tuple[str, str | None, tuple[str, ...]]:
        result = SCORERS.get("set")(case, Completion(text=text), None)
        assert result.claims is not None
        return result.outcome, result.category, result.claims.missing

    assert scored(f"{c}, {a}, {b}") == ("correct", None, ())
    assert scored(f"{a}, {b}") == ("incorrect", "missed_one", (c,))  # the order of items is no chain
    assert scored(f"{b}, {c}") == ("incorrect", "missed_one", (a,))
    assert scored(f"{a}, {b}, {runner}") == ("incorrect", "runner_up", (c,))
    assert scored(f"{rare}, {a}") == ("incorrect", "rare_word", (b, c))
    assert scored(a) == ("incorrect", "partial", (b, c))
    assert scored("not in the context")[:2] == ("abstained", "abstained")
    assert scored("zzzz")[1] == "wrong_answer"
    control = case.absent_control()
    assert score_parts(control, Completion(text="not in the context"))[0].outcome == "correct"
    assert score_parts(control, Completion(text=a))[0].category == "hallucinated"


def test_build_time_checks_raise_on_bad_data() -> None:
    with pytest.raises(ValueError, match="subtask must be one of"):
        build_aggregation_case("bad", "rare_words", 1, random.Random(0))
    for gap in (0, 5):  # runner-ups at count - gap must outnumber the words seen once (count 6)
        with pytest.raises(ValueError, match="a gap of 1 to count - 2"):
            build_aggregation_case("bad", "common_words", gap, random.Random(0))
    with pytest.raises(ValueError, match="not a line of words"):
        counts_in(["1. abc 2. Def"])
    assert counts_in(["1. abc 2. abd 3. abc", "Coded line 1: qq abc."]) == {"abc": 3, "abd": 1, "qq": 1}
    with pytest.raises(BadInput, match="at most 1000"):
        build_aggregation_cases(1001)


def _partial(request: GenerateRequest) -> str:
    """Counts the words from the prompt and names the most frequent but one: recall (top-1)/top."""
    text = request.messages[-1]["content"]
    top, ranked = _counted(text)
    if not ranked:
        return "not in the context"
    return ", ".join(word for word, _ in ranked[: top - 1])


def test_example_file_runs_with_the_fake_models(tmp_path: Path) -> None:
    overrides = {
        "lengths": [512],
        "limit": 4,
        "model": "fake/lexical",
        "filler": {"kind": "text", "glob": str(nonsense_corpus(tmp_path / "c") / "*.txt")},
    }
    schema = json.loads(
        resources.files("rotscope").joinpath("schemas", "summary.schema.json").read_text(encoding="utf-8")
    )
    for name, backend in (("lexical", None), ("partial", FakeBackend("scripted", _partial))):
        config = load_config(EXAMPLE, overrides)
        summary = load_summary(run_experiment(config, run_dir=tmp_path / name, backend=backend)).model_dump()
        jsonschema.validate(summary, schema, cls=jsonschema.Draft202012Validator)
        assert summary["items"] == {"total": 4 * 3 + 4, "done": 16, "errors": 0, "rejected_prompts": 0}
        cells = sorted((c for c in summary["cells"] if c["task"] == "aggregation"), key=lambda c: c["depth"])
        assert [cell["depth"] for cell in cells] == [0.0, 0.5, 1.0]
        for cell in cells:
            assert sum(cell["categories"].values()) == cell["incorrect"] + cell["abstained"]
            # the region the lines reached lies around the one the depth names
            low, high = region(cell["depth"])
            assert low - 0.1 <= cell["region"][0] < cell["region"][1] <= high + 0.1
            if name == "partial":
                assert cell["categories"] == {"missed_one": 4}
                assert cell["mean_recall"] == pytest.approx(2 / 3) and cell["correct"] == 0
            else:  # no list line shares two words with the question; a coded line does (one of its)
                assert cell["correct"] == 0 and cell["categories"]["abstained"] == 2
                assert 0.0 < cell["mean_recall"] < 1.0
        # the regions move with the depth: half the haystack from beginning to end
        assert all(cells[2]["region"][i] - cells[0]["region"][i] >= 0.4 for i in (0, 1))
        (control,) = summary["controls"]
        assert control["n"] == 4
