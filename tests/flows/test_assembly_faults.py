"""Assembly self-tests: each injects one fault of a context assembly pipeline and shows that the
builder, the verifier or the delivery check rejects it, so a broken pipeline is never mistaken
for model degradation at some position."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from rotscope import load_summary
from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.execution.workflows.runner import resume_experiment, run_experiment
from rotscope.filler.corpus import TokenizedCorpus
from rotscope.prompt.builder import PromptBuilder
from rotscope.prompt.frame import Frame
from rotscope.prompt.verify import verify_prompt
from rotscope.store import RunStore
from rotscope.tokenizers.local import FakeTokenizer
from rotscope.types import (
    AnswerKind,
    Case,
    Completion,
    Evidence,
    GenerateRequest,
    Layout,
    RenderedPrompt,
    Tokenizer,
)
from tests.support.case_helpers import case_config, plan_for

LEXICAL = lexical_responder()


class WordSpaceTokenizer(FakeTokenizer):
    """The fake tokenizer after a vocabulary change: a space now joins the word after it, so
    every token index after the first space moves."""

    _PIECES = re.compile(r"<\|[a-z_]+\|>|\n+| ?\w+|[ \t]+|[^\w\s]")

    def encode(self, text: str, *, special: bool = False) -> list[int]:
        return [self._id(match.group()) for match in self._PIECES.finditer(text)]

    def digest(self) -> str:
        return "fake-word-space-1"


# ---- a tokenizer change that shifts spans ----------------------------------------------------


def test_spans_from_another_tokenizer_are_never_reused(
    tmp_path: Path, frame_of: Callable[[Case, Tokenizer], Frame]
) -> None:
    backend = FakeBackend("lexical", LEXICAL)
    plan = plan_for(case_config(tmp_path), backend)
    item = next(i for i in plan.items if i.case.case_id == "server-code" and i.layout.position == "midpoint")
    new = WordSpaceTokenizer()
    frame = frame_of(item.case, new)
    # The verified prompt, checked against the changed tokenizer: refused as stale outright.
    stale = verify_prompt(item.prompt, item.case, item.layout, new, frame, 0.05)
    assert stale and "spans are stale" in stale[0]
    # Same text re-encoded with the new tokenizer but the old spans kept (a cache keyed by text):
    # the spans now point at other tokens, and the verifier says so.
    ids = tuple(new.encode(item.prompt.text, special=True))
    moved = dataclasses.replace(item.prompt, token_ids=ids, tokenizer_digest=new.digest())
    problems = verify_prompt(moved, item.case, item.layout, new, frame, 0.05)
    assert any("is not at its span" in problem for problem in problems), problems
    assert len(ids) != item.prompt.prompt_tokens


@pytest.fixture
def frame_of(corpus_from_text: Callable[..., TokenizedCorpus]) -> Callable[[Case, Tokenizer], Frame]:
    """The frame a builder with a tokenizer makes for a case (the filler plays no part in it)."""

    def frame(case: Case, tokenizer: Tokenizer) -> Frame:
        return PromptBuilder(tokenizer, corpus_from_text("filler line.", tokenizer)).frame(case.question)

    return frame


# ---- a gateway that trims the tail -------------------------------------------------------------


def trimming_gateway(keep_fraction: float) -> FakeBackend:
    """A backend behind a gateway that drops the end of each prompt (question and all) and
    answers what is left, reporting the tokens it actually passed on."""

    class Trimmed(FakeBackend):
        async def generate(self, request: GenerateRequest) -> Completion:
            kept = request.token_ids[: int(len(request.token_ids) * keep_fraction)]
            text = self._tokenizer.decode(kept)
            trimmed = dataclasses.replace(
                request, token_ids=kept, messages=({"role": "user", "content": text},)
            )
            completion = await super().generate(trimmed)
            return dataclasses.replace(completion, prompt_tokens=len(kept))

    return Trimmed("lexical", LEXICAL)


def test_a_trimmed_prompt_is_an_error_row_never_a_wrong_answer(tmp_path: Path) -> None:
    config = case_config(tmp_path, evidence_only=False, controls=False)
    run_dir = run_experiment(config, run_dir=tmp_path / "run", backend=trimming_gateway(0.8))
    rows = _rows(run_dir)
    assert rows and all(row["status"] == "error" for row in rows)
    assert all(row["outcome"] == "error" and "prompt truncated" in row["error"] for row in rows)
    summary = load_summary(run_dir).model_dump()
    assert all(cell["accuracy"] is None and cell["errors"] == cell["n"] for cell in summary["cells"])
    # Errors are retried on resume; with an honest backend they are then scored.
    resume_dir = resume_experiment(run_dir)
    assert all(row["status"] == "ok" and row["attempts"] == 2 for row in _rows(resume_dir))


def test_a_tail_trimmed_prompt_fails_verification(
    tmp_path: Path, frame_of: Callable[[Case, Tokenizer], Frame]
) -> None:
    backend = FakeBackend("lexical", LEXICAL)
    plan = plan_for(case_config(tmp_path), backend)
    item = plan.items[0]
    cut = item.prompt.token_ids[:-12]
    trimmed = dataclasses.replace(item.prompt, token_ids=cut, text=backend.tokenizer().decode(cut))
    frame = frame_of(item.case, backend.tokenizer())
    problems = verify_prompt(trimmed, item.case, item.layout, backend.tokenizer(), frame, 0.05)
    assert any("truncated" in problem for problem in problems), problems


def _rows(run_dir: Path) -> list[dict[str, object]]:
    store = RunStore.open_existing(run_dir)
    try:
        return store.rows()
    finally:
        store.close()


# ---- a retriever that reorders equal-score documents ---------------------------------------------


def test_reordered_documents_in_one_variant_reject_the_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    render = PromptBuilder.render

    def retriever_reorders(self: PromptBuilder, case: Case, layout: Layout) -> RenderedPrompt:
        # memo-3 and memo-9 tie on score; at one length the retriever returns them swapped.
        if case.case_id == "server-code" and layout.length_tokens == 600:
            first, second, *rest = case.evidence
            case = dataclasses.replace(case, evidence=(second, first, *rest))
        return render(self, case, layout)

    monkeypatch.setattr(PromptBuilder, "render", retriever_reorders)
    plan = plan_for(case_config(tmp_path))
    assert not [item for item in plan.items if item.case.case_id.startswith("server-code")]
    (reason,) = set(plan.rejected)
    assert "server-code" in reason and "evidence order differs" in reason


# ---- a template that adds a long safety passage ---------------------------------------------------

SAFETY = "Safety notice: " + "Always follow the acceptable use policy of this service. " * 12


def test_a_safety_passage_in_some_prompts_rejects_the_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The template adds its passage only to long prompts: the header of one length differs."""
    frame = PromptBuilder.frame

    def templated(
        self: PromptBuilder, question: str, *, multi: bool = False, kind: AnswerKind = "phrase"
    ) -> Frame:
        found = frame(self, question, multi=multi, kind=kind)
        if not getattr(self, "long_prompt", False):
            return found
        passage = SAFETY + "\n"
        return dataclasses.replace(
            found,
            header=(*self.tokenizer.encode(passage), *found.header),
            header_bytes=passage.encode() + found.header_bytes,
        )

    render = PromptBuilder.render

    def rendering(self: PromptBuilder, case: Case, layout: Layout) -> RenderedPrompt:
        self.long_prompt = layout.length_tokens >= 600  # type: ignore[attr-defined]
        return render(self, case, layout)

    monkeypatch.setattr(PromptBuilder, "frame", templated)
    monkeypatch.setattr(PromptBuilder, "render", rendering)
    plan = plan_for(case_config(tmp_path, evidence_only=False))
    assert not plan.items
    assert len(set(plan.rejected)) == 2  # both cases, each once per layout
    assert all("template, system prompt or header differ" in reason for reason in plan.rejected)


def test_a_safety_passage_added_after_verification_is_caught(
    tmp_path: Path, frame_of: Callable[[Case, Tokenizer], Frame]
) -> None:
    """The passage is added on the way (a gateway's template): the prompt sent is not the one
    verified. The verifier rejects such a prompt, and at run time the backend's own count of
    prompt tokens gives it away: an error row, not an answer scored at the planned position."""
    backend = FakeBackend("lexical", LEXICAL)
    plan = plan_for(case_config(tmp_path), backend)
    item = next(i for i in plan.items if i.layout.position == "midpoint")
    tokenizer = backend.tokenizer()
    text = item.prompt.text.replace("<context>\n", f"{SAFETY}\n<context>\n", 1)
    extended = dataclasses.replace(
        item.prompt, text=text, token_ids=tuple(tokenizer.encode(text, special=True))
    )
    problems = verify_prompt(
        extended, item.case, item.layout, tokenizer, frame_of(item.case, tokenizer), 0.05
    )
    assert any("tokens, target" in p for p in problems) and any("header" in p for p in problems), problems

    class Templated(FakeBackend):
        async def generate(self, request: GenerateRequest) -> Completion:
            completion = await super().generate(request)
            return dataclasses.replace(
                completion, prompt_tokens=completion.prompt_tokens + tokenizer.count(SAFETY)
            )

    (tmp_path / "second").mkdir()
    config = case_config(tmp_path / "second", evidence_only=False, controls=False)
    run_dir = run_experiment(config, run_dir=tmp_path / "out", backend=Templated("lexical", LEXICAL))
    rows = _rows(run_dir)
    assert rows and all(row["status"] == "error" and "prompt extended" in str(row["error"]) for row in rows)


# ---- a serializer that duplicates a distractor -----------------------------------------------------


def test_a_duplicated_distractor_is_rejected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assemble = PromptBuilder._assemble

    def duplicating(
        self: PromptBuilder, frame: Frame, placements: Sequence[tuple[Evidence, int]], end: int
    ) -> RenderedPrompt:
        decoys = [(evidence, cut) for evidence, cut in placements if evidence.role == "decoy"]
        prompt = assemble(self, frame, placements, end)
        if not decoys:
            return prompt
        # The serializer writes the distractor twice: once where planned, once more at the end.
        copy = "\n" + decoys[0][0].text
        head = prompt.token_ids[: -len(frame.footer) - len(frame.suffix)]
        ids = (*head, *self.tokenizer.encode(copy), *frame.footer, *frame.suffix)
        return dataclasses.replace(prompt, token_ids=ids, text=self.tokenizer.decode(ids))

    monkeypatch.setattr(PromptBuilder, "_assemble", duplicating)
    plan = plan_for(case_config(tmp_path, evidence_only=False))
    rejected = [reason for reason in plan.rejected if "server-code" in reason]
    assert rejected and all("evidence memo-1 occurs 2 times" in reason for reason in rejected)
    assert not [item for item in plan.items if item.case.case_id == "server-code"]


# ---- a provider window smaller than its catalogue says ---------------------------------------------


class SmallWindow(FakeBackend):
    """Declares a million tokens, really holds ``window``: a longer prompt loses its start
    (left truncation, as many servers do) and the usage it reports says so."""

    context_window = 1_000_000

    def __init__(self, window: int) -> None:
        super().__init__("lexical", LEXICAL)
        self.window = window

    async def generate(self, request: GenerateRequest) -> Completion:
        kept = request.token_ids[-self.window :]
        completion = await super().generate(dataclasses.replace(request, token_ids=kept))
        return dataclasses.replace(completion, prompt_tokens=len(kept))


def test_a_window_smaller_than_declared_gives_error_rows_at_the_long_lengths(tmp_path: Path) -> None:
    config = case_config(tmp_path, evidence_only=False)
    run_dir = run_experiment(config, run_dir=tmp_path / "run", backend=SmallWindow(450))
    rows = _rows(run_dir)
    long = [row for row in rows if row["length_target"] == 600]
    short = [row for row in rows if row["length_target"] == 300]
    assert long and all(row["status"] == "error" and "prompt truncated" in str(row["error"]) for row in long)
    assert short and all(row["status"] == "ok" for row in short)
    cells = {cell["length"]: cell for cell in load_summary(run_dir).model_dump()["lengths"]}
    assert cells[600]["accuracy"] is None and cells[600]["errors"] == cells[600]["n"]
    assert cells[300]["errors"] == 0
