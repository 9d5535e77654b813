"""The ``coreference`` family (MRCR style): the asked reply found again by ordinal from the rendered
prompt text alone, every request and reply of the pair spanned at its depth, the reply scorer's
categories and MRCR's similarity ratio on hand-written replies, the build-time checks, and the
example file run end to end through the command line with fake models."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import replace
from difflib import SequenceMatcher
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
from rotscope.scoring import SCORERS, score_parts
from rotscope.tasks import get_task
from rotscope.tasks.coreference import build_conversations
from rotscope.tasks.coreference.content import build_conversation, ordinal
from rotscope.tasks.coreference.layout import ordinal_problems
from rotscope.types import Case, Completion, GenerateRequest
from tests.support.cli_helpers import invoke

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "coreference.yaml"
TURN = re.compile(r"<\|(system|user|assistant)\|>\n")
ASKED = re.compile(
    r"Prepend the code (\w+) to the (\d+)(?:st|nd|rd|th) (.+?) about (\w+) in this conversation"
)


def _turns(text: str) -> list[tuple[str, str]]:
    """(role, content) of each turn of a prompt in the fake tokenizer's template, read from the
    text alone (``<|role|>`` lines open a turn; a content ends with one line break)."""
    parts = TURN.split(text)
    return [
        (role, content.removesuffix("\n")) for role, content in zip(parts[1::2], parts[2::2], strict=True)
    ]


def _answer(text: str) -> tuple[str, str | None, list[str]]:
    """From a prompt's text alone: the code asked for, the reply after the asked request (``None``
    when the chat holds no request for the pair), and the replies to all the pair's requests."""
    turns = _turns(text)
    asked = ASKED.search(turns[-2][1])  # the last user turn (the generation prompt follows it)
    assert asked is not None, turns[-2]
    code, number, form, topic = asked.group(1), int(asked.group(2)), asked.group(3), asked.group(4)
    pattern = re.compile(rf"\b{re.escape(form)} about {re.escape(topic)}\b")
    replies = [
        turns[i + 1][1]
        for i, (role, content) in enumerate(turns[:-2])
        if role == "user" and pattern.search(content) and turns[i + 1][0] == "assistant"
    ]
    return code, replies[number - 1] if len(replies) >= number else None, replies


def _config(**fields: Any) -> Any:
    data: dict[str, Any] = {
        "name": "coref",
        "model": "fake/lexical",
        "tasks": ["coreference"],
        "lengths": [640],
        "depths": [0.0, 0.5, 1.0],
        "limit": 6,
    }
    data.update(fields)
    return build_config(data)


def test_cases_rotate_the_ordinal_and_name_the_pair_in_the_question() -> None:
    cases = list(get_task("coreference").cases())
    assert len(cases) == 16 and len({case.case_id for case in cases}) == 16
    assert Counter(dict(case.slices)["ordinal"] for case in cases) == {"1": 6, "2": 5, "3": 5}
    for case in cases:
        assert case.oracle.kind == "reply" and case.guarded == case.oracle.items
        roles = [piece.role for piece in case.evidence]
        assert roles.count("answer") == 1 and roles.count("decoy") == 2 and roles.count("support") == 3
        replies = [piece.text for piece in case.evidence if piece.turn == "assistant"]
        number = int(dict(case.slices)["ordinal"])
        assert replies[number - 1] == case.oracle.answer
        assert {value for _, value in case.oracle.traps} == set(replies) - {case.oracle.answer}
        assert f"the {ordinal(number)} " in case.question and case.oracle.items[0] in case.question
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd",
    ]  # fmt: skip


def test_the_asked_reply_recomputed_from_the_rendered_prompt_text_alone() -> None:
    backend = FakeBackend("lexical", lambda request: "")
    plan = build_plan(_config(), backend)
    assert not plan.rejections, plan.rejected
    probes = [item for item in plan.items if not item.case.control]
    assert len(probes) == 6 * 3
    tokenizer = backend.tokenizer()
    for item in probes:
        case, prompt = item.case, item.prompt
        code, found, replies = _answer(prompt.text)
        assert (code, found) == (case.oracle.items[0], case.oracle.answer), case.case_id
        assert len(replies) == 3 and len(set(replies)) == 3
        number = int(dict(case.slices)["ordinal"])
        # every request and reply of the pair is its span's exact text, a whole turn
        spans = {span.evidence_id: span for span in prompt.spans}
        assert len(spans) == 6
        for piece in case.evidence:
            span = spans[piece.evidence_id]
            assert tokenizer.decode(prompt.token_ids[span.token_start : span.token_end]) == piece.text
        assert [spans[f"reply-{n}"].token_start for n in (1, 2, 3)] == sorted(
            spans[f"reply-{n}"].token_start for n in (1, 2, 3)
        )
        # the asked reply at the layout's depth; the competitors on their sides of it
        asked = spans[f"reply-{number}"]
        assert abs(asked.depth - item.layout.depth) <= 0.1, (case.case_id, item.layout, asked.depth)
        assert all(spans[f"reply-{n}"].depth <= asked.depth for n in range(1, number))
        assert all(spans[f"reply-{n}"].depth >= asked.depth for n in range(number + 1, 4))
        assert abs(len(prompt.token_ids) - item.layout.length_tokens) <= 0.05 * item.layout.length_tokens
        # the neighbours are the replies of the exchanges around the asked one
        turns = _turns(prompt.text)
        at = next(i for i, turn in enumerate(turns) if turn == ("assistant", case.oracle.answer))
        around = {
            turns[i][1] for i in (at - 2, at + 2) if 0 <= i < len(turns) - 2 and turns[i][0] == "assistant"
        }
        traps = {value for _, value in case.oracle.traps}
        assert around <= traps and traps <= set(replies) - {case.oracle.answer} | around
    controls = [item for item in plan.items if item.case.control]
    assert len(controls) == 6
    for item in controls:
        assert item.case.oracle.abstain and not item.prompt.spans
        assert _answer(item.prompt.text)[1:] == (None, [])


def _case() -> Case:
    return build_conversation("t", 2).case


def _mrcr_grade(response: str, answer: str, prefix: str) -> float:
    """MRCR's published grader: 0 without the prefix, else difflib's ratio after it."""
    if not response.startswith(prefix):
        return 0.0
    return SequenceMatcher(None, response.removeprefix(prefix), answer.removeprefix(prefix)).ratio()


def test_reply_scoring_on_hand_written_replies() -> None:
    case = _case()
    code, target = case.oracle.items[0], case.oracle.answer
    first, third = (value for category, value in case.oracle.traps if category == "wrong_ordinal")
    neighbour = "Dear Zorba, the quillets painted our amber drum today."
    case = replace(case, oracle=replace(case.oracle, traps=(*case.oracle.traps, ("neighbour", neighbour))))
    replies = {
        f"{code}\n{target}": ("correct", None),
        f"{code} {target.replace(chr(10), '  ')}\n": ("correct", None),
        target: ("incorrect", "missing_prefix"),
        f"{code}\n{target[: len(target) * 9 // 10]}": ("incorrect", "inexact"),
        f"{code}\n{first}": ("incorrect", "wrong_ordinal"),
        third: ("incorrect", "wrong_ordinal"),
        f"{code}\n{neighbour}": ("incorrect", "neighbour"),
        f"{code}\nA limerick of my own about nothing you asked for at all.": ("incorrect", "other"),
        "not in the context": ("abstained", "abstained"),
        "": ("abstained", "abstained"),
        f" {code}\n{target}": ("correct", None),  # the verdict strips; MRCR's grade does not (0.0)
    }
    for reply, expected in replies.items():
        scored = SCORERS.get("reply")(case, Completion(text=reply), None)
        assert (scored.outcome, scored.category) == expected, reply
        assert scored.claims is not None and scored.claims.similarity is not None
        assert scored.claims.similarity == pytest.approx(_mrcr_grade(reply, code + target, code))
    # MRCR's grade counts what follows the code as it is: a line break after it costs a little
    exact, broken, bare = (SCORERS.get("reply")(case, Completion(text=t), None).claims for t in (
        f"{code}{target}", f"{code}\n{target}", target))  # fmt: skip
    assert exact is not None and broken is not None and bare is not None
    assert (exact.similarity, bare.similarity) == (1.0, 0.0) and 0.99 < (broken.similarity or 0) < 1.0
    assert SCORERS.get("reply")(case, Completion(text="x", error="boom"), None).outcome == "error"
    control = case.absent_control()
    assert score_parts(control, Completion(text="not in the context"))[0].outcome == "correct"
    assert score_parts(control, Completion(text=f"{code}\n{target}"))[0].category == "hallucinated"


def test_build_time_checks_raise_on_bad_data() -> None:
    for number in (0, 4):
        with pytest.raises(ValueError, match="does not exist among 3 replies"):
            build_conversation("bad", number)
    with pytest.raises(BadInput, match="at most 1000"):
        build_conversations(1001)
    conversation = build_conversation("t", 2)
    messages = [
        {"role": role, "content": text}
        for exchange in conversation.own
        for role, text in (("user", exchange.request), ("assistant", exchange.reply))
    ] + [{"role": "user", "content": conversation.case.question}]
    assert ordinal_problems(messages, conversation) == []
    swapped = [*messages[:1], messages[3], *messages[2:3], messages[1], *messages[4:]]
    assert ordinal_problems(swapped, conversation) == [
        "the reply to the 2nd request is not the case's answer"
    ]
    assert "asks 2 times" in ordinal_problems(messages[2:], conversation)[0]


def _asked_replies(request: GenerateRequest) -> tuple[str, int, list[str]]:
    """(code, ordinal asked, the replies to the pair's requests in chat order), read from the chat."""
    turns = [(m["role"], m["content"]) for m in request.messages]
    asked = ASKED.search(turns[-1][1])
    assert asked is not None
    code, number, form, topic = asked.group(1), int(asked.group(2)), asked.group(3), asked.group(4)
    replies = [
        turns[i + 1][1] for i, (r, c) in enumerate(turns[:-1]) if r == "user" and f"{form} about {topic}" in c
    ]
    return code, number, replies


def _oracle_like(request: GenerateRequest) -> str:
    """Reads the chat as a careful model would: the code, then the asked reply; abstains when the
    chat holds no request for the pair."""
    code, number, replies = _asked_replies(request)
    return f"{code}\n{replies[number - 1]}" if len(replies) >= number else "not in the context"


def _one_off(request: GenerateRequest) -> str:
    """The reply after the asked one's next request of the pair (the wrong ordinal), or the one
    before for the last: a model that counts wrong."""
    code, number, replies = _asked_replies(request)
    if not replies:
        return "not in the context"
    return f"{code}\n{replies[number if number < len(replies) else number - 2]}"


def test_example_file_runs_end_to_end_with_the_fake_models(tmp_path: Path) -> None:
    overrides = {"lengths": [768], "limit": 3, "model": "fake/lexical"}
    schema = json.loads(
        resources.files("rotscope").joinpath("schemas", "summary.schema.json").read_text(encoding="utf-8")
    )
    for name, backend in (("oracle", _oracle_like), ("one-off", _one_off)):
        config = load_config(EXAMPLE, overrides)
        run_dir = run_experiment(config, run_dir=tmp_path / name, backend=FakeBackend("scripted", backend))
        summary = load_summary(run_dir).model_dump()
        jsonschema.validate(summary, schema, cls=jsonschema.Draft202012Validator)
        assert summary["items"] == {"total": 3 * 3 + 3, "done": 12, "errors": 0, "rejected_prompts": 0}
        cells = sorted((c for c in summary["cells"] if c["task"] == "coreference"), key=lambda c: c["depth"])
        assert [cell["depth"] for cell in cells] == [0.0, 0.5, 1.0]
        for cell in cells:
            if name == "oracle":
                assert (cell["correct"], cell["categories"]) == (3, {})
                assert 0.99 < cell["mean_similarity"] < 1.0  # the line break after the code
            else:
                assert (cell["correct"], cell["categories"]) == (0, {"wrong_ordinal": 3})
                assert 0.2 < cell["mean_similarity"] < 0.8
        (control,) = summary["controls"]
        assert (control["n"], control["correct"]) == (3, 3)
    # through the command line, with the string matcher: it finds no "Question:" line to match, so
    # it abstains, which is wrong on every probe and right on every control
    out = tmp_path / "cli"
    experiment = tmp_path / "coref.yaml"
    text = EXAMPLE.read_text(encoding="utf-8").replace("limit: 12", "limit: 2")
    experiment.write_text(text.replace("lengths: [1024, 2048, 4096]", "lengths: [768]\nmodel: fake/lexical"))
    result = invoke("run", experiment, "--out", out)
    assert result.exit_code == 0, result.output
    summary = load_summary(out).model_dump()
    cells = [c for c in summary["cells"] if c["task"] == "coreference"]
    assert [(cell["n"], cell["categories"], cell["mean_similarity"]) for cell in cells] == [
        (2, {"abstained": 2}, 0.0)
    ] * 3
    (control,) = summary["controls"]
    assert (control["n"], control["correct"]) == (2, 2)


def test_token_offsets_are_a_one_line_error(tmp_path: Path) -> None:
    experiment = tmp_path / "coref.yaml"
    experiment.write_text(
        "name: c\ntasks: [coreference]\nmodel: fake/lexical\nlengths: [768]\ndepths: ['@40']\n"
    )
    from tests.support.cli_helpers import assert_bad_input

    assert_bad_input(invoke("run", experiment, "--out", tmp_path / "run"), "depths", "coreference")
