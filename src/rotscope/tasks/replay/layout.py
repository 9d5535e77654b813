"""The position matrix of a recorded prompt: its evidence, as one block in recorded order, moved to
each depth of the grid through the recording's own padding; the messages before, the text around
the context (the question among it) and the evidence bytes stay as recorded.

The block goes where a padding line ends (or before all padding), nearest the asked depth in the
padding's tokens; each candidate is assembled from separately encoded parts and verified as any
prompt (``verify_prompt``: spans, depth, length, guards, re-encoding), and the next nearest line end
is tried when one fails. Every layout has the recording's length: the padding neither grows nor
shrinks, so the grid's ``lengths`` do not apply here. With ``controls`` the padding alone (no
evidence) is the absent control.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from dataclasses import dataclass

from rotscope.config.experiment import ExperimentConfig
from rotscope.errors import BadInput
from rotscope.prompt.frame import Frame, evidence_unit
from rotscope.prompt.verify import verify_prompt
from rotscope.tasks.replay.records import Recording
from rotscope.types import Case, Layout, Rejection, RenderedPrompt, Span, Tokenizer

_SENTINEL = "\u2063ROTSCOPE-RECORDED-CONTEXT\u2063"
_CANDIDATE_TRIES = 8
CONTROL_POSITION = "absent"


@dataclass(frozen=True)
class _Parts:
    """A recording around its context, encoded once: the template and text before it, after it."""

    frame: Frame
    length: int
    """Tokens of the recording as recorded."""


def _parts(recording: Recording, tokenizer: Tokenizer) -> _Parts:
    marked = (
        *recording.earlier,
        {"role": recording.role, "content": recording.before + _SENTINEL + recording.after},
    )
    rendered = tokenizer.render_chat(marked)
    if rendered.count(_SENTINEL) != 1:
        raise BadInput(
            f"replay: case {recording.case.case_id}: the chat template does not place the last message once"
        )
    head, tail = rendered.split(_SENTINEL)
    original = tokenizer.render_chat(
        (*recording.earlier, {"role": recording.role, "content": recording.recorded})
    )
    frame = Frame(
        prefix=tuple(tokenizer.encode(head, special=True)),
        header=(),
        footer=(),
        suffix=tuple(tokenizer.encode(tail, special=True)),
        prefix_bytes=head.encode("utf-8"),
        header_bytes=b"",
        footer_bytes=b"",
        suffix_bytes=tail.encode("utf-8"),
    )
    return _Parts(frame, len(tokenizer.encode(original, special=True)))


def _cut_points(padding: str) -> list[int]:
    """Where the block may go: before all padding, at each line end, after all padding."""
    return sorted({0, len(padding), *(i for i, char in enumerate(padding) if char == "\n")})


def _token_starts(padding: str, tokenizer: Tokenizer) -> list[int]:
    """Character offsets of the padding's token boundaries (its tokens encoded whole)."""
    offsets, size = [0], 0
    data = padding.encode("utf-8")
    for token_id in tokenizer.encode(padding):
        size += len(tokenizer.piece(token_id))
        offsets.append(len(data[:size].decode("utf-8", errors="ignore")))
    return offsets


def _assemble(
    recording: Recording, parts: _Parts, tokenizer: Tokenizer, case: Case, cut: int
) -> RenderedPrompt:
    padding = recording.padding
    head, tail = padding[:cut], padding[cut:]
    ids = [*parts.frame.prefix]
    first = tokenizer.encode(head) if head else []
    ids.extend(first)
    content = recording.before + head
    spans: list[Span] = []
    filler = [(len(recording.before), len(content))]
    rest = tokenizer.encode(tail) if tail else []
    haystack = len(first) + len(rest)
    for evidence in case.evidence:
        unit = evidence_unit(evidence, at_start=cut == 0)
        piece = tokenizer.encode(unit)
        spans.append(
            Span(
                evidence.evidence_id,
                len(ids),
                len(ids) + len(piece),
                len(first) / haystack if haystack else 0.0,
            )
        )
        ids.extend(piece)
        content += unit
    filler.append((len(content), len(content) + len(tail)))
    content += tail
    ids.extend(rest)
    ids.extend(parts.frame.suffix)
    content += recording.after
    head_text = parts.frame.prefix_bytes.decode("utf-8")
    return RenderedPrompt(
        messages=(*recording.earlier, {"role": recording.role, "content": content}),
        text=head_text
        + content[len(recording.before) : len(content) - len(recording.after)]
        + parts.frame.suffix_bytes.decode("utf-8"),
        token_ids=tuple(ids),
        spans=tuple(spans),
        haystack_tokens=haystack,
        corpus_digest=digest(padding),
        context_start=len(parts.frame.prefix),
        tokenizer_digest=tokenizer.digest(),
        filler_chars=tuple((start, end) for start, end in filler if end > start),
    )


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _depths(config: ExperimentConfig, filler_tokens: int) -> list[tuple[float, str | None]]:
    """The grid's positions, an offset ``@N`` as its fraction of this padding (skipped beyond it)."""
    depths = list(config.positions())
    for offset in config.offsets():
        if offset <= filler_tokens and filler_tokens:
            depths.append((offset / filler_tokens, f"@{offset}"))
    return depths


def render_recording(
    recording: Recording, config: ExperimentConfig, tokenizer: Tokenizer
) -> tuple[list[tuple[Case, Layout, RenderedPrompt]], list[Rejection]]:
    """Every verified layout of a recording (and its absent control), and why any was rejected."""
    parts = _parts(recording, tokenizer)
    case = recording.case
    boundaries = _token_starts(recording.padding, tokenizer)
    total = len(boundaries) - 1
    cuts = _cut_points(recording.padding)
    rendered: list[tuple[Case, Layout, RenderedPrompt]] = []
    rejected: list[Rejection] = []

    def check(prompt: RenderedPrompt, placed: Case, layout: Layout, slack: int = 0) -> list[str]:
        return verify_prompt(
            prompt,
            placed,
            layout,
            tokenizer,
            parts.frame,
            config.length_tolerance + slack / layout.length_tokens,
            depth_tolerance=config.depth_tolerance,
        )

    for depth, name in _depths(config, total):
        layout = Layout(parts.length, depth, name)
        nearest = sorted(cuts, key=lambda cut: (abs(bisect_right(boundaries, cut) - 1 - depth * total), cut))
        reasons: list[str] = []
        for cut in nearest[:_CANDIDATE_TRIES]:
            prompt = _assemble(recording, parts, tokenizer, case, cut)
            problems = check(prompt, case, layout)
            if not problems:
                rendered.append((case, layout, prompt))
                break
            reasons.extend(problems)
        else:
            reason = f"case {case.case_id} at {layout}: " + "; ".join(dict.fromkeys(reasons))
            rejected.append(Rejection.of(case, layout, reason))
    if config.controls:
        control = case.absent_control()
        layout = Layout(parts.length, 0.0, CONTROL_POSITION)
        prompt = _assemble(recording, parts, tokenizer, control, 0)
        # the control lacks the evidence's tokens, and only those, in the recording's length cell
        problems = check(prompt, control, layout, slack=max(0, parts.length - prompt.prompt_tokens))
        if problems:
            rejected.append(
                Rejection.of(control, layout, f"case {control.case_id} at {layout}: " + "; ".join(problems))
            )
        else:
            rendered.append((control, layout, prompt))
    return rendered, rejected
