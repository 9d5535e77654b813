"""The reasoning family end to end with the fake tokenizer and fake backends: filler streams that
never hold their target, layouts with the right number of verified copies, final-answer scoring,
interference categories, and the summary's drops and shares."""

from __future__ import annotations

import itertools
import json
import re
import sqlite3
from dataclasses import replace
from decimal import Decimal
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from rich.console import Console

from rotscope import load_summary
from rotscope.backends.fake import FakeBackend
from rotscope.config.experiment import ExperimentConfig, build_config
from rotscope.errors import BadInput
from rotscope.execution.workflows.runner import run_experiment
from rotscope.plan.workitems import build_plan
from rotscope.prompt.builder import PromptBuilder
from rotscope.prompt.frame import evidence_unit
from rotscope.prompt.verify import verify_prompt
from rotscope.report.html import render_report
from rotscope.report.terminal import print_summary
from rotscope.scoring.deterministic import final_choice, final_number, score_final_answer, score_parts
from rotscope.tasks.reasoning.analysis import interference as _interference
from rotscope.tasks.reasoning.analysis import layout_drops as _layout_drops
from rotscope.tasks.reasoning.family import TARGET_LABEL, load_pool
from rotscope.tasks.reasoning.options import ReasoningConfig
from rotscope.types import Completion, GenerateRequest, Oracle, WorkItem

LENGTHS = [400, 700]
BACKEND = FakeBackend("quiet", lambda request: "")
TOKENIZER = BACKEND.tokenizer()  # ids are assigned on first sight: one tokenizer for the module


def _config(**reasoning: Any) -> ExperimentConfig:
    settings = {"items": 4, "fillers": ["with_solutions", "questions_only"], **reasoning}
    return build_config(
        {"model": "fake/lexical", "tasks": ["reasoning"], "lengths": LENGTHS, "reasoning": settings}
    )


@pytest.fixture(scope="module")
def plan_items() -> list[WorkItem]:
    plan = build_plan(_config(), BACKEND)
    assert plan.rejected == []
    return plan.items


def _outside_targets(item: WorkItem) -> str:
    """The prompt's text outside every copy of the target."""
    text = item.prompt.text
    for evidence in item.case.evidence:
        text = text.replace(evidence.text, "")
    return text


def test_plan_crosses_items_fillers_layouts_and_lengths(plan_items: list[WorkItem]) -> None:
    cells = {(i.case.case_id, i.layout.filler, i.layout.position, i.layout.length_tokens) for i in plan_items}
    assert len(cells) == len(plan_items) == 4 * 2 * 4 * len(LENGTHS)
    for item in plan_items:
        assert abs(item.prompt.prompt_tokens - item.layout.length_tokens) <= 0.05 * item.layout.length_tokens


def test_target_never_appears_in_its_own_filler(plan_items: list[WorkItem]) -> None:
    pool = load_pool(ReasoningConfig(items=4), seed=0)
    for target in pool.targets:
        stream = list(itertools.islice(pool.stream(target), 50))
        assert target.item_id not in {item.item_id for item in stream}
    for item in plan_items:
        question = target_text_of(item)
        outside = _outside_targets(item)
        assert question not in outside
        assert TARGET_LABEL not in outside.replace(f"marked {TARGET_LABEL} in", "")


def target_text_of(item: WorkItem) -> str:
    return item.case.evidence[0].text.removeprefix(f"{TARGET_LABEL}: ")


def test_file_pool_stream_skips_only_the_target(tmp_path: Path) -> None:
    path = tmp_path / "gsm8k.jsonl"
    records = [{"question": f"Problem number {n}?", "answer": f"#### {n}"} for n in range(1, 9)]
    path.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    pool = load_pool(ReasoningConfig(source="gsm8k", path=str(path), items=3), seed=1)
    assert len(pool.targets) == 3 and len(pool.others) == 5
    for target in pool.targets:
        stream = [item.item_id for item in pool.stream(target)]
        assert target.item_id not in stream
        assert len(stream) == 7  # every other item, the other targets last
        assert stream[:5] == [item.item_id for item in pool.others]


def _spans_ok(item: WorkItem) -> None:
    """Each span decodes to its copy, as the verifier checks."""
    tokenizer = TOKENIZER
    texts = {e.evidence_id: e for e in item.case.evidence}
    for span in item.prompt.spans:
        found = tokenizer.decode(item.prompt.token_ids[span.token_start : span.token_end])
        assert found in (
            evidence_unit(texts[span.evidence_id], True),
            evidence_unit(texts[span.evidence_id], False),
        )


def test_layouts_hold_the_right_copies_at_the_right_depths(plan_items: list[WorkItem]) -> None:
    for item in plan_items:
        copies = item.prompt.text.count(item.case.evidence[0].text)
        depths = sorted(span.depth for span in item.prompt.spans)
        _spans_ok(item)
        layout = item.layout.position
        content = item.prompt.messages[-1]["content"]
        before_footer = content.split("\n</context>")[0]
        if layout == "end":
            assert copies == 1 and depths == [1.0]
            assert before_footer.endswith(item.case.evidence[0].text)
        elif layout == "middle":
            assert copies == 1 and abs(depths[0] - 0.5) <= 0.1
        elif layout == "middle_twice":
            assert copies == 2 and len(depths) == 2
            assert all(abs(depth - 0.5) <= 0.1 for depth in depths)
            assert not before_footer.endswith(item.case.evidence[0].text)  # none at the end
        else:
            assert layout == "middle_dup"
            assert copies == 2 and abs(depths[0] - 0.5) <= 0.1 and depths[1] == 1.0
            assert before_footer.endswith(item.case.evidence[0].text)


def test_question_and_instruction_are_identical_in_every_layout(plan_items: list[WorkItem]) -> None:
    footers = {item.prompt.messages[-1]["content"].split("</context>")[1] for item in plan_items}
    assert len(footers) == 1
    assert "Answer: <number>" in footers.pop()


def test_verifier_counts_intended_copies(plan_items: list[WorkItem]) -> None:
    tokenizer = TOKENIZER
    item = next(i for i in plan_items if i.layout.position == "middle_dup")
    frame = PromptBuilder(tokenizer, None).case_frame(item.case)  # type: ignore[arg-type]
    assert verify_prompt(item.prompt, item.case, item.layout, tokenizer, frame, 0.05) == []
    # The same prompt judged as a one-copy case: two occurrences are one too many.
    one_copy = replace(item.case, evidence=item.case.evidence[:1])
    problems = verify_prompt(item.prompt, one_copy, item.layout, tokenizer, frame, 0.05)
    assert any("occurs 2 times in the prompt, the case places it 1 times" in p for p in problems), problems
    # A third copy smuggled into the filler is rejected.
    extra = item.case.evidence[0].text
    ids = list(item.prompt.token_ids)
    insert_at = item.prompt.spans[0].token_start
    ids[insert_at:insert_at] = tokenizer.encode("\n" + extra)
    tampered = replace(item.prompt, token_ids=tuple(ids), text=tokenizer.decode(ids))
    problems = verify_prompt(tampered, item.case, item.layout, tokenizer, frame, 0.2)
    assert any("occurs 3 times" in p for p in problems), problems


def test_filler_answer_traps_are_the_answers_visible_in_the_window(plan_items: list[WorkItem]) -> None:
    for item in plan_items:
        answers = [value for category, value in item.case.oracle.traps if category == "filler_answer"]
        assert item.case.oracle.answer not in answers
        if item.layout.filler == "with_solutions":
            shown = set(re.findall(r"^Answer: (\d+)$", _outside_targets(item), flags=re.MULTILINE))
            assert shown - {item.case.oracle.answer} <= set(answers)
        assert answers, "every window holds some filler item"


# --- scoring -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Answer: 42", Decimal(42)),
        ("Let me think. 3 + 4 = 7\nAnswer: $1,234.", Decimal(1234)),
        ("Answer: 5 + 3 = 8", Decimal(8)),
        ("answer: 7\nwait, Answer: -3", Decimal(-3)),
        ("**Answer:** 19", Decimal(19)),
        ("156", Decimal(156)),
        ("The final answer is 12.", Decimal(12)),
        ("I think it is 12", None),
        ("Answers vary: 12", None),
        ("Answer: unknown", None),
        ("", None),
    ],
)
def test_final_number(reply: str, expected: Decimal | None) -> None:
    assert final_number(reply) == expected


@pytest.mark.parametrize(
    ("reply", "expected"),
    [("Answer: B", "B"), ("Answer: (C) helium", "C"), ("B", "B"), ("(2)", "2"), ("I pick B", None)],
)
def test_final_choice(reply: str, expected: str | None) -> None:
    assert final_choice(reply) == expected


def test_score_final_answer_categories() -> None:
    oracle = Oracle("47", traps=(("filler_answer", "29"), ("filler_answer", "101")), kind="number")
    filler = "Problem: Voge has 23 fomis.\nStep 1: 23 * 3 = 69\nAnswer: 101"

    def outcome(reply: str) -> tuple[str, str | None]:
        result = score_final_answer(oracle, Completion(reply), filler)
        return result.outcome, result.category

    assert outcome("Answer: 47") == ("correct", None)
    assert outcome("Answer: 47.0") == ("correct", None)
    assert outcome("Answer: 101") == ("incorrect", "filler_answer")
    assert outcome("Answer: 69") == ("incorrect", "filler_number")
    assert outcome("Answer: 5") == ("incorrect", "wrong_answer")
    assert outcome("I think it is about 40") == ("incorrect", "format")
    assert outcome("I don't know") == ("abstained", "abstained")
    assert score_final_answer(oracle, Completion("", error="boom")).outcome == "error"
    choice = Oracle("B", kind="choice")
    assert score_final_answer(choice, Completion("Answer: B")).outcome == "correct"
    assert score_final_answer(choice, Completion("Answer: C")).category == "wrong_answer"


def test_numbers_in_the_target_itself_are_not_filler_numbers(plan_items: list[WorkItem]) -> None:
    checked = 0
    for item in plan_items:
        outside = set(re.findall(r"\d+", _outside_targets(item)))
        traps = {value for _, value in item.case.oracle.traps}
        for number in re.findall(r"\d+", item.case.evidence[0].text):
            if number in outside or number in traps or number == item.case.oracle.answer:
                continue
            result = score_parts(item.case, Completion(f"Answer: {number}"), item.prompt.filler_text())
            assert result[0].category == "wrong_answer"
            checked += 1
    assert checked > 0


# --- summary -----------------------------------------------------------------------------------


def _solve(problem: str) -> int:
    """A test-only solver for the generated problems' five sentence shapes."""
    value = 0
    for sentence in re.split(r"(?<=[.?])\s", problem):
        if found := re.search(r"has (\d+) ", sentence):
            value = int(found.group(1))
        elif found := re.search(r"finds (\d+) more", sentence):
            value += int(found.group(1))
        elif found := re.search(r"gives (\d+) away", sentence):
            value -= int(found.group(1))
        elif "pile doubles" in sentence:
            value *= 2
        elif "pile triples" in sentence:
            value *= 3
        elif found := re.search(r"into (\d+) equal heaps", sentence):
            value //= int(found.group(1))
    return value


def end_reader(request: GenerateRequest) -> str:
    """Solves the target when it is the last thing in the context; otherwise repeats the answer of
    the filler item just before the target's first copy (a filler-interference error)."""
    context = request.messages[-1]["content"].split("<context>\n", 1)[1].split("\n</context>", 1)[0]
    target = next(line for line in context.splitlines() if line.startswith(TARGET_LABEL))
    if context.endswith(target):
        return f"Answer: {_solve(target)}"
    before = context[: context.index(target)]
    previous = re.findall(r"Answer: (\d+)", before)[-1]
    return f"Answer: {previous}"


def test_summary_reports_layout_cells_drops_and_interference(tmp_path: Path) -> None:
    config = build_config(
        {
            "model": "fake/lexical",
            "tasks": ["reasoning"],
            "lengths": [500],
            "reasoning": {"items": 4, "fillers": ["with_solutions"]},
        }
    )
    run_dir = run_experiment(config, run_dir=tmp_path / "run", backend=FakeBackend("end", end_reader))
    typed = load_summary(run_dir)
    summary = typed.model_dump()
    schema = json.loads(
        resources.files("rotscope").joinpath("schemas", "summary.schema.json").read_text(encoding="utf-8")
    )
    jsonschema.validate(summary, schema, cls=jsonschema.Draft202012Validator)

    cells = {cell["layout"]: cell for cell in summary["cells"]}
    assert set(cells) == {"end", "middle", "middle_twice", "middle_dup"}
    for layout, cell in cells.items():
        assert cell["depth"] == layout and cell["filler"] == "with_solutions" and cell["n"] == 4
    assert cells["end"]["accuracy"] == cells["middle_dup"]["accuracy"] == 1.0
    assert cells["middle"]["accuracy"] == cells["middle_twice"]["accuracy"] == 0.0

    reasoning = summary["tasks"][0]["reasoning"]
    drops = {drop["layout"]: drop for drop in reasoning["drops"]}
    assert drops["middle"]["drop"] == 1.0 and drops["middle"]["pairs"] == 4
    assert drops["middle_dup"]["drop"] == 0.0
    shares = {entry["layout"]: entry for entry in reasoning["interference"]}
    assert shares["middle"]["wrong"] == 4 and shares["middle"]["filler_answer"] == 4
    assert shares["middle"]["share_filler"] == 1.0
    assert shares["end"]["wrong"] == 0 and shares["end"]["share_filler"] is None
    assert summary["tasks"][0]["position_effect"] == []  # layouts at one depth are not pooled

    console = Console(record=True, width=200)
    print_summary(typed, console)
    shown = console.export_text()
    assert "with_solutions · middle_twice" in shown  # a heatmap row per filler type and layout
    assert re.search(r"length +500 with_solutions +middle +end 1\.00 vs 0\.00; drop \+1\.00", shown), shown
    # at 80 and 100 columns a line breaks after its clause, never inside an interval or a word
    for width in (80, 100):
        narrow = Console(record=True, width=width)
        print_summary(typed, narrow)
        text = narrow.export_text()
        assert max(len(line) for line in text.splitlines() if "drop" in line) <= width
        wrapped = r"vs 0\.00;\n +drop \+1\.00 on 4 pairs \(too few pairs for an interval\)"
        assert re.search(wrapped, text), text
    assert re.search(
        r"with_solutions +middle +4 wrong: filler answer 4.*-> 4 of 4 wrong answers from the filler \(100%\)",
        shown,
    ), shown

    html = render_report(run_dir)
    assert "Drop from the end layout" in html and "Wrong answers traced to the filler" in html


def _row(
    case: str, layout: str, outcome: str, category: str | None = None, length: int = 512
) -> dict[str, Any]:
    return {
        "case_id": case, "instance_id": case, "position": layout, "filler": "questions_only",
        "length_target": length, "status": "ok", "outcome": outcome, "category": category,
    }  # fmt: skip


def test_drop_is_paired_on_items_run_in_both_layouts() -> None:
    rows = [_row(f"c{n}", "end", "correct") for n in range(6)]
    rows += [_row(f"c{n}", "middle", "correct" if n < 2 else "incorrect", "wrong_answer") for n in range(5)]
    (drop,) = _layout_drops(rows)
    assert drop["pairs"] == 5  # c5 ran only at the end
    assert drop["drop"] == pytest.approx(3 / 5)
    assert (drop["end_accuracy"], drop["layout_accuracy"]) == (1.0, pytest.approx(2 / 5))
    assert drop["ci_low"] <= drop["drop"] <= drop["ci_high"]


def test_drops_of_cases_sharing_haystacks_cluster_on_the_variant_and_say_so() -> None:
    # 12 cases in 3 shared haystack variants: the drop's interval clusters on the 3 variants (the
    # one rule of rotscope.types.clusters) and its method names them; one haystack per case keeps
    # the adjusted t on the cases.
    def rows(variants: int) -> list[dict[str, Any]]:
        out = [{**_row(f"c{n}", "end", "correct"), "haystack_variant": n % variants} for n in range(12)]
        out += [
            {**_row(f"c{n}", "middle", "correct" if n % 2 else "incorrect"), "haystack_variant": n % variants}
            for n in range(12)
        ]
        return out

    (shared,) = _layout_drops(rows(3))
    (own,) = _layout_drops(rows(12))
    assert shared["method"] == "cluster adjusted t, clustered on 3 haystack variants"
    assert own["method"] == "adjusted t"
    assert shared["drop"] == own["drop"] == pytest.approx(0.5)
    # Each variant (n % 3) holds two drops of 1 and two of 0: 3 clusters on about 2 degrees of
    # freedom give a wider interval than the 12 cases (half-widths about 0.41 and 0.36).
    assert shared["ci_high"] - shared["ci_low"] > own["ci_high"] - own["ci_low"]


def test_interference_shares_count_only_wrong_answers_with_a_number() -> None:
    rows = [
        _row("a", "middle", "incorrect", "filler_answer"),
        _row("b", "middle", "incorrect", "filler_number"),
        _row("c", "middle", "incorrect", "wrong_answer"),
        _row("d", "middle", "incorrect", "format"),
        _row("e", "middle", "correct"),
        _row("f", "end", "incorrect", "wrong_answer"),
    ]
    middle, end = sorted(_interference(rows), key=lambda entry: entry["layout"] != "middle")
    assert (middle["wrong"], middle["unparsed"], middle["other"]) == (4, 1, 1)
    assert middle["share_filler"] == pytest.approx(2 / 3)
    assert middle["share_filler_answer"] == pytest.approx(1 / 3)
    assert (end["layout"], end["share_filler"]) == ("end", 0.0)


def test_config_errors_are_one_line_bad_input() -> None:
    with pytest.raises(BadInput, match=r"reasoning\.path"):
        _config(source="gsm8k")
    with pytest.raises(BadInput, match=r"reasoning\.layouts"):
        _config(layouts=["start"])


def test_reasoning_cells_over_the_error_cap_are_named_by_filler_and_layout(tmp_path: Path) -> None:
    """The error-cap warning names reasoning cells by filler and layout (their depth is a name)."""
    config = build_config(
        {
            "model": "fake/lexical",
            "tasks": ["reasoning"],
            "lengths": [500],
            "reasoning": {"items": 4, "fillers": ["with_solutions"]},
        }
    )
    run_dir = run_experiment(config, run_dir=tmp_path / "run", backend=FakeBackend("end", end_reader))
    with sqlite3.connect(run_dir / "run.db") as db:
        db.execute(
            "UPDATE items SET status = 'error', outcome = 'error', error = 'x' WHERE position = 'middle'"
        )
    typed = load_summary(run_dir)
    summary = typed.model_dump()
    schema = json.loads(
        resources.files("rotscope").joinpath("schemas", "summary.schema.json").read_text(encoding="utf-8")
    )
    jsonschema.validate(summary, schema, cls=jsonschema.Draft202012Validator)
    assert summary["error_cap"]["exceeded"]
    assert [cell["depth"] for cell in summary["error_cap"]["cells_over"]] == ["middle"]
    console = Console(record=True, width=300)
    print_summary(typed, console)
    assert "reasoning 500 at with_solutions · middle (100%)" in console.export_text()
    assert "reasoning 500 @ with_solutions · middle (100%)" in render_report(run_dir)
