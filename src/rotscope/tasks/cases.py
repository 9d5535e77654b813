"""``cases``: users' own cases from a JSON Lines file (``cases: PATH`` in the experiment file).

Each line is one case, validated against ``schemas/cases.schema.json`` (generated from
``CaseRecord``; a test keeps the two equal) and then for what a schema cannot say: claim ids that
exist, unique ids, texts that occur once. All of a case's documents and distractors form one block
at the grid's depth, documents first, each in file order, so only padding moves between layouts.
A line with ``pin`` runs at its pinned layouts only; ``origin`` records where it failed before. A
pin with ``depths`` places each piece at its own depth there instead of as one block, and
``haystack`` names the haystack to render in: together they re-render a saved failure's prompt.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveInt,
    StringConstraints,
    ValidationError,
    field_validator,
)

from rotscope._util.jsonl import jsonl_lines
from rotscope.config.experiment import ExperimentConfig
from rotscope.errors import BadInput
from rotscope.position import Position
from rotscope.tasks import BuiltCases, register_task
from rotscope.types import Case, Claims, Evidence, Haystack, Oracle, Role, TaskFamily

SCHEMA_FILE = "cases.schema.json"
CITE_INSTRUCTION = "Cite the id of each document you use in square brackets, like [doc-id]."
QUOTE_INSTRUCTION = (
    "Cite each document you use by its id in square brackets followed by an exact quote from it in "
    'double quotes, like [doc-id] "the words you rely on".'
)
Identifier = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", max_length=80)]
Text = Annotated[str, StringConstraints(min_length=1, pattern=r"\S")]
Depth = Annotated[float, Field(ge=0.0, le=1.0)]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class DocumentRecord(_Record):
    """A piece of evidence with an id; ``claims`` lists the claim ids it supports."""

    id: Identifier
    text: Text
    claims: list[Identifier] = Field(default_factory=list)
    span: Text | None = Field(
        default=None,
        description=(
            "With quote: true, the part of text that establishes its claims (an exact substring of "
            "text); a quote citing this document must lie inside it. Default: the whole text."
        ),
    )


class DistractorRecord(_Record):
    """A topically similar document that cannot establish the answer."""

    id: Identifier
    text: Text


class PinRecord(_Record):
    """A layout to run the case at: its length in tokens and its position, as in ``depths``."""

    length: PositiveInt
    position: float | str = Field(description="A fraction in [0, 1], a position name or @N.")
    depths: dict[Identifier, Depth] = Field(
        default_factory=dict,
        description=(
            "Each document's and distractor's own depth at this layout (filler before it over all "
            "filler, as a row's spans record it), instead of one block at the position; every piece "
            "or none. Written by rotscope cases RUN --failing where the case failed."
        ),
    )

    @field_validator("position")
    @classmethod
    def _known_position(cls, position: float | str) -> float | str:
        Position.parse(position)  # raises ValueError naming what is wrong
        return position


class OriginRecord(_Record):
    """Where the case failed: the run and model, the layout (a control's position is ``absent``),
    and the case it was in that run."""

    run: Text
    model: Text
    length: PositiveInt
    position: float | str
    task: Identifier | None = None
    case_id: Text | None = None


class HaystackRecord(_Record):
    """The haystack a case was rendered in (``rotscope cases RUN --failing`` writes it), so its pins
    render in the same filler: the experiment's filler source in the order of ``seed``, the
    ``variant``-th of ``variants`` orders, at least ``tokens`` tokens, avoiding ``avoid``."""

    seed: int = Field(description="The seed the filler's documents were ordered by (the run's seed).")
    variant: Annotated[int, Field(ge=0)] = Field(description="The haystack variant the case was in.")
    variants: PositiveInt = Field(description="How many variants the run read (filler.variants).")
    tokens: PositiveInt = Field(description="The fewest tokens the run read into each haystack.")
    avoid: list[Text] = Field(
        default_factory=list,
        description=(
            "Strings the run's filler kept out (its cases' guarded values); a generating source reads them."
        ),
    )
    digest: str | None = Field(
        default=None, description="That haystack's digest: a run whose haystack differs says so."
    )
    filler: str | None = Field(default=None, description="The filler source it was read from, for people.")


class CaseRecord(_Record):
    """One line of a case file."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        frozen=True,
        title="rotscope case",
        json_schema_extra={"$schema": "https://json-schema.org/draft/2020-12/schema"},
    )

    case_id: Identifier
    question: Text
    documents: list[DocumentRecord] = Field(
        default_factory=list, description="Evidence, inserted in this order as one block."
    )
    distractors: list[DistractorRecord] = Field(
        default_factory=list, description="Inserted after the documents, in this order."
    )
    claims: dict[Identifier, Annotated[list[Text], Field(min_length=1)]] = Field(
        default_factory=dict,
        description=(
            "Claim id -> accepted surface strings (normalised matching); the first is the canonical "
            "one, shown as the expected answer and kept out of the filler."
        ),
    )
    required_claims: list[Identifier] = Field(default_factory=list, description="All must be in the answer.")
    forbidden_claims: list[Identifier] = Field(
        default_factory=list, description="None may be in the answer; one that is is a high-risk failure."
    )
    abstain: bool = Field(default=False, description="Evidence-absent case: the right answer is to abstain.")
    cite: bool = Field(
        default=False, description="Documents are shown as '[id] text' and the answer must cite them."
    )
    quote: bool = Field(
        default=False,
        description=(
            'With cite: each citation must quote its document, [doc-id] "exact words": a claim is '
            "cited only by a supporting document quoted from its span (whitespace-normalised exact "
            "substring), and a quote outside the span is a wrong citation."
        ),
    )
    slices: dict[Identifier, str] = Field(
        default_factory=dict, description="Free fields carried into every row (risk, language, hops...)."
    )
    origin: list[OriginRecord] = Field(
        default_factory=list,
        description=(
            "Where the case failed (rotscope cases RUN --failing): run, model, length and position, "
            "one entry per layout. A record only: it decides neither layouts nor slices."
        ),
    )
    pin: list[PinRecord] = Field(
        default_factory=list,
        description=(
            "Run the case at these layouts and only there, instead of the experiment's lengths and "
            "depths; empty: the grid."
        ),
    )
    haystack: HaystackRecord | None = Field(
        default=None,
        description=(
            "The haystack the case failed in (with pin): its pins render there, not in the "
            "experiment's variant for the case; absent: the experiment's."
        ),
    )

    def pins(self) -> tuple[tuple[int, float | str], ...]:
        """The pinned (length, position) layouts, in the order given, without repeats."""
        return tuple(dict.fromkeys((pin.length, pin.position) for pin in self.pin))


def case_schema() -> dict[str, Any]:
    """The JSON Schema of one case-file line, as shipped in ``schemas/cases.schema.json``."""
    return CaseRecord.model_json_schema()


def shipped_schema() -> dict[str, Any]:
    text = resources.files("rotscope").joinpath("schemas", SCHEMA_FILE).read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def _field(location: Iterable[int | str]) -> str:
    where = ""
    for part in location:
        where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else str(part))
    return where or "(line)"


def _semantic_problem(record: CaseRecord) -> str | None:
    """What the schema cannot check, as ``field: message``, or ``None``."""
    ids = [d.id for d in record.documents] + [d.id for d in record.distractors]
    if len(set(ids)) != len(ids):
        return f"documents: ids {ids} are not unique"
    for name, listed in (
        ("required_claims", record.required_claims),
        ("forbidden_claims", record.forbidden_claims),
    ):
        for claim in listed:
            if claim not in record.claims:
                return f"{name}: claim {claim!r} is not defined in claims"
    for index, document in enumerate(record.documents):
        for claim in document.claims:
            if claim not in record.claims:
                return f"documents[{index}].claims: claim {claim!r} is not defined in claims"
    both = set(record.required_claims) & set(record.forbidden_claims)
    if both:
        return f"forbidden_claims: {sorted(both)} are also required"
    if record.abstain and record.required_claims:
        return "required_claims: an abstain case requires no claim (the right answer is to abstain)"
    if record.abstain and record.cite:
        return "cite: an abstain case has nothing to cite"
    if record.quote and not record.cite:
        return "quote: a quoted citation needs cite: true"
    for index, document in enumerate(record.documents):
        if document.span is not None and document.span not in document.text:
            return f"documents[{index}].span: not an exact substring of the document's text"
    if not record.abstain and not record.required_claims:
        return "required_claims: a case that is not abstain needs at least one required claim"
    for claim in record.required_claims:
        if not any(claim in document.claims for document in record.documents):
            return f"required_claims: no document supports claim {claim!r}"
    for number, pin in enumerate(record.pin):
        if pin.depths and set(pin.depths) != set(ids):
            return f"pin[{number}].depths: give a depth for every document and distractor ({ids}), or none"
        if bool(pin.depths) != bool(record.pin[0].depths):
            return f"pin[{number}].depths: give depths at every pin or at none, as pin[0] does"
    texts = [d.text for d in record.documents] + [d.text for d in record.distractors]
    for index, text in enumerate(texts):
        if any(text in other for other_index, other in enumerate(texts) if other_index != index):
            return f"documents: the text of {ids[index]!r} occurs inside another piece (each must occur once)"
    return None


def parse_case_line(line: str, where: str) -> CaseRecord:
    """One line as a ``CaseRecord``; ``BadInput`` names ``where`` (file:line) and the field."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as error:
        raise BadInput(f"{where}: not valid JSON ({error.msg} at column {error.colno})") from None
    if not isinstance(data, dict):
        raise BadInput(f"{where}: a case must be a JSON object, got {type(data).__name__}")
    try:
        record = CaseRecord.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        field = _field(first["loc"])
        if first["type"] == "extra_forbidden":
            raise BadInput(f"{where}: unknown field {field!r}") from None
        if first["type"] == "missing":
            raise BadInput(f"{where}: field {field!r} is required") from None
        message = first["msg"].removeprefix("Value error, ")
        raise BadInput(f"{where}: field {field!r}: {message} (got {first.get('input')!r})") from None
    problem = _semantic_problem(record)
    if problem is not None:
        raise BadInput(f"{where}: field {problem}")
    return record


def read_case_file(path: Path) -> list[CaseRecord]:
    """Every case of a JSON Lines file (blank lines skipped), validated; ids must be unique."""
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise BadInput(f"cases: file {path} not found") from None
    except UnicodeDecodeError:
        raise BadInput(f"cases: {path} is not UTF-8 text") from None
    except OSError as error:
        raise BadInput(f"cases: cannot read {path}: {error.strerror or error}") from None
    records: list[CaseRecord] = []
    seen: dict[str, int] = {}
    for number, line in jsonl_lines(text):
        record = parse_case_line(line, f"{path}:{number}")
        first = seen.get(record.case_id)
        if first is not None:
            raise BadInput(f"{path}:{number}: field 'case_id': {record.case_id!r} is already on line {first}")
        seen[record.case_id] = number
        records.append(record)
    if not records:
        raise BadInput(f"cases: {path} holds no case")
    return records


def _shown(record: CaseRecord, identifier: str, text: str) -> str:
    return f"[{identifier}] {text}" if record.cite else text


def case_from_record(record: CaseRecord) -> Case:
    """The ``Case`` of a record: documents as answer (supporting a required claim) or support
    evidence, distractors as decoys, claims in the oracle."""
    required = set(record.required_claims)
    evidence: list[Evidence] = []
    for document in record.documents:
        role: Role = "answer" if required & set(document.claims) else "support"
        evidence.append(Evidence(document.id, _shown(record, document.id, document.text), role))
    evidence += [Evidence(d.id, _shown(record, d.id, d.text), "decoy") for d in record.distractors]

    def surfaces(claim_ids: list[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
        return tuple((claim, tuple(record.claims[claim])) for claim in claim_ids)

    cite = None
    if record.cite:
        cite = tuple(
            (claim, tuple(d.id for d in record.documents if claim in d.claims))
            for claim in record.required_claims
        )
    claims = Claims(
        required=surfaces(record.required_claims),
        forbidden=surfaces(record.forbidden_claims),
        cite=cite,
        evidence_ids=tuple(d.id for d in record.documents),
        distractors=tuple((d.id, d.text) for d in record.distractors),
        quotes=tuple((d.id, d.span or d.text) for d in record.documents) if record.quote else None,
    )
    answer = "; ".join(record.claims[claim][0] for claim in record.required_claims)
    pin_depths = tuple(
        (pin.length, pin.position, tuple(pin.depths.items())) for pin in record.pin if pin.depths
    )
    # The canonical (first) string of each checked claim must not be in the filler: a competing
    # statement outside the declared evidence would make the case ambiguous.
    guarded = [record.claims[claim][0] for claim in [*record.required_claims, *record.forbidden_claims]]
    return Case(
        case_id=record.case_id,
        task="cases",
        evidence=tuple(evidence),
        question=_question(record),
        oracle=Oracle(answer="" if record.abstain else answer, abstain=record.abstain, claims=claims),
        guarded=tuple(dict.fromkeys(guarded)),
        grouped=not pin_depths,
        slices=tuple(sorted(record.slices.items())),
        pins=record.pins(),
        pin_depths=pin_depths,
        haystack=_haystack(record.haystack),
    )


def _haystack(record: HaystackRecord | None) -> Haystack | None:
    if record is None:
        return None
    return Haystack(
        seed=record.seed,
        variant=record.variant,
        variants=record.variants,
        tokens=record.tokens,
        avoid=tuple(record.avoid),
        digest=record.digest,
        filler=record.filler,
    )


def _question(record: CaseRecord) -> str:
    """The question as asked: with the citation instruction where the case asks for citations."""
    if not record.cite:
        return record.question
    return f"{record.question} {QUOTE_INSTRUCTION if record.quote else CITE_INSTRUCTION}"


def load_case_file(path: Path) -> list[Case]:
    """The cases of a case file, in file order."""
    return [case_from_record(record) for record in read_case_file(path)]


TASK = "cases"
"""The family's registered name, which its rows carry as their task."""


@register_task(TASK)
def cases_family(config: ExperimentConfig) -> TaskFamily:
    if not config.cases:
        raise BadInput("cases: the cases task family needs a case file: cases: PATH.jsonl")
    path = Path(config.cases).expanduser()
    return BuiltCases(TASK, lambda: load_case_file(path))
