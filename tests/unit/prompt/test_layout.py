"""Prompt layout: exact spans, exact lengths, and prompts whose ids are what the tokenizer makes of the text.

Every property runs with the fake tokenizer and with the real vocabulary of the bundled GGUF.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from rotscope.errors import BadInput
from rotscope.filler.corpus import TokenizedCorpus
from rotscope.prompt.builder import PlacementError, PromptBuilder
from rotscope.prompt.frame import FOOTER, HEADER
from rotscope.prompt.verify import verify_prompt
from rotscope.tokenizers.local import FakeTokenizer, LlamaCppTokenizer
from rotscope.types import Case, Evidence, Layout, Oracle, RenderedPrompt, Tokenizer

DEPTH_TOLERANCE = 0.1  # PromptBuilder's default depth_tolerance
DEPTH_REASON = re.compile(
    r"evidence \S+ sits at depth [\d.]+, asked [\d.]+ \(tolerance [\d.]+; the haystack has (\d+) tokens\)"
)

PROPERTY_SETTINGS = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Filler vocabulary: lower case, accents, CJK, an emoji, code punctuation. Evidence below uses
# capitalised invented names that never occur in it, so "exactly once" is about the layout.
WORDS = [
    "alpha", "beta", "river", "stone", "paper", "data", "value", "self", "return", "for", "if",
    "café", "naïve", "été", "漢字", "東京", "データ", "🙂", "x1", "(y)", "[z]", "{k:", "v}", "a.b", "42",
]  # fmt: skip
CODE_BODIES = [
    "def handler(request, *args):",
    "return self._cache.get(key, None)",
    "if value is None and not strict:",
    "items = [x * 2 for x in range(10)]",
    "raise ValueError(f'bad {name!r}')",
    "# comment: été 漢字",
    '"""Docstring line."""',
    "x = {'k': [1, 2], 'é': 3}",
]
EVIDENCE_TEXTS = [
    "The access code for the Vellmoor archive is 4817.",
    "Zorblax Quennick painted the Émeraude gate in 1871.",
    "The 漢字 tablet of Ostrava Pellin weighs 77 kilograms.",
    "Captain Dorrick Fenwhistle flies the airship Pellucid Wren.",
    "KESTRA-9 is the label on the Harrowmere crate.",
]
QUESTIONS = [
    "What is the access code for the Vellmoor archive?",
    "Who painted the gate?",
    "How much does the tablet weigh, in kilograms, according to the context above?",
]

prose_line = st.builds(
    lambda words, end: " ".join(words) + end,
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=14),
    st.sampled_from(["", ".", ",", ":", "!", ";"]),
)
code_line = st.builds(
    lambda indent, body: indent + body,
    st.sampled_from(["    ", "        ", "  ", " ", "\t", "\t\t"]),
    st.sampled_from(CODE_BODIES),
)
blank_line = st.sampled_from(["", "", "  ", "    ", "\t", "\t "])
trailing = st.sampled_from(["", "", "", " ", "  "])
any_line = st.builds(
    lambda line, tail: line + tail,
    st.one_of(prose_line, prose_line, code_line, blank_line),
    trailing,
)


@st.composite
def corpus_texts(draw: st.DrawFn) -> str:
    """Lines of prose, indented code, blank and whitespace-only lines, some ending in spaces;
    the first line may be indented or blank too."""
    lines = draw(st.lists(any_line, min_size=1, max_size=40))
    if not "".join(lines).strip():
        lines.append(draw(prose_line))
    return "\n".join(lines)


@st.composite
def cases(draw: st.DrawFn, *, min_pieces: int = 1, max_pieces: int = 3) -> Case:
    texts = draw(
        st.lists(st.sampled_from(EVIDENCE_TEXTS), min_size=min_pieces, max_size=max_pieces, unique=True)
    )
    evidence = tuple(Evidence(f"e{i}", text) for i, text in enumerate(texts))
    return Case("case", "niah", evidence, draw(st.sampled_from(QUESTIONS)), Oracle("4817"))


def builder_for(
    text: str, tokenizer: Tokenizer, corpus_from_text: Callable[..., TokenizedCorpus]
) -> PromptBuilder:
    return PromptBuilder(tokenizer, corpus_from_text(text, tokenizer, 700))


def check_prompt(prompt: RenderedPrompt, case: Case, layout: Layout, builder: PromptBuilder) -> None:
    """Properties (a), (b), (c), (d), (f) of one rendered prompt."""
    tokenizer = builder.tokenizer
    ids = list(prompt.token_ids)
    # (f) the text is exactly the decoded ids
    assert prompt.text == tokenizer.decode(ids)
    # (d) the strongest check: the whole text re-encodes to the very same ids
    assert tokenizer.encode(prompt.text, special=True) == ids
    # (a) and (b): each piece byte-exact at its span, present once
    assert [span.evidence_id for span in prompt.spans] == [e.evidence_id for e in case.evidence]
    for evidence, span in zip(case.evidence, prompt.spans, strict=True):
        found = tokenizer.decode(ids[span.token_start : span.token_end])
        assert found in (evidence.text + "\n", "\n" + evidence.text), (found, evidence.text)
        assert prompt.text.count(evidence.text) == 1
    # (c) the whole prompt within tolerance of the target
    allowed = max(1, int(builder.tolerance * layout.length_tokens))
    assert abs(len(ids) - layout.length_tokens) <= allowed
    # bookkeeping: template + header + footer + evidence + haystack_tokens of filler = the whole prompt
    frame = builder.frame(case.question)
    evidence_tokens = sum(span.token_end - span.token_start for span in prompt.spans)
    assert len(ids) == frame.fixed_tokens + evidence_tokens + prompt.haystack_tokens
    assert tuple(ids[: len(frame.prefix) + len(frame.header)]) == frame.prefix + frame.header
    assert prompt.text.count(FOOTER.format(question=case.question)) == 1
    # the user message is the body between the template parts, and the verifier agrees
    assert prompt.messages[-1]["role"] == "user"
    assert prompt.messages[-1]["content"] in prompt.text
    assert verify_prompt(prompt, case, layout, tokenizer, frame, builder.tolerance) == []
    # the filler text is the haystack without the evidence units: filler pieces and units, in
    # order, are exactly the haystack; no question, instruction or header is in it
    content = prompt.messages[-1]["content"]
    units = [tokenizer.decode(ids[span.token_start : span.token_end]) for span in prompt.spans]
    pieces = [content[start:end] for start, end in prompt.filler_chars]
    end = prompt.context_start + prompt.haystack_tokens + evidence_tokens
    haystack = tokenizer.decode(ids[prompt.context_start : end])
    for unit in units:
        assert unit in haystack
        haystack = haystack.replace(unit, "", 1)
    assert "".join(pieces) == haystack
    assert case.question not in prompt.filler_text()


def assert_refusal_justified(error: PlacementError, corpus: TokenizedCorpus, depth: float) -> None:
    """A refusal is allowed only when no line end of the haystack lies within the depth tolerance
    of the asked depth: never for a joint, span or length problem."""
    message = str(error).split(": ", 1)[1]
    found = DEPTH_REASON.findall(message)
    assert found, message
    assert DEPTH_REASON.sub("", message).replace(";", "").strip() == "", message
    haystack = int(found[0])
    nearest = corpus.nearest_line_ends(depth * haystack, haystack)[0]
    assert abs(nearest / haystack - depth) > DEPTH_TOLERANCE, (nearest, haystack, depth)


@pytest.mark.parametrize("kind", ["fake", "real"])
@PROPERTY_SETTINGS
@given(
    text=corpus_texts(),
    case=cases(),
    extra=st.one_of(st.integers(16, 40), st.integers(41, 420)),
    inner=st.lists(st.floats(0.0, 1.0), min_size=0, max_size=3),
)
def test_rendered_prompts_are_exact(
    kind: str,
    real_tokenizer: LlamaCppTokenizer,
    corpus_from_text: Callable[..., TokenizedCorpus],
    text: str,
    case: Case,
    extra: int,
    inner: list[float],
) -> None:
    tokenizer: Tokenizer = FakeTokenizer() if kind == "fake" else real_tokenizer
    builder = builder_for(text, tokenizer, corpus_from_text)
    length = builder.fixed_tokens(case) + extra
    frame = builder.frame(case.question)
    depths = sorted({0.0, 1.0, *inner})
    recorded: list[float] = []
    for depth in depths:
        layout = Layout(length, depth)
        try:
            prompt = builder.render(case, layout)
        except PlacementError as error:
            # depth 0 is always reachable: line end 0 exists in every corpus
            assert depth != 0.0, str(error)
            assert_refusal_justified(error, builder.corpus, depth)
            event("refused: asked depth not reachable in a short haystack")
            continue
        check_prompt(prompt, case, layout, builder)
        assert len({span.depth for span in prompt.spans}) == 1
        recorded.append(prompt.spans[0].depth)
        first = prompt.spans[0]
        last = prompt.spans[-1]
        if depth == 0.0:
            # (e) depth 0: the evidence is the first thing in the context
            assert first.token_start == len(frame.prefix) + len(frame.header)
            assert HEADER + case.evidence[0].text in prompt.text
            assert first.depth == 0.0
        if depth == 1.0:
            # (e) depth 1: nothing but line breaks between the evidence and '</context>'
            after = tokenizer.decode(prompt.token_ids[last.token_end :])
            assert after.split("</context>")[0].strip() == "", after
            assert first.depth == 1.0
        assert abs(first.depth - depth) <= DEPTH_TOLERANCE
    # (e) recorded depth is monotone in the asked depth
    assert recorded == sorted(recorded), (depths, recorded)
    assert all(0.0 <= value <= 1.0 for value in recorded)


@pytest.mark.parametrize("kind", ["fake", "real"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=corpus_texts(), case=cases(min_pieces=1, max_pieces=1), extra=st.integers(16, 300))
def test_absent_control_renders_without_spans(
    kind: str,
    real_tokenizer: LlamaCppTokenizer,
    corpus_from_text: Callable[..., TokenizedCorpus],
    text: str,
    case: Case,
    extra: int,
) -> None:
    tokenizer: Tokenizer = FakeTokenizer() if kind == "fake" else real_tokenizer
    builder = builder_for(text, tokenizer, corpus_from_text)
    control = case.absent_control()
    layout = Layout(builder.fixed_tokens(control) + extra, 0.0, "absent")
    prompt = builder.render(control, layout)
    assert prompt.spans == ()
    assert case.evidence[0].text not in prompt.text
    assert tokenizer.encode(prompt.text, special=True) == list(prompt.token_ids)
    assert abs(prompt.prompt_tokens - layout.length_tokens) <= max(1, int(0.05 * layout.length_tokens))
    assert HEADER in prompt.text and FOOTER.format(question=case.question) in prompt.text


def plain_case(case_id: str, *texts: str, question: str = QUESTIONS[0]) -> Case:
    evidence = tuple(Evidence(f"{case_id}-{i}", text) for i, text in enumerate(texts))
    return Case(case_id, "niah", evidence, question, Oracle("x"))


def test_length_too_short_for_fixed_parts_is_bad_input(
    tokenizer: Tokenizer, prose: Callable[..., str], corpus_from_text: Callable[..., TokenizedCorpus]
) -> None:
    builder = PromptBuilder(tokenizer, corpus_from_text(prose(), tokenizer))
    case = plain_case("short", EVIDENCE_TEXTS[0])
    fixed = builder.fixed_tokens(case)
    with pytest.raises(BadInput, match="shorter than the fixed parts"):
        builder.render(case, Layout(fixed - 1, 0.5))
    with pytest.raises(BadInput, match="shorter than the fixed parts"):
        builder.render(case, Layout(10, 0.0))
    # one filler token more than the fixed parts is enough for a verified prompt at depth 0
    prompt = builder.render(case, Layout(fixed + 1, 0.0))
    assert tokenizer.encode(prompt.text, special=True) == list(prompt.token_ids)


def test_length_beyond_the_corpus_is_bad_input(
    tokenizer: Tokenizer, corpus_from_text: Callable[..., TokenizedCorpus]
) -> None:
    corpus = corpus_from_text("one short line of filler\nand another one", tokenizer, allow_repeat=False)
    builder = PromptBuilder(tokenizer, corpus)
    case = plain_case("long", EVIDENCE_TEXTS[0])
    with pytest.raises(BadInput, match="corpus has"):
        builder.render(case, Layout(builder.fixed_tokens(case) + corpus.size + 50, 0.5))


@pytest.mark.parametrize("depth", [0.0, 0.4, 1.0])
def test_several_evidence_pieces_get_one_span_each(
    tokenizer: Tokenizer,
    prose: Callable[..., str],
    corpus_from_text: Callable[..., TokenizedCorpus],
    depth: float,
) -> None:
    builder = PromptBuilder(tokenizer, corpus_from_text(prose(), tokenizer))
    case = plain_case("multi", *EVIDENCE_TEXTS[:3])
    layout = Layout(builder.fixed_tokens(case) + 200, depth)
    prompt = builder.render(case, layout)
    assert len(prompt.spans) == 3
    assert [span.evidence_id for span in prompt.spans] == ["multi-0", "multi-1", "multi-2"]
    ends = [span.token_end for span in prompt.spans[:-1]]
    starts = [span.token_start for span in prompt.spans[1:]]
    assert all(end <= start for end, start in zip(ends, starts, strict=True))
    check_prompt(prompt, case, layout, builder)


@pytest.mark.parametrize("depth", [0.0, 0.5, 1.0])
def test_same_length_shares_the_filler_across_cases(
    tokenizer: Tokenizer,
    prose: Callable[..., str],
    corpus_from_text: Callable[..., TokenizedCorpus],
    depth: float,
) -> None:
    builder = PromptBuilder(tokenizer, corpus_from_text(prose(), tokenizer))
    first = plain_case("one", "The access code for the Vellmoor archive is 4817.")
    second = plain_case("two", "The access code for the Vellmoor archive is 9265.")
    assert builder.fixed_tokens(first) == builder.fixed_tokens(second)
    a = builder.render(first, Layout(400, depth))
    b = builder.render(second, Layout(400, depth))
    assert a.spans[0].token_start == b.spans[0].token_start
    # identical ids before the evidence: the KV cache of that prefix serves both prompts
    assert a.token_ids[: a.spans[0].token_start] == b.token_ids[: b.spans[0].token_start]
    # and identical filler after it
    assert a.token_ids[a.spans[0].token_end :] == b.token_ids[b.spans[0].token_end :]
    assert a.token_ids != b.token_ids

    # a case with a different question length still shares a prefix of the same filler
    third = plain_case("three", EVIDENCE_TEXTS[1], question=QUESTIONS[2])
    c = builder.render(third, Layout(400, depth))
    head_a = a.token_ids[: a.spans[0].token_start]
    head_c = c.token_ids[: c.spans[0].token_start]
    shorter, longer = sorted((head_a, head_c), key=len)
    assert longer[: len(shorter)] == shorter


def test_render_is_deterministic_and_cut_at_a_line(
    tokenizer: Tokenizer, prose: Callable[..., str], corpus_from_text: Callable[..., TokenizedCorpus]
) -> None:
    corpus = corpus_from_text(prose(), tokenizer)
    case = plain_case("det", EVIDENCE_TEXTS[3])
    layout = Layout(350, 0.5)
    one = PromptBuilder(tokenizer, corpus).render(case, layout)
    two = PromptBuilder(tokenizer, corpus).render(case, layout)
    assert one == two
    span = one.spans[0]
    # the evidence is its own line: the text before it ends a filler line, the text after starts one
    assert tokenizer.decode(one.token_ids[span.token_start : span.token_end]).startswith("\n")
    assert "\n" + case.evidence[0].text + "\n" in one.text
    assert 0.3 <= span.depth <= 0.7
    assert one.corpus_digest == corpus.digest


def test_depth_one_puts_the_evidence_last_when_the_haystack_ends_mid_line(
    tokenizer: Tokenizer, corpus_from_text: Callable[..., TokenizedCorpus]
) -> None:
    # long filler lines: the haystack budget ends inside one of them
    line = " ".join(["river stone paper lantern"] * 12)
    corpus = corpus_from_text("\n".join(f"{line} {n}." for n in range(40)), tokenizer)
    builder = PromptBuilder(tokenizer, corpus)
    case = plain_case("last", EVIDENCE_TEXTS[0])
    layout = Layout(300, 1.0)
    prompt = builder.render(case, layout)
    span = prompt.spans[0]
    assert prompt.haystack_tokens not in set(corpus.line_ends.tolist())  # really cut mid-line
    after = tokenizer.decode(prompt.token_ids[span.token_end :])
    assert after.split("</context>")[0].strip() == ""
    assert span.depth == 1.0
    check_prompt(prompt, case, layout, builder)


# Regressions: a joint window ending at a newline re-encoded ' \n' as one token, so prompts over
# lines with trailing spaces were rejected although the whole text re-encodes the same; and the
# header's final newline merged with a corpus's leading indentation.
REGRESSION_CORPORA = {
    "trailing-spaces": "\n".join(f"line {n} of the filler has trailing spaces " for n in range(80)),
    "leading-indentation": "\n".join(f"    value_{n} = compute({n})" for n in range(80)),
}


@pytest.mark.parametrize("depth", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("corpus_name", sorted(REGRESSION_CORPORA))
def test_awkward_whitespace_in_filler_can_be_placed(
    tokenizer: Tokenizer, corpus_from_text: Callable[..., TokenizedCorpus], depth: float, corpus_name: str
) -> None:
    builder = PromptBuilder(tokenizer, corpus_from_text(REGRESSION_CORPORA[corpus_name], tokenizer))
    case = plain_case(corpus_name, EVIDENCE_TEXTS[0])
    layout = Layout(250, depth)
    check_prompt(builder.render(case, layout), case, layout, builder)


def tab_indented_text() -> str:
    return "\n".join(f"x{n} = {n}\n\tcall(x{n})" for n in range(100))


def test_tab_indented_filler_re_encodes(
    real_tokenizer: LlamaCppTokenizer, corpus_from_text: Callable[..., TokenizedCorpus]
) -> None:
    builder = PromptBuilder(real_tokenizer, corpus_from_text(tab_indented_text(), real_tokenizer))
    control = plain_case("tab", EVIDENCE_TEXTS[0]).absent_control()
    fixed = builder.fixed_tokens(control)
    wrong = []
    for extra in range(16, 80):
        prompt = builder.render(control, Layout(fixed + extra, 0.0, "absent"))
        if real_tokenizer.encode(prompt.text, special=True) != list(prompt.token_ids):
            wrong.append(fixed + extra)
    assert wrong == []


def test_tab_indented_filler_with_the_fake_tokenizer(
    fake_tokenizer: FakeTokenizer, corpus_from_text: Callable[..., TokenizedCorpus]
) -> None:
    # the same corpus is fine where the tokenizer never merges a newline with what follows
    builder = PromptBuilder(fake_tokenizer, corpus_from_text(tab_indented_text(), fake_tokenizer))
    case = plain_case("tab", EVIDENCE_TEXTS[0])
    fixed = builder.fixed_tokens(case)
    for extra in range(16, 80, 7):
        for depth in (0.0, 0.5, 1.0):
            layout = Layout(fixed + extra, depth)
            try:
                prompt = builder.render(case, layout)
            except PlacementError as error:
                assert_refusal_justified(error, builder.corpus, depth)
                continue
            check_prompt(prompt, case, layout, builder)


def test_haystack_end_is_not_cut_short_by_a_window_false_positive(
    real_tokenizer: LlamaCppTokenizer, corpus_from_text: Callable[..., TokenizedCorpus]
) -> None:
    text = "    def handler(request, *args): \n\t \n\t \n漢字"
    builder = PromptBuilder(real_tokenizer, corpus_from_text(text, real_tokenizer, 700))
    control = plain_case("ws", EVIDENCE_TEXTS[0]).absent_control()
    # haystack ends 49..53 give a prompt within 5% whose whole text re-encodes to its ids
    layout = Layout(builder.fixed_tokens(control) + 56, 0.0, "absent")
    prompt = builder.render(control, layout)
    assert real_tokenizer.encode(prompt.text, special=True) == list(prompt.token_ids)
