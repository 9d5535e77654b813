"""Prompts whose haystack is a working session: the session's turns in the model's chat template,
cut to length at turn boundaries, the evidence placed inside turns of a chosen kind (a tool
result, a user turn, an assistant turn) at the asked depth, and a last user turn with the question.

Depth is counted over the session's tokens (everything before the question turn, evidence left
out), as in a static haystack. A piece goes on a line of its own at a line end of its turn, the
nearest to its target depth whose rendering keeps it at exact token boundaries. Every prompt is
checked from scratch (``verify_session``) before it is returned.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rotscope._util.text import mentions
from rotscope.config.experiment import PlacementConfig
from rotscope.errors import BadInput
from rotscope.filler.session import Turn
from rotscope.prompt.builder import PlacementError
from rotscope.prompt.frame import MULTI_FOOTER, evidence_unit
from rotscope.prompt.placement import target_depths
from rotscope.prompt.session_render import (
    SESSION_FILLER,
    SessionMessage,
    content_starts,
    fit_session,
    holds_marker,
    parse_turns,
    render,
    supports_tools,
    template_parts,
    to_message,
)

__all__ = [
    "SESSION_FILLER",
    "Located",
    "SessionBuilder",
    "content_tokens",
    "question_turn",
    "session_prompt",
    "verify_session",
]

from rotscope.answer_kinds import instruction_for
from rotscope.types import Case, Evidence, Layout, RenderedPrompt, Span, Tokenizer

SESSION_ASK = "Using only what was said earlier in this session, answer the question.\n"
_CANDIDATE_TRIES = 8


def question_turn(case: Case) -> str:
    """The last user turn: the question(s) and the answer instruction, as in a static prompt."""
    if case.parts:
        return SESSION_ASK + MULTI_FOOTER.format(question=case.question).removeprefix("\n</context>\n\n")
    if case.oracle.kind == "instruction":
        return f"{case.question}\n{instruction_for('instruction')}"
    return f"{SESSION_ASK}Question: {case.question}\n{instruction_for(case.oracle.kind)}"


@dataclass(frozen=True)
class _Placed:
    evidence: Evidence
    message: int
    offset: int
    """Character offset in the message's content where the unit goes."""
    unit: str


def _byte_offsets(tokenizer: Tokenizer, ids: Sequence[int]) -> list[int]:
    offsets = [0]
    for token_id in ids:
        offsets.append(offsets[-1] + len(tokenizer.piece(token_id)))
    return offsets


class SessionBuilder:
    """Renders cases into session prompts of exact token lengths for one tokenizer and session."""

    def __init__(
        self,
        tokenizer: Tokenizer,
        turns: Sequence[Turn],
        *,
        turn_kind: str = "tool",
        digest: str,
        origin: str,
        tolerance: float = 0.05,
        depth_tolerance: float = 0.1,
        placement: PlacementConfig | None = None,
        seed: int = 0,
    ) -> None:
        self.tokenizer = tokenizer
        tools = supports_tools(tokenizer)
        self.turns = [to_message(turn, tools) for turn in turns]
        self.turn_kind = turn_kind
        self.digest = digest
        self.origin = origin
        self.tolerance = tolerance
        self.depth_tolerance = depth_tolerance
        self.placement = placement or PlacementConfig()
        self.seed = seed
        self._fits: dict[tuple[int, int], list[SessionMessage]] = {}
        self._parts: dict[tuple[str, ...], list[str]] = {}

    def _starts(self, messages: Sequence[SessionMessage]) -> list[int]:
        roles = tuple(message.role for message in messages)
        if roles not in self._parts:
            self._parts[roles] = template_parts(self.tokenizer, roles)
        return content_starts(self._parts[roles], [message.content for message in messages])

    def kind_of(self, evidence: Evidence) -> str:
        """The kind of turn a piece goes in: the case's own (an instruction in a user turn), else the
        filler's ``turn``."""
        return evidence.turn or self.turn_kind

    def session(self, case: Case, length: int) -> list[SessionMessage]:
        """The session cut to hold ``case``'s question and evidence within ``length`` tokens."""
        final = question_turn(case)
        units = sum(self.tokenizer.count(evidence_unit(e, False)) for e in case.evidence)
        budget = length - units
        # the cut depends on the question turn's size alone (turns meet at template markers)
        key = (self.tokenizer.count(final), budget)
        if key not in self._fits:
            self._fits[key] = fit_session(
                self.tokenizer, self.turns, SessionMessage("user", final, "user"), budget, origin=self.origin
            )
        return self._fits[key]

    def render(self, case: Case, layout: Layout) -> RenderedPrompt:
        """The verified prompt for ``case`` at ``layout``, or ``PlacementError`` with the reasons."""
        if case.evidence_only:
            raise PlacementError(f"case {case.case_id}: an evidence-only control has no session filler")
        if any(evidence.source is not None for evidence in case.evidence):
            raise BadInput(f"case {case.case_id}: evidence already in a corpus cannot go in session filler")
        session = self.session(case, layout.length_tokens)
        final = SessionMessage("user", question_turn(case), "user")
        targets = target_depths(case, layout, self.placement, self.seed)
        candidates = {
            e.evidence_id: self._candidates(session, final, e, targets[e.evidence_id]) for e in case.evidence
        }
        reasons: list[str] = []
        for attempt in range(_CANDIDATE_TRIES):
            placed = []
            for evidence in case.evidence:
                options = candidates[evidence.evidence_id]
                if not options:
                    raise PlacementError(
                        f"case {case.case_id} at {layout}: the session holds no {self.kind_of(evidence)} turn"
                    )
                message, offset = options[min(attempt, len(options) - 1)]
                unit = evidence_unit(evidence, at_start=offset == 0)
                placed.append(_Placed(evidence, message, offset, unit))
            prompt = self._assemble(session, final, placed)
            problems = verify_session(
                prompt, case, layout, self.tokenizer, self.tolerance, self.depth_tolerance, targets
            )
            if not problems:
                return prompt
            reasons.extend(problems)
        raise PlacementError(f"case {case.case_id} at {layout}: " + "; ".join(dict.fromkeys(reasons)))

    def _candidates(
        self, session: list[SessionMessage], final: SessionMessage, evidence: Evidence, depth: float
    ) -> list[tuple[int, int]]:
        """(message, offset) where the piece may go in turns of its kind, nearest its depth first.
        Depth is estimated on the session without evidence: tokens before the point over all."""
        kind = self.kind_of(evidence)
        text = render(self.tokenizer, [*session, final])
        ids = self.tokenizer.encode(text, special=True)
        starts = self._starts([*session, final])
        char_bytes = _char_bytes(text)
        offsets = _byte_offsets(self.tokenizer, ids)
        begin = _token_at(offsets, char_bytes[starts[_first_turn([*session, final])]])
        end = _token_at(offsets, char_bytes[starts[-1]]) - begin
        points: list[tuple[float, int, int]] = []
        for index, message in enumerate(session):
            if message.kind != kind:
                continue
            content = message.content
            # a tool result sent as a plain turn opens with its label line: evidence goes after it
            first = [] if message.role != message.kind else [0]
            for offset in [*first, *(i for i, c in enumerate(content) if c == "\n"), len(content)]:
                if 0 < offset < len(content) and content[offset - 1] == "\n":
                    continue  # inside a run of line breaks: the tokenizer could merge across it
                token = _token_at(offsets, char_bytes[starts[index] + offset])
                points.append((abs((token - begin) / max(end, 1) - depth), index, offset))
        points.sort()
        return [(index, offset) for _, index, offset in dict.fromkeys(points)]

    def _assemble(
        self, session: list[SessionMessage], final: SessionMessage, placed: list[_Placed]
    ) -> RenderedPrompt:
        contents = [message.content for message in session]
        inserted: dict[int, list[tuple[int, _Placed]]] = {}
        for piece in sorted(placed, key=lambda p: (p.message, -p.offset)):
            content = contents[piece.message]
            contents[piece.message] = content[: piece.offset] + piece.unit + content[piece.offset :]
            # pieces after this one in the same message have moved by this unit
            moved = [(at + len(piece.unit), other) for at, other in inserted.get(piece.message, [])]
            inserted[piece.message] = [*moved, (piece.offset, piece)]
        messages = [SessionMessage(m.role, contents[i], m.kind) for i, m in enumerate(session)] + [final]
        located = [
            Located(piece.evidence.evidence_id, message, at, piece.unit)
            for message, pieces in inserted.items()
            for at, piece in pieces
        ]
        return session_prompt(self.tokenizer, messages, located, self._starts(messages), self.digest)


@dataclass(frozen=True)
class Located:
    """Where a piece is in a session's messages: its text ``unit`` at character ``at`` of the
    content of message ``message`` (a line inside a turn, or a turn's whole content)."""

    evidence_id: str
    message: int
    at: int
    unit: str


def session_prompt(
    tokenizer: Tokenizer,
    messages: Sequence[SessionMessage],
    located: Sequence[Located],
    starts: Sequence[int],
    digest: str,
) -> RenderedPrompt:
    """The prompt of ``messages`` rendered in the chat template, each located piece's exact token
    span and its depth: the session's tokens before it, evidence left out, over all of them.
    ``starts``: where each message's content starts in the rendered text (``content_starts``)."""
    text = render(tokenizer, messages)
    ids = tokenizer.encode(text, special=True)
    char_bytes = _char_bytes(text)
    offsets = _byte_offsets(tokenizer, ids)
    spans = []
    for piece in located:
        start_byte = char_bytes[starts[piece.message] + piece.at]
        end_byte = start_byte + len(piece.unit.encode("utf-8"))
        spans.append(
            Span(
                piece.evidence_id,
                _token_at(offsets, start_byte, exact=True),
                _token_at(offsets, end_byte, exact=True),
                0.0,
            )
        )
    question_start = _token_at(offsets, char_bytes[starts[-1]])
    context_start = _token_at(offsets, char_bytes[starts[_first_turn(messages)]])
    evidence_tokens = sum(span.token_end - span.token_start for span in spans if span.token_start >= 0)
    haystack = question_start - context_start - evidence_tokens
    spans.sort(key=lambda span: span.token_start)
    before = 0
    placed_spans = []
    for span in spans:
        filler_before = span.token_start - context_start - before
        depth = filler_before / haystack if haystack and span.token_start >= 0 else 0.0
        before += max(span.token_end - span.token_start, 0)
        placed_spans.append(Span(span.evidence_id, span.token_start, span.token_end, round(depth, 4)))
    return RenderedPrompt(
        messages=tuple(message.message() for message in messages),
        text=text,
        token_ids=tuple(ids),
        spans=tuple(placed_spans),
        haystack_tokens=haystack,
        corpus_digest=digest,
        context_start=context_start,
        tokenizer_digest=tokenizer.digest(),
    )


def content_tokens(
    tokenizer: Tokenizer, messages: Sequence[SessionMessage], starts: Sequence[int]
) -> list[int]:
    """The token at which each message's content starts in the rendered prompt (``starts``: the
    characters, ``content_starts``): where a family that arranges whole turns measures them."""
    text = render(tokenizer, messages)
    offsets = _byte_offsets(tokenizer, tokenizer.encode(text, special=True))
    char_bytes = _char_bytes(text)
    return [_token_at(offsets, char_bytes[start]) for start in starts]


def _first_turn(messages: Sequence[SessionMessage]) -> int:
    """The first message after the leading system turns: where the session's haystack begins (the
    system turns are its fixed head, as a static prompt's template and header are)."""
    return next((i for i, message in enumerate(messages) if message.role != "system"), len(messages) - 1)


def _char_bytes(text: str) -> list[int]:
    """The byte offset of each character of ``text`` and of its end."""
    starts = [0]
    for character in text:
        starts.append(starts[-1] + len(character.encode("utf-8")))
    return starts


def _token_at(offsets: Sequence[int], byte: int, *, exact: bool = False) -> int:
    """The token that starts at ``byte`` (``-1`` with ``exact`` when none does), else the one
    holding it."""
    index = bisect.bisect_right(offsets, byte) - 1
    if exact and offsets[index] != byte:
        return -1
    return index


def verify_session(
    prompt: RenderedPrompt,
    case: Case,
    layout: Layout,
    tokenizer: Tokenizer,
    tolerance: float,
    depth_tolerance: float,
    targets: Mapping[str, float],
) -> list[str]:
    """Every reason this session prompt must not be sent; empty means verified: the text parses
    back into the same turns (role boundaries intact), each piece is its span's exact text (a line
    in a turn, or a turn's whole content), once, at the depth asked, the length is within
    tolerance, the filler holds no guarded value and the text re-encodes to the same ids."""
    problems: list[str] = []
    ids, text = prompt.token_ids, prompt.text
    roles = [message["role"] for message in prompt.messages]
    if parse_turns(tokenizer, text, roles) != [message["content"] for message in prompt.messages]:
        problems.append("the rendered session does not parse back into its turns")
    marked = [i for i, message in enumerate(prompt.messages) if holds_marker(tokenizer, message["content"])]
    if marked:
        problems.append(
            f"turn {marked[0] + 1} holds a chat-template marker: it would break the turn boundaries"
        )
    spans = {span.evidence_id: span for span in prompt.spans}
    reached: dict[str, float] = {}
    before = 0
    for span in sorted(prompt.spans, key=lambda span: span.token_start):
        filler_before = span.token_start - prompt.context_start - before
        before += span.token_end - span.token_start
        reached[span.evidence_id] = filler_before / prompt.haystack_tokens if prompt.haystack_tokens else 0.0
    copies = Counter(evidence.text for evidence in case.evidence)
    for evidence in case.evidence:
        found = spans.get(evidence.evidence_id)
        if found is None or found.token_start < 0 or found.token_end < 0:
            problems.append(f"evidence {evidence.evidence_id} does not start and end at token boundaries")
            continue
        span = found
        piece = tokenizer.decode(ids[span.token_start : span.token_end])
        whole_turn = piece == evidence.text and any(m["content"] == piece for m in prompt.messages)
        if not whole_turn and piece not in (evidence_unit(evidence, True), evidence_unit(evidence, False)):
            problems.append(
                f"evidence {evidence.evidence_id} is not at its span [{span.token_start}, {span.token_end})"
            )
        if text.count(evidence.text) != copies[evidence.text]:
            problems.append(
                f"evidence {evidence.evidence_id} occurs {text.count(evidence.text)} times in the prompt"
            )
        asked = targets.get(evidence.evidence_id, layout.depth)
        if abs(reached[evidence.evidence_id] - asked) > depth_tolerance:
            problems.append(
                f"evidence {evidence.evidence_id} sits at depth {reached[evidence.evidence_id]:.2f}, "
                f"asked {asked:.2f} "
                f"(tolerance {depth_tolerance}; the session has {prompt.haystack_tokens} tokens)"
            )
    allowed = max(1, int(tolerance * layout.length_tokens))
    if abs(len(ids) - layout.length_tokens) > allowed:
        problems.append(f"prompt has {len(ids)} tokens, target {layout.length_tokens} ± {allowed}")
    if not problems and case.guarded:
        filler = _filler_text(prompt, case)
        problems.extend(
            f"the filler contains {guard!r}, a competing value for case {case.case_id}"
            for guard in case.guarded
            if mentions(filler, guard)
        )
    if not problems and tuple(tokenizer.encode(text, special=True)) != ids:
        problems.append("the prompt's tokens change when its text is re-encoded")
    return problems


def _filler_text(prompt: RenderedPrompt, case: Case) -> str:
    """The session before the question turn, each evidence piece left out."""
    session = prompt.text[: prompt.text.rfind(prompt.messages[-1]["content"])]
    for evidence in case.evidence:
        session = session.replace(evidence.text, "\n")
    return session
