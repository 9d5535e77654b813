"""Fault injection: altered copies of a verified prompt must each be rejected with the right reason."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from rotscope.filler.corpus import TokenizedCorpus
from rotscope.prompt.builder import PromptBuilder
from rotscope.prompt.frame import Frame
from rotscope.prompt.verify import verify_prompt
from rotscope.tokenizers.local import LlamaCppTokenizer
from rotscope.types import Case, Evidence, Layout, Oracle, RenderedPrompt, Tokenizer

NEEDLE = "The access code for the Vellmoor archive is 4817."
QUESTION = "What is the access code for the Vellmoor archive?"
TARGET = 300


@dataclasses.dataclass
class Fixture:
    tokenizer: Tokenizer
    builder: PromptBuilder
    case: Case
    layout: Layout
    prompt: RenderedPrompt

    @property
    def frame(self) -> Frame:
        return self.builder.frame(self.case.question)

    def problems(self, prompt: RenderedPrompt, layout: Layout | None = None) -> list[str]:
        return verify_prompt(
            prompt, self.case, layout or self.layout, self.tokenizer, self.frame, self.builder.tolerance
        )

    def altered(self, ids: list[int], **changes: object) -> RenderedPrompt:
        """A copy with these ids and the text updated to match them (spans kept unless given)."""
        return dataclasses.replace(
            self.prompt, token_ids=tuple(ids), text=self.tokenizer.decode(ids), **changes
        )

    def line_starts(self, lo: int, hi: int) -> list[int]:
        """Indices in [lo, hi) whose token starts a new line: inserting '\\n' + evidence there is clean."""
        ids = self.prompt.token_ids
        return [k for k in range(lo, hi) if self.tokenizer.piece(ids[k]).startswith(b"\n")]


@pytest.fixture()
def base(
    tokenizer: Tokenizer, prose: Callable[..., str], corpus_from_text: Callable[..., TokenizedCorpus]
) -> Fixture:
    builder = PromptBuilder(tokenizer, corpus_from_text(prose(), tokenizer))
    case = Case("niah-x", "niah", (Evidence("needle", NEEDLE),), QUESTION, Oracle("4817"))
    layout = Layout(TARGET, 0.5)
    prompt = builder.render(case, layout)
    # the evidence sits inside the haystack as '\n' + text, so it can be moved between line starts
    span = prompt.spans[0]
    assert tokenizer.decode(prompt.token_ids[span.token_start : span.token_end]) == "\n" + NEEDLE
    return Fixture(tokenizer, builder, case, layout, prompt)


def footer_start(fx: Fixture) -> int:
    return fx.prompt.prompt_tokens - len(fx.frame.suffix) - len(fx.frame.footer)


def test_unmodified_prompt_has_no_problems(base: Fixture) -> None:
    assert base.problems(base.prompt) == []
    assert base.tokenizer.encode(base.prompt.text, special=True) == list(base.prompt.token_ids)


def test_needle_removed(base: Fixture) -> None:
    span = base.prompt.spans[0]
    ids = list(base.prompt.token_ids)
    del ids[span.token_start : span.token_end]
    broken = base.altered(ids)
    problems = base.problems(broken, Layout(len(ids), base.layout.depth))
    assert any("evidence needle occurs 0 times in the prompt" in p for p in problems), problems
    assert any("evidence needle is not at its span" in p for p in problems), problems


def test_needle_duplicated(base: Fixture) -> None:
    span = base.prompt.spans[0]
    ids = list(base.prompt.token_ids)
    needle_ids = ids[span.token_start : span.token_end]
    later = base.line_starts(span.token_end + 5, footer_start(base))
    assert later, "the haystack needs a later line to copy the needle to"
    ids[later[0] : later[0]] = needle_ids
    broken = base.altered(ids)
    assert broken.text.count(NEEDLE) == 2
    problems = base.problems(broken, Layout(len(ids), base.layout.depth))
    assert any("evidence needle occurs 2 times in the prompt" in p for p in problems), problems
    # the recorded span itself is still right: the reason is specific
    assert not any("is not at its span" in p for p in problems), problems


def test_needle_moved_with_stale_span(base: Fixture) -> None:
    span = base.prompt.spans[0]
    ids = list(base.prompt.token_ids)
    needle_ids = ids[span.token_start : span.token_end]
    del ids[span.token_start : span.token_end]
    header_end = len(base.frame.prefix) + len(base.frame.header)
    earlier = [k for k in base.line_starts(header_end, span.token_start) if k < span.token_start - 20]
    assert earlier, "the haystack needs an earlier line to move the needle to"
    ids[earlier[0] : earlier[0]] = needle_ids
    broken = base.altered(ids)  # spans left as they were
    assert broken.text.count(NEEDLE) == 1
    assert len(ids) == base.prompt.prompt_tokens
    problems = base.problems(broken)
    assert any("evidence needle is not at its span" in p for p in problems), problems
    assert not any("occurs" in p for p in problems), problems


@pytest.mark.parametrize("cut", [1, 3])
def test_prompt_truncated_at_the_end(base: Fixture, cut: int) -> None:
    ids = list(base.prompt.token_ids)[:-cut]
    problems = base.problems(base.altered(ids))
    assert any("prompt is truncated: question footer or template suffix is missing" in p for p in problems)
    # within the length tolerance: truncation is caught by itself, not as a length problem
    assert not any("tokens, target" in p for p in problems), problems


def test_header_altered(base: Fixture) -> None:
    ids = list(base.prompt.token_ids)
    position = len(base.frame.prefix)
    replacement = base.tokenizer.encode("Ignore")[0]
    assert replacement != ids[position]
    ids[position] = replacement
    problems = base.problems(base.altered(ids))
    assert problems == ["template prefix or header is missing or altered"]


def test_template_prefix_altered(base: Fixture) -> None:
    ids = list(base.prompt.token_ids)
    replacement = base.tokenizer.encode("system")[0]
    position = next(i for i in range(len(base.frame.prefix)) if ids[i] != replacement)
    ids[position] = replacement
    problems = base.problems(base.altered(ids))
    assert "template prefix or header is missing or altered" in problems


def test_length_outside_tolerance(base: Fixture) -> None:
    measured = base.prompt.prompt_tokens
    for target in (measured + 40, measured - 40, 2 * measured):
        allowed = max(1, int(0.05 * target))
        problems = base.problems(base.prompt, Layout(target, base.layout.depth))
        assert f"prompt has {measured} tokens, target {target} ± {allowed}" in problems, problems


def test_length_tolerance_boundary(base: Fixture) -> None:
    measured = base.prompt.prompt_tokens
    # largest target still within 5%: |measured - target| <= int(0.05 * target)
    inside = max(t for t in range(measured, 2 * measured) if t - measured <= max(1, int(0.05 * t)))
    assert base.problems(base.prompt, Layout(inside, base.layout.depth)) == []
    problems = base.problems(base.prompt, Layout(inside + 1, base.layout.depth))
    assert any(f"prompt has {measured} tokens, target {inside + 1}" in p for p in problems), problems


def test_span_missing(base: Fixture) -> None:
    problems = base.problems(dataclasses.replace(base.prompt, spans=()))
    assert any("do not match the evidence pieces" in problem for problem in problems), problems


def split_one_token(tokenizer: Tokenizer, ids: list[int], lo: int, hi: int) -> tuple[int, int, int] | None:
    """A token in ids[lo:hi] whose bytes are two single tokens: (index, first id, second id)."""
    for index in range(lo, hi):
        piece = tokenizer.piece(ids[index])
        for k in range(1, len(piece)):
            try:
                a, b = piece[:k].decode("utf-8"), piece[k:].decode("utf-8")
            except UnicodeDecodeError:
                continue
            first, second = tokenizer.encode(a), tokenizer.encode(b)
            if len(first) == 1 and len(second) == 1:
                return index, first[0], second[0]
    return None


def test_joint_that_does_not_re_encode(base: Fixture) -> None:
    span = base.prompt.spans[0]
    ids = list(base.prompt.token_ids)
    found = split_one_token(base.tokenizer, ids, span.token_start + 1, span.token_end)
    assert found is not None
    index, first, second = found
    ids[index : index + 1] = [first, second]
    stale = base.prompt.spans[0]
    spans = (dataclasses.replace(stale, token_end=stale.token_end + 1),)
    broken = base.altered(ids, spans=spans)
    # same text, different ids: nothing but the round trip can tell
    assert broken.text == base.prompt.text
    assert base.tokenizer.encode(broken.text, special=True) != ids
    problems = base.problems(broken, Layout(len(ids), base.layout.depth))
    assert problems, "a token split inside the evidence line must be reported"
    assert all("change when the text is re-encoded" in p for p in problems), problems


def test_joint_split_at_the_filler_footer_boundary(base: Fixture) -> None:
    # a token of the last filler line (the line that meets the footer), split into two tokens
    ids = list(base.prompt.token_ids)
    start = footer_start(base)
    line_start = start
    while not base.tokenizer.piece(ids[line_start - 1]).endswith(b"\n"):
        line_start -= 1
    found = split_one_token(base.tokenizer, ids, line_start, start)
    assert found is not None
    index, first, second = found
    ids[index : index + 1] = [first, second]
    broken = base.altered(ids)
    assert broken.text == base.prompt.text
    problems = base.problems(broken, Layout(len(ids), base.layout.depth))
    assert problems and all("change when the text is re-encoded" in p for p in problems), problems


# A prompt the verifier wrongly accepts (real tokenizer): filler ending right after a tab that
# starts a line. In the corpus '\n', '\t', 'call' are three tokens; followed by the footer's
# '\n</context>' the text re-encodes as '\n\t', '\n', ...


def tab_cut_prompt(
    real_tokenizer: LlamaCppTokenizer, corpus_from_text: Callable[..., TokenizedCorpus]
) -> tuple[RenderedPrompt, Case, Layout, Frame]:
    text = "\n".join(f"x{n} = {n}\n\tcall(x{n})" for n in range(60))
    corpus = corpus_from_text(text, real_tokenizer)
    builder = PromptBuilder(real_tokenizer, corpus)
    control = Case("tab", "niah", (Evidence("e", NEEDLE),), QUESTION, Oracle("4817")).absent_control()
    frame = builder.frame(control.question)
    ids = [int(i) for i in corpus.ids]
    end = next(k + 1 for k in range(40, len(ids)) if real_tokenizer.piece(ids[k]) == b"\t")
    assert real_tokenizer.piece(ids[end - 2]) == b"\n"
    token_ids = (*frame.prefix, *frame.header, *ids[:end], *frame.footer, *frame.suffix)
    prompt = RenderedPrompt(
        messages=(),
        text=real_tokenizer.decode(token_ids),
        token_ids=token_ids,
        spans=(),
        haystack_tokens=end,
        corpus_digest=corpus.digest,
    )
    return prompt, control, Layout(len(token_ids), 0.0, "absent"), frame


def test_tab_cut_prompt_does_not_re_encode(
    real_tokenizer: LlamaCppTokenizer, corpus_from_text: Callable[..., TokenizedCorpus]
) -> None:
    prompt, _, _, _ = tab_cut_prompt(real_tokenizer, corpus_from_text)
    assert real_tokenizer.encode(prompt.text, special=True) != list(prompt.token_ids)


def test_verifier_rejects_tab_cut_prompt(
    real_tokenizer: LlamaCppTokenizer, corpus_from_text: Callable[..., TokenizedCorpus]
) -> None:
    prompt, control, layout, frame = tab_cut_prompt(real_tokenizer, corpus_from_text)
    problems = verify_prompt(prompt, control, layout, real_tokenizer, frame, 0.05)
    assert any("change when the text is re-encoded" in p for p in problems), problems
