"""Place evidence into filler, render the final prompt in the model's tokens, and verify it.

A prompt is assembled from token arrays: the chat template's prefix, a header, a slice of the
tokenized corpus with each evidence piece inserted as lines of its own where a filler line ends,
a footer with the question(s), and the template's suffix. Its length is the length of that whole
id sequence. Evidence that is already a line of a corpus document (``Evidence.source``) is not
inserted: the prompt is a window of a corpus arranged around that document, starting where the
line lands at the asked depth, and the line's tokens are its span.

Before a prompt may be sent, ``verify_prompt`` re-checks it from scratch: the
evidence bytes at each recorded span, each as often as the case places it (once, or one per
intended copy) and at its asked depth, the length within
tolerance, header and footer intact, no guarded value in the filler, and the text re-encoding to
the same ids (so the ids are what the tokenizer itself makes of the text).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from rotscope._util.text import mentions
from rotscope.config import PlacementConfig
from rotscope.errors import BadInput
from rotscope.filler.anchor import AnchoredCorpus
from rotscope.filler.corpus import TokenizedCorpus
from rotscope.prompt.placement import target_depths
from rotscope.types import AnswerKind, Case, Evidence, Layout, RenderedPrompt, Span, Tokenizer

HEADER = "Answer the question at the end using only this context.\n\n<context>\n"
FOOTER_TEMPLATE = "\n</context>\n\nQuestion: {question}\n{instruction}"
INSTRUCTIONS: dict[AnswerKind, str] = {
    "phrase": (
        "Answer with the exact name, number or phrase from the context. "
        "If the context does not say, reply: not in the context."
    ),
    "number": "End your reply with the final answer on a line of its own in the form Answer: <number>",
    "choice": "End your reply with the chosen option on a line of its own in the form Answer: <letter>",
}
"""The answer instruction by the oracle's kind: the same words in every layout of a case."""
FOOTER = FOOTER_TEMPLATE.replace("{instruction}", INSTRUCTIONS["phrase"])
MULTI_FOOTER = (
    "\n</context>\n\nQuestions:\n{question}\n"
    "Reply with exactly one line per question, in the form Q<k>: <answer>, and nothing else. "
    "Answer with the exact name, number or phrase from the context; if the context does not say, "
    "answer: not in the context."
)
_SENTINEL = "\u2063ROTSCOPE-USER-CONTENT\u2063"
_CANDIDATE_TRIES = 8
FULL_CHECK_TOKENS = 8192
_END_SEARCH = 16


class PlacementError(Exception):
    """No position near the asked depth gave a prompt that passes verification."""


@dataclass(frozen=True)
class Frame:
    """The parts of a prompt that do not depend on the haystack, as token ids."""

    prefix: tuple[int, ...]
    header: tuple[int, ...]
    footer: tuple[int, ...]
    suffix: tuple[int, ...]
    prefix_bytes: bytes
    header_bytes: bytes
    footer_bytes: bytes
    suffix_bytes: bytes

    @property
    def fixed_tokens(self) -> int:
        return len(self.prefix) + len(self.header) + len(self.footer) + len(self.suffix)


def evidence_unit(evidence: Evidence, at_start: bool) -> str:
    """The bytes inserted for a piece: a line of its own, before all filler or ending a filler line."""
    return evidence.text + "\n" if at_start else "\n" + evidence.text


def _unit_for(evidence: Evidence, cut: int, end: int, last: bool) -> str:
    """The unit at ``cut``; with no filler at all (an evidence-only prompt) the last piece is bare,
    since the header ends and the footer starts with a line break of their own."""
    if end == 0 and last:
        return evidence.text
    return evidence_unit(evidence, at_start=cut == 0)


class PromptBuilder:
    """Renders cases into prompts of exact token lengths for one tokenizer and one corpus."""

    def __init__(
        self,
        tokenizer: Tokenizer,
        corpus: TokenizedCorpus,
        *,
        system_prompt: str | None = None,
        tolerance: float = 0.05,
        depth_tolerance: float = 0.1,
        placement: PlacementConfig | None = None,
        seed: int = 0,
        whole_corpus: bool = False,
        anchors: Mapping[str, AnchoredCorpus] | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        self.corpus = corpus
        self.anchors = dict(anchors or {})
        self.system_prompt = system_prompt
        self.tolerance = tolerance
        self.depth_tolerance = depth_tolerance
        self.placement = placement or PlacementConfig()
        self.seed = seed
        self.whole_corpus = whole_corpus
        """The corpus is the haystack, sized by the caller (filler of whole pool items): all of it
        is used, and the verifier still checks the prompt's length."""
        self._frames: dict[tuple[str, bool, AnswerKind], Frame] = {}

    @cached_property
    def _template_parts(self) -> tuple[str, str]:
        rendered = self.tokenizer.render_chat(self._messages(_SENTINEL))
        if rendered.count(_SENTINEL) != 1:
            raise BadInput(f"{self.tokenizer.name}: the chat template does not place the user message once")
        prefix, suffix = rendered.split(_SENTINEL)
        return prefix, suffix

    def _messages(self, user_content: str) -> tuple[dict[str, str], ...]:
        system = () if self.system_prompt is None else ({"role": "system", "content": self.system_prompt},)
        return (*system, {"role": "user", "content": user_content})

    def frame(self, question: str, *, multi: bool = False, kind: AnswerKind = "phrase") -> Frame:
        found = self._frames.get((question, multi, kind))
        if found is None:
            prefix, suffix = self._template_parts
            if multi:
                footer = MULTI_FOOTER.format(question=question)
            else:
                footer = FOOTER_TEMPLATE.format(question=question, instruction=INSTRUCTIONS[kind])
            encode = self.tokenizer.encode
            found = Frame(
                prefix=tuple(encode(prefix, special=True)),
                header=tuple(encode(HEADER)),
                footer=tuple(encode(footer)),
                suffix=tuple(encode(suffix, special=True)),
                prefix_bytes=prefix.encode("utf-8"),
                header_bytes=HEADER.encode("utf-8"),
                footer_bytes=footer.encode("utf-8"),
                suffix_bytes=suffix.encode("utf-8"),
            )
            self._frames[(question, multi, kind)] = found
        return found

    def case_frame(self, case: Case) -> Frame:
        return self.frame(case.question, multi=bool(case.parts), kind=case.oracle.kind)

    def fixed_tokens(self, case: Case) -> int:
        """Tokens of everything but filler: template, header, footer with question, inserted evidence."""
        frame = self.case_frame(case)
        inserted = [e for e in case.evidence if e.source is None]
        return frame.fixed_tokens + sum(self.tokenizer.count(evidence_unit(e, False)) for e in inserted)

    def render(self, case: Case, layout: Layout) -> RenderedPrompt:
        """The verified prompt for ``case`` at ``layout``, or ``PlacementError`` with the reasons."""
        frame = self.case_frame(case)
        budget = self._filler_budget(case, layout.length_tokens)
        if any(evidence.source is not None for evidence in case.evidence):
            return self._render_in_corpus(case, layout, frame, budget)
        end = self.corpus.size if self.whole_corpus else self.filler_tokens(case, layout.length_tokens)
        targets = target_depths(case, layout, self.placement, self.seed)
        candidates = {
            evidence.evidence_id: self.corpus.nearest_line_ends(targets[evidence.evidence_id] * end, end)
            for evidence in case.evidence
        }
        reasons: list[str] = []
        for attempt in range(_CANDIDATE_TRIES):
            cuts = [
                candidates[e.evidence_id][min(attempt, len(candidates[e.evidence_id]) - 1)]
                for e in case.evidence
            ]
            order = sorted(range(len(cuts)), key=lambda i: (cuts[i], i))
            prompt = self._assemble(frame, [(case.evidence[i], cuts[i]) for i in order], end)
            problems = self._verify(prompt, case, layout, frame, targets)
            if not problems:
                return prompt
            reasons.extend(problems)
            if not case.evidence:
                break
        raise PlacementError(f"case {case.case_id} at {layout}: " + "; ".join(dict.fromkeys(reasons)))

    def _verify(
        self,
        prompt: RenderedPrompt,
        case: Case,
        layout: Layout,
        frame: Frame,
        targets: Mapping[str, float] | None = None,
    ) -> list[str]:
        """``verify_prompt`` with this builder's tokenizer and tolerances."""
        return verify_prompt(
            prompt,
            case,
            layout,
            self.tokenizer,
            frame,
            self.tolerance,
            depth_tolerance=self.depth_tolerance,
            targets=targets,
        )

    def _render_in_corpus(self, case: Case, layout: Layout, frame: Frame, budget: int) -> RenderedPrompt:
        """A window of the corpus arranged around the evidence's own document, starting where the
        evidence line lands at the asked depth: filler before it over all filler (the window
        without the line) is ``layout.depth``. Nothing is inserted."""
        if len(case.evidence) != 1:
            raise BadInput(
                f"case {case.case_id}: evidence already in the corpus must be the case's only piece"
            )
        evidence = case.evidence[0]
        anchor = self.anchors.get(evidence.source or "")
        if anchor is None:
            raise BadInput(f"case {case.case_id}: the filler has no document {evidence.source!r}")
        line_start, line_end = anchor.line_tokens(evidence.text)
        filler = budget - (line_end - line_start)
        wanted = line_start - layout.depth * filler
        starts = anchor.starts[
            (anchor.starts <= line_start)
            & (anchor.starts + budget >= line_end)
            & (anchor.starts + budget <= anchor.corpus.size)
        ]
        order = np.argsort(np.abs(starts - wanted), kind="stable")[:_CANDIDATE_TRIES]
        reasons: list[str] = []
        for start in (int(starts[i]) for i in order):
            end = self._window_end(frame, anchor.corpus, start, start + budget, line_end)
            prompt = self._assemble_window(
                frame, anchor.corpus, evidence, (start, end), (line_start, line_end)
            )
            problems = self._verify(prompt, case, layout, frame)
            if not problems:
                return prompt
            reasons.extend(problems)
        if not reasons:
            reasons.append(f"no window of {budget} tokens of the corpus holds {evidence.source}")
        raise PlacementError(f"case {case.case_id} at {layout}: " + "; ".join(dict.fromkeys(reasons)))

    def _window_end(self, frame: Frame, corpus: TokenizedCorpus, start: int, stop: int, floor: int) -> int:
        """Where a window starting at ``start`` ends: at or below ``stop`` (and not before ``floor``)
        where the joint with the footer re-encodes cleanly, else ``stop``."""
        ids = corpus.ids
        for end in range(stop, max(stop - _END_SEARCH, floor - 1), -1):
            local = [*frame.header, *ids[start:end].tolist(), *frame.footer]
            if joint_is_clean(local, len(frame.header) + end - start, self.tokenizer):
                return end
        return stop

    def _assemble_window(
        self,
        frame: Frame,
        corpus: TokenizedCorpus,
        evidence: Evidence,
        window: tuple[int, int],
        line: tuple[int, int],
    ) -> RenderedPrompt:
        """Template, header, corpus tokens ``[start, end)`` with the evidence line spanned where it
        stands, footer and template suffix."""
        start, end = window
        base = len(frame.prefix) + len(frame.header)
        filler = end - start - (line[1] - line[0])
        span = Span(
            evidence.evidence_id,
            base + line[0] - start,
            base + line[1] - start,
            (line[0] - start) / filler if filler else 0.0,
        )
        ids = [*frame.prefix, *frame.header, *corpus.ids[start:end].tolist(), *frame.footer, *frame.suffix]
        body = (
            frame.header_bytes + corpus.data[corpus.offsets[start] : corpus.offsets[end]] + frame.footer_bytes
        )
        return RenderedPrompt(
            messages=self._messages(body.decode("utf-8", errors="replace")),
            text=(frame.prefix_bytes + body + frame.suffix_bytes).decode("utf-8", errors="replace"),
            token_ids=tuple(ids),
            spans=(span,),
            haystack_tokens=filler,
            corpus_digest=corpus.digest,
            context_start=base,
            tokenizer_digest=self.tokenizer.digest(),
        )

    def _filler_budget(self, case: Case, length_tokens: int) -> int:
        budget = length_tokens - self.fixed_tokens(case)
        if budget < 0:
            raise BadInput(
                f"length {length_tokens} is shorter than the fixed parts of the prompt for case "
                f"{case.case_id} ({length_tokens - budget} tokens: template, question, evidence)"
            )
        return budget

    def filler_tokens(self, case: Case, length_tokens: int) -> int:
        """How many filler tokens a prompt of ``case`` at ``length_tokens`` holds."""
        budget = self._filler_budget(case, length_tokens)
        if budget > self.corpus.size:
            raise BadInput(f"filler: corpus has {self.corpus.size} tokens, length needs {budget}")
        return self._haystack_end(self.case_frame(case), budget)

    def _haystack_end(self, frame: Frame, budget: int) -> int:
        """Where the filler stops: as close to ``budget`` tokens as the joint with the footer
        re-encodes cleanly, else the last line end within budget."""
        ids = self.corpus.ids
        for end in range(budget, max(budget - _END_SEARCH, 0), -1):
            local = [*frame.header, *ids[:end].tolist(), *frame.footer]
            if joint_is_clean(local, len(frame.header) + end, self.tokenizer):
                return end
        return self.corpus.prefix_end(budget)

    def _assemble(
        self,
        frame: Frame,
        placements: Sequence[tuple[Evidence, int]],
        end: int,
    ) -> RenderedPrompt:
        """Concatenate token ids (and their exact bytes) of template, header, filler with each
        evidence unit at its cut, footer and template suffix. ``placements`` are in cut order."""
        corpus = self.corpus
        ids: list[int] = [*frame.prefix, *frame.header]
        body = bytearray(frame.header_bytes)
        spans: list[Span] = []
        filler_start = 0
        for number, (item, cut) in enumerate(placements, start=1):
            ids.extend(corpus.ids[filler_start:cut].tolist())
            body += corpus.data[corpus.offsets[filler_start] : corpus.offsets[cut]]
            unit = _unit_for(item, cut, end, last=number == len(placements))
            piece = self.tokenizer.encode(unit)
            spans.append(Span(item.evidence_id, len(ids), len(ids) + len(piece), cut / end if end else 0.0))
            ids.extend(piece)
            body += unit.encode("utf-8")
            filler_start = cut
        ids.extend(corpus.ids[filler_start:end].tolist())
        body += corpus.data[corpus.offsets[filler_start] : corpus.offsets[end]]
        ids.extend(frame.footer)
        ids.extend(frame.suffix)
        body += frame.footer_bytes
        content = body.decode("utf-8", errors="replace")
        return RenderedPrompt(
            messages=self._messages(content),
            text=(frame.prefix_bytes + body + frame.suffix_bytes).decode("utf-8", errors="replace"),
            token_ids=tuple(ids),
            spans=tuple(spans),
            haystack_tokens=end,
            corpus_digest=corpus.digest,
            context_start=len(frame.prefix) + len(frame.header),
            tokenizer_digest=self.tokenizer.digest(),
        )


def _joints(prompt: RenderedPrompt, frame: Frame) -> list[int]:
    """Token indices where two separately encoded parts meet."""
    total = prompt.prompt_tokens
    joints = {
        len(frame.prefix),
        len(frame.prefix) + len(frame.header),
        total - len(frame.suffix) - len(frame.footer),
        total - len(frame.suffix),
    }
    for span in prompt.spans:
        joints.update((span.token_start, span.token_end))
    return sorted(j for j in joints if 0 < j < total)


def _char_class(byte: int) -> str:
    character = chr(byte)
    if character.isspace():
        return "space"
    if character.isalpha() or byte >= 0x80:
        return "letter"
    return "digit" if character.isdigit() else "mark"


def _hard_edge(ids: Sequence[int], index: int, tokenizer: Tokenizer) -> bool:
    """Whether no tokenizer pre-split would join the tokens either side of ``index``: both sides
    are visible characters of different classes (a letter next to a mark, a digit next to a letter)."""
    if index <= 0 or index >= len(ids):
        return True
    left, right = tokenizer.piece(ids[index - 1]), tokenizer.piece(ids[index])
    if not left or not right:
        return False
    classes = (_char_class(left[-1]), _char_class(right[0]))
    return "space" not in classes and classes[0] != classes[1]


def _window(ids: Sequence[int], joint: int, tokenizer: Tokenizer) -> tuple[int, int]:
    """Tokens around ``joint`` out to a line break and then a hard edge on each side, so that runs of
    whitespace (which can merge across lines) and words are never cut at the window's edge."""
    start = joint - 1
    while start > 0 and not tokenizer.piece(ids[start - 1]).endswith(b"\n"):
        start -= 1
    while start > 0 and not _hard_edge(ids, start, tokenizer):
        start -= 1
    end = joint
    while end < len(ids) and b"\n" not in tokenizer.piece(ids[end]):
        end += 1
    while end < len(ids) and not _hard_edge(ids, end, tokenizer):
        end += 1
    return max(start, 0), min(end, len(ids))


def joint_is_clean(ids: Sequence[int], joint: int, tokenizer: Tokenizer) -> bool:
    """Whether the tokens around ``joint`` re-encode to the same ids."""
    start, end = _window(ids, joint, tokenizer)
    window = ids[start:end]
    return tuple(tokenizer.encode(tokenizer.decode(window), special=True)) == tuple(window)


def _round_trip_problems(prompt: RenderedPrompt, frame: Frame, tokenizer: Tokenizer) -> list[str]:
    """Joints whose surroundings do not re-encode to the same ids. Prompts up to
    ``FULL_CHECK_TOKENS`` are re-encoded whole, which is exact for any tokenizer; longer ones are
    checked around each joint, and a failing window is settled by re-encoding the whole prompt."""
    whole_is_clean = None
    if prompt.prompt_tokens <= FULL_CHECK_TOKENS:
        whole_is_clean = tuple(tokenizer.encode(prompt.text, special=True)) == prompt.token_ids
        if whole_is_clean:
            return []
    suspects = [j for j in _joints(prompt, frame) if not joint_is_clean(prompt.token_ids, j, tokenizer)]
    if whole_is_clean is None and suspects:
        whole_is_clean = tuple(tokenizer.encode(prompt.text, special=True)) == prompt.token_ids
    if whole_is_clean is not False:
        return []
    if not suspects:
        return ["the prompt's tokens change when its text is re-encoded"]
    return [f"tokens around position {joint} change when the text is re-encoded" for joint in suspects]


def verify_prompt(
    prompt: RenderedPrompt,
    case: Case,
    layout: Layout,
    tokenizer: Tokenizer,
    frame: Frame,
    tolerance: float,
    *,
    depth_tolerance: float = 0.1,
    targets: Mapping[str, float] | None = None,
) -> list[str]:
    """Every reason this prompt must not be sent; an empty list means it is verified.

    The depth actually reached is recomputed from the spans (filler tokens before the piece over
    all filler tokens) and must be within ``depth_tolerance`` of the depth asked for that piece
    (``targets``, by default the piece's pinned depth, else the layout's depth): a short haystack of
    long lines cannot put evidence at its midpoint, and must not pretend to. The filler must not
    contain any of the case's ``guarded`` strings (a competing value outside the declared evidence)."""
    problems: list[str] = []
    if prompt.tokenizer_digest and prompt.tokenizer_digest != tokenizer.digest():
        # Spans are token offsets: under another tokenizer they point at other text.
        return [
            f"the prompt was rendered with tokenizer {prompt.tokenizer_digest}, not {tokenizer.digest()}: "
            "its spans are stale and must be computed again"
        ]
    ids = prompt.token_ids
    text = prompt.text
    copies = Counter(evidence.text for evidence in case.evidence)
    pinned = {e.evidence_id: e.depth for e in case.evidence if e.depth is not None}
    spans = {span.evidence_id: span for span in prompt.spans}
    expected_ids = [evidence.evidence_id for evidence in case.evidence]
    if len(spans) != len(prompt.spans) or sorted(spans) != sorted(expected_ids):
        problems.append(f"spans {sorted(spans)} do not match the evidence pieces {sorted(expected_ids)}")
    for evidence in case.evidence:
        span = spans.get(evidence.evidence_id)
        if span is None:
            continue
        piece = ids[span.token_start : span.token_end]
        bare = (evidence.text,) if prompt.haystack_tokens == 0 else ()
        if (
            not _spans_line(piece, evidence.text, tokenizer)
            if evidence.source is not None
            else tokenizer.decode(piece)
            not in (evidence_unit(evidence, True), evidence_unit(evidence, False), *bare)
        ):
            problems.append(
                f"evidence {evidence.evidence_id} is not at its span [{span.token_start}, {span.token_end})"
            )
        occurrences = text.count(evidence.text)
        if occurrences != copies[evidence.text]:
            problems.append(
                f"evidence {evidence.evidence_id} occurs {occurrences} times in the prompt, "
                f"the case places it {copies[evidence.text]} times"
            )
    haystack_start = len(frame.prefix) + len(frame.header)
    evidence_before = 0
    for span in sorted(prompt.spans, key=lambda span: span.token_start):
        filler_before = span.token_start - haystack_start - evidence_before
        evidence_before += span.token_end - span.token_start
        asked = (targets or {}).get(span.evidence_id, pinned.get(span.evidence_id, layout.depth))
        reached = filler_before / prompt.haystack_tokens if prompt.haystack_tokens else asked
        if abs(reached - asked) > depth_tolerance:
            problems.append(
                f"evidence {span.evidence_id} sits at depth {reached:.2f}, asked {asked:.2f} "
                f"(tolerance {depth_tolerance}; the haystack has {prompt.haystack_tokens} tokens)"
            )
    roles = {evidence.evidence_id: evidence.role for evidence in case.evidence}
    answer_starts = [s.token_start for s in prompt.spans if roles.get(s.evidence_id) == "answer"]
    for span in prompt.spans:
        if (
            roles.get(span.evidence_id) == "superseded"
            and answer_starts
            and span.token_start > min(answer_starts)
        ):
            problems.append(
                f"superseded evidence {span.evidence_id} comes after the revision that replaced it"
            )
    allowed = max(1, int(tolerance * layout.length_tokens))
    if abs(len(ids) - layout.length_tokens) > allowed:
        problems.append(f"prompt has {len(ids)} tokens, target {layout.length_tokens} ± {allowed}")
    head = (*frame.prefix, *frame.header)
    tail = (*frame.footer, *frame.suffix)
    if ids[: len(head)] != head:
        problems.append("template prefix or header is missing or altered")
    if len(ids) < len(head) + len(tail) or ids[len(ids) - len(tail) :] != tail:
        problems.append("prompt is truncated: question footer or template suffix is missing")
    if not problems and case.guarded:
        problems.extend(_guard_problems(prompt, case, frame, tokenizer))
    if not problems:
        problems.extend(_round_trip_problems(prompt, frame, tokenizer))
    return problems


def _spans_line(piece: Sequence[int], line: str, tokenizer: Tokenizer) -> bool:
    """Whether ``piece`` is the fewest tokens that hold ``line``: the line and, at its edges, only
    white space the first and last tokens share with the neighbouring lines."""
    return (
        tokenizer.decode(piece).strip() == line
        and line not in tokenizer.decode(piece[1:])
        and line not in tokenizer.decode(piece[:-1])
    )


def _guard_problems(prompt: RenderedPrompt, case: Case, frame: Frame, tokenizer: Tokenizer) -> list[str]:
    """Guarded strings found in the filler (the haystack outside every evidence span)."""
    ids = prompt.token_ids
    start = len(frame.prefix) + len(frame.header)
    stop = len(ids) - len(frame.footer) - len(frame.suffix)
    pieces: list[int] = []
    for span in sorted(prompt.spans, key=lambda span: span.token_start):
        pieces.extend(ids[start : span.token_start])
        start = span.token_end
    pieces.extend(ids[start:stop])
    filler = tokenizer.decode(pieces)
    return [
        f"the filler contains {guard!r}, a competing value for case {case.case_id}"
        for guard in case.guarded
        if mentions(filler, guard)
    ]
