"""Check a rendered prompt from scratch before it may be sent.

``verify_prompt`` re-checks the evidence bytes at each recorded span, each as often as the case
places it (once, or one per intended copy) and at its asked depth, the length within tolerance,
header and footer intact, no guarded value in the filler, and the text re-encoding to the same ids
(so the ids are what the tokenizer itself makes of the text). ``joint_is_clean`` is the local
re-encoding check the builder also uses to choose where the haystack ends.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from rotscope._util.text import mentions
from rotscope.evidence_roles import placement_of
from rotscope.prompt.frame import Frame, evidence_unit
from rotscope.prompt.separation import asked_tokens, fact_ids, measured_gaps, separation_tolerance
from rotscope.types import Case, Layout, RenderedPrompt, Tokenizer

FULL_CHECK_TOKENS = 8192


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
    problems.extend(_separation_problems(prompt, case, layout, depth_tolerance))
    placed = {evidence.evidence_id: placement_of(evidence.role) for evidence in case.evidence}
    answer_starts = [s.token_start for s in prompt.spans if placed.get(s.evidence_id) == "grid"]
    for span in prompt.spans:
        if (
            placed.get(span.evidence_id) == "before"
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


def _separation_problems(
    prompt: RenderedPrompt, case: Case, layout: Layout, depth_tolerance: float
) -> list[str]:
    """Each pair of consecutive facts whose measured filler gap is not the layout's separation
    within ``separation_tolerance`` (``prompt.separation``)."""
    facts = fact_ids(case)
    spans = {span.evidence_id for span in prompt.spans}
    if layout.separation is None or len(facts) < 2 or not set(facts) <= spans:
        return []
    asked = asked_tokens(layout.separation, prompt.haystack_tokens)
    allowed = separation_tolerance(asked, depth_tolerance)
    return [
        f"facts {earlier} and {later} are {gap} filler tokens apart, asked {asked} (separation "
        f"{layout.separation}, tolerance {allowed})"
        for earlier, later, gap in zip(facts, facts[1:], measured_gaps(prompt.spans, facts), strict=False)
        if abs(gap - asked) > allowed
    ]


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
