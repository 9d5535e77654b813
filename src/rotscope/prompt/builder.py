"""Place evidence into filler and render the final prompt in the model's tokens.

A prompt is assembled from token arrays: the chat template's prefix, a header, a slice of the
tokenized corpus with each evidence piece inserted as lines of its own where a filler line ends,
a footer with the question(s), and the template's suffix (the fixed parts are in ``frame``). Its
length is the length of that whole id sequence. Evidence that is already a line of a corpus
document (``Evidence.source``) is not inserted: the prompt is a window of a corpus arranged around
that document, starting where the line lands at the asked depth, and the line's tokens are its span.

Every candidate prompt is checked by ``verify.verify_prompt`` before it is returned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from itertools import pairwise

import numpy as np

from rotscope.answer_kinds import instruction_for
from rotscope.config.experiment import PlacementConfig
from rotscope.errors import BadInput
from rotscope.filler.anchor import AnchoredCorpus
from rotscope.filler.corpus import TokenizedCorpus
from rotscope.prompt.frame import (
    FOOTER_TEMPLATE,
    HEADER,
    MULTI_FOOTER,
    Frame,
    evidence_unit,
    unit_for,
)
from rotscope.prompt.placement import target_depths
from rotscope.prompt.separation import asked_tokens, fact_ids, separation_tolerance
from rotscope.prompt.verify import joint_is_clean, verify_prompt
from rotscope.types import AnswerKind, Case, Evidence, Layout, RenderedPrompt, Span, Tokenizer

_SENTINEL = "\u2063ROTSCOPE-USER-CONTENT\u2063"
_CANDIDATE_TRIES = 8
_END_SEARCH = 16
_GROUP_SEARCH = 256
"""Line ends tried for the first of a group of separated facts."""


class PlacementError(Exception):
    """No position near the asked depth gave a prompt that passes verification."""


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
                footer = FOOTER_TEMPLATE.format(question=question, instruction=instruction_for(kind))
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
        targets = target_depths(case, layout, self.placement, self.seed, end)
        facts = fact_ids(case) if layout.separation is not None else []
        gap = asked_tokens(layout.separation, end) if layout.separation is not None else 0
        if len(facts) > 1 and gap * (len(facts) - 1) > end:
            raise PlacementError(
                f"case {case.case_id} at length {layout.length_tokens}: separation {layout.separation} "
                f"({gap} filler tokens between each of its {len(facts)} facts) needs "
                f"{gap * (len(facts) - 1)} filler tokens, the haystack holds {end}"
            )
        candidates = {
            evidence.evidence_id: self.corpus.nearest_line_ends(targets[evidence.evidence_id] * end, end)
            for evidence in case.evidence
        }
        if len(facts) > 1:
            candidates[facts[0]] = self._group_starts(candidates[facts[0]], len(facts), gap, end)
        reasons: list[str] = []
        for attempt in range(_CANDIDATE_TRIES):
            chosen = {
                e.evidence_id: candidates[e.evidence_id][min(attempt, len(candidates[e.evidence_id]) - 1)]
                for e in case.evidence
            }
            for earlier, later in pairwise(facts):
                # each fact where a filler line ends nearest the separation after the one before
                chosen[later] = self.corpus.nearest_line_ends(chosen[earlier] + gap, end)[0]
            cuts = [chosen[e.evidence_id] for e in case.evidence]
            order = sorted(range(len(cuts)), key=lambda i: (cuts[i], i))
            prompt = self._assemble(frame, [(case.evidence[i], cuts[i]) for i in order], end)
            problems = self._verify(prompt, case, layout, frame, targets)
            if not problems:
                return prompt
            reasons.extend(problems)
            if not case.evidence:
                break
        raise PlacementError(f"case {case.case_id} at {layout}: " + "; ".join(dict.fromkeys(reasons)))

    def _group_starts(self, starts: list[int], count: int, gap: int, end: int) -> list[int]:
        """The first fact's line ends (best first) from which each next fact, at the line end
        nearest ``gap`` filler tokens on, lands within the separation's tolerance; ``starts`` as
        they are where none does (the verifier then names the miss)."""
        allowed = separation_tolerance(gap, self.depth_tolerance)
        fitting = []
        for start in starts[:_GROUP_SEARCH]:
            cut, fits = start, True
            for _ in range(count - 1):
                following = self.corpus.nearest_line_ends(cut + gap, end)[0]
                fits, cut = fits and abs(following - cut - gap) <= allowed, following
            if fits:
                fitting.append(start)
        return fitting or starts

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
        head, offsets = len(frame.header_bytes), corpus.offsets

        def at(token: int) -> int:
            return head + int(offsets[token]) - int(offsets[start])

        filler_bytes = ((at(start), at(line[0])), (at(line[1]), at(end)))
        return RenderedPrompt(
            messages=self._messages(body.decode("utf-8", errors="replace")),
            text=(frame.prefix_bytes + body + frame.suffix_bytes).decode("utf-8", errors="replace"),
            token_ids=tuple(ids),
            spans=(span,),
            haystack_tokens=filler,
            corpus_digest=corpus.digest,
            context_start=base,
            tokenizer_digest=self.tokenizer.digest(),
            filler_chars=_char_ranges(body, filler_bytes),
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
        filler_bytes: list[tuple[int, int]] = []
        filler_start = 0
        for number, (item, cut) in enumerate(placements, start=1):
            ids.extend(corpus.ids[filler_start:cut].tolist())
            filler_bytes.append(
                (len(body), len(body) + int(corpus.offsets[cut] - corpus.offsets[filler_start]))
            )
            body += corpus.data[corpus.offsets[filler_start] : corpus.offsets[cut]]
            unit = unit_for(item, cut, end, last=number == len(placements))
            piece = self.tokenizer.encode(unit)
            spans.append(Span(item.evidence_id, len(ids), len(ids) + len(piece), cut / end if end else 0.0))
            ids.extend(piece)
            body += unit.encode("utf-8")
            filler_start = cut
        ids.extend(corpus.ids[filler_start:end].tolist())
        filler_bytes.append((len(body), len(body) + int(corpus.offsets[end] - corpus.offsets[filler_start])))
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
            filler_chars=_char_ranges(bytes(body), filler_bytes),
        )


def _char_ranges(body: bytes, ranges: Sequence[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Byte ranges of ``body`` as character ranges of its decoded text (the message content), empty
    ones dropped. A bound inside a multi-byte character counts that character as before it."""

    def chars(position: int) -> int:
        return len(body[:position].decode("utf-8", errors="replace"))

    return tuple((chars(start), chars(end)) for start, end in ranges if end > start)
