"""Replay files: recorded production prompts (``replay: PATH.jsonl`` in the experiment file), their
marked evidence moved through their own recorded padding (Agent Replay Evaluation).

Each line is one recorded chat (``messages``) whose last message holds the evidence, marked either
by markers the user inserts (``[[evidence]]...[[/evidence]]``, ``[[evidence:ID]]`` to name a piece)
or by character ranges of that message as recorded (``evidence: [{start, end}]``). The padding is
that message's context: by default everything before the question (which must occur in it once),
or the part between ``[[context]]`` and ``[[/context]]`` (or ``context: {start, end}``). The oracle
is written as in a case file (claims, required and forbidden claims, abstain, slices). The layouts
are built in ``layout``; everything but the context stays as recorded.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from rotscope._util.jsonl import jsonl_lines
from rotscope.errors import BadInput
from rotscope.tasks.case_lines import CaseLine
from rotscope.tasks.cases import Identifier, Text, case_from_record, parse_case_line
from rotscope.types import Case

TASK = "replay"
EVIDENCE_MARK = re.compile(r"\[\[evidence(?::([A-Za-z0-9][A-Za-z0-9._-]*))?\]\]")
EVIDENCE_END = "[[/evidence]]"
CONTEXT_MARK, CONTEXT_END = "[[context]]", "[[/context]]"


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class MessageRecord(_Record):
    role: Annotated[str, StringConstraints(min_length=1)]
    content: str


class RangeRecord(_Record):
    """Characters ``[start, end)`` of the last message's content as recorded."""

    start: Annotated[int, Field(ge=0)]
    end: Annotated[int, Field(ge=0)]
    id: Identifier | None = None


class ReplayRecord(_Record):
    """One line of a replay file."""

    case_id: Identifier
    messages: list[MessageRecord] = Field(min_length=1)
    question: Text
    evidence: list[RangeRecord] = Field(default_factory=list)
    context: RangeRecord | None = None
    claims: dict[Identifier, Annotated[list[Text], Field(min_length=1)]] = Field(default_factory=dict)
    required_claims: list[Identifier] = Field(default_factory=list)
    forbidden_claims: list[Identifier] = Field(default_factory=list)
    abstain: bool = False
    slices: dict[Identifier, str] = Field(default_factory=dict)


@dataclass(frozen=True)
class Recording:
    """A recorded prompt taken apart: the messages before the last, the last message's text before
    and after its context, the context's padding (evidence removed) and the evidence pieces."""

    case: Case
    earlier: tuple[dict[str, str], ...]
    role: str
    before: str
    after: str
    padding: str
    pieces: tuple[tuple[str, str], ...]
    """(evidence id, text) in recorded order."""
    recorded: str
    """The last message's content as recorded (markers removed)."""
    line: CaseLine
    """The recording's case as a case-file line (its pieces the documents, its oracle as recorded):
    what ``rotscope cases --failing`` writes for a replayed layout that failed."""


def _unmark(
    content: str, where: str
) -> tuple[str, list[tuple[int, int, str | None]], tuple[int, int] | None]:
    """The content without markers, the evidence ranges and the context range they marked."""
    clean: list[str] = []
    length = 0
    pieces: list[tuple[int, int, str | None]] = []
    context: list[int] = []
    token = re.compile(
        r"\[\[evidence(?::[A-Za-z0-9][A-Za-z0-9._-]*)?\]\]|\[\[/evidence\]\]|\[\[/?context\]\]"
    )
    position = 0
    open_piece: tuple[int, str | None] | None = None
    for match in token.finditer(content):
        clean.append(content[position : match.start()])
        length += match.start() - position
        position = match.end()
        mark = match.group(0)
        if mark in (CONTEXT_MARK, CONTEXT_END):
            if (mark == CONTEXT_MARK) != (len(context) == 0) or len(context) >= 2:
                raise BadInput(
                    f"{where}: field 'messages': {mark} out of order (one [[context]]...[[/context]])"
                )
            context.append(length)
        elif mark == EVIDENCE_END:
            if open_piece is None:
                raise BadInput(f"{where}: field 'messages': {EVIDENCE_END} without [[evidence]] before it")
            pieces.append((open_piece[0], length, open_piece[1]))
            open_piece = None
        else:
            if open_piece is not None:
                raise BadInput(f"{where}: field 'messages': [[evidence]] inside another piece of evidence")
            found = EVIDENCE_MARK.fullmatch(mark)
            open_piece = (length, found.group(1) if found else None)
    clean.append(content[position:])
    if open_piece is not None:
        raise BadInput(f"{where}: field 'messages': [[evidence]] is never closed with {EVIDENCE_END}")
    if len(context) == 1:
        raise BadInput(f"{where}: field 'messages': [[context]] is never closed with {CONTEXT_END}")
    return "".join(clean), pieces, (context[0], context[1]) if context else None


def recording_from_record(record: ReplayRecord, where: str) -> Recording:
    """Take a record apart (``BadInput`` naming ``where`` and the field for what does not fit)."""
    last = record.messages[-1]
    for index, message in enumerate(record.messages[:-1]):
        if "[[evidence" in message.content or "[[context]]" in message.content:
            raise BadInput(f"{where}: field 'messages[{index}]': evidence is marked in the last message only")
    content, marked, context = _unmark(last.content, where)
    if marked and record.evidence:
        raise BadInput(f"{where}: field 'evidence': give ranges or markers, not both")
    if context is not None and record.context is not None:
        raise BadInput(f"{where}: field 'context': give a range or [[context]] markers, not both")
    ranges = marked or [(r.start, r.end, r.id) for r in record.evidence]
    if record.context is not None:
        context = (record.context.start, record.context.end)
    found = content.count(record.question)
    if found != 1:
        raise BadInput(f"{where}: field 'question': must occur once in the last message, found {found}")
    if context is None:
        # everything before the question, without the white space around it (which stays in place:
        # a run of line breaks would otherwise be cut in two where the context meets the question)
        region = content[: content.index(record.question)]
        context = (len(region) - len(region.lstrip()), len(region.rstrip()))
    start, end = context
    if not 0 <= start <= end <= len(content):
        raise BadInput(
            f"{where}: field 'context': [{start}, {end}) is outside the last message "
            f"({len(content)} characters)"
        )
    if start <= content.index(record.question) < end:
        raise BadInput(f"{where}: field 'question': the question lies inside the context, which moves")
    ranges = sorted(ranges)
    pieces: list[tuple[str, str]] = []
    padding: list[str] = []
    cursor = start
    for number, (piece_start, piece_end, identifier) in enumerate(ranges, start=1):
        if not start <= cursor <= piece_start < piece_end <= end:
            raise BadInput(
                f"{where}: field 'evidence': piece {number} [{piece_start}, {piece_end}) is empty, overlaps "
                f"another or lies outside the context [{start}, {end})"
            )
        padding.append(content[cursor:piece_start])
        text = content[piece_start:piece_end]
        if text != text.strip() or "\n" in text:
            raise BadInput(
                f"{where}: field 'evidence': piece {number} must be one line without surrounding white space "
                f"(got {text!r})"
            )
        pieces.append((identifier or f"e{number}", text))
        cursor = piece_end
        own_line = piece_start == 0 or content[piece_start - 1] == "\n"
        if own_line and content[piece_end : piece_end + 1] == "\n" and piece_end + 1 <= end:
            cursor += 1  # a piece on a line of its own leaves no empty line behind in the padding
    padding.append(content[cursor:end])
    line = _case_line(record, pieces)
    case = replace(case_from_record(parse_case_line(json.dumps(line), where)), task=TASK)
    return Recording(
        case=case,
        earlier=tuple(m.model_dump() for m in record.messages[:-1]),
        role=last.role,
        before=content[:start],
        after=content[end:],
        padding="".join(padding),
        pieces=tuple(pieces),
        recorded=content,
        line=line,
    )


def _case_line(record: ReplayRecord, pieces: list[tuple[str, str]]) -> CaseLine:
    """The case of a recording as a case-file line (checked as one when read): each piece a
    document supporting the claims it states."""

    def states(text: str, claim: str) -> bool:
        return any(surface.casefold() in text.casefold() for surface in record.claims[claim])

    line: CaseLine = {
        "case_id": record.case_id,
        "question": record.question,
        "documents": [
            {"id": identifier, "text": text, "claims": [c for c in record.claims if states(text, c)]}
            for identifier, text in pieces
        ],
        "claims": record.claims,
        "required_claims": record.required_claims,
        "forbidden_claims": record.forbidden_claims,
        "abstain": record.abstain,
        "slices": record.slices,
    }
    return line


def read_replay_file(path: Path) -> list[Recording]:
    """Every recording of a replay file, in file order (blank lines skipped), ids unique."""
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise BadInput(f"replay: file {path} not found") from None
    except (UnicodeDecodeError, OSError) as error:
        raise BadInput(f"replay: cannot read {path} ({error})") from None
    recordings: list[Recording] = []
    seen: set[str] = set()
    for number, line in jsonl_lines(text):
        where = f"{path}:{number}"
        record = _parse(line, where)
        if record.case_id in seen:
            raise BadInput(f"{where}: field 'case_id': {record.case_id!r} is not unique")
        seen.add(record.case_id)
        recordings.append(recording_from_record(record, where))
    if not recordings:
        raise BadInput(f"replay: {path} holds no recording")
    return recordings


def _parse(line: str, where: str) -> ReplayRecord:
    try:
        data: Any = json.loads(line)
    except json.JSONDecodeError as error:
        raise BadInput(f"{where}: not valid JSON ({error.msg} at column {error.colno})") from None
    if not isinstance(data, dict):
        raise BadInput(f"{where}: a recording must be a JSON object, got {type(data).__name__}")
    try:
        return ReplayRecord.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "(line)"
        if first["type"] == "extra_forbidden":
            raise BadInput(f"{where}: unknown field {field!r}") from None
        if first["type"] == "missing":
            raise BadInput(f"{where}: field {field!r} is required") from None
        raise BadInput(f"{where}: field {field!r}: {first['msg']} (got {first.get('input')!r})") from None
