"""What a task family builds: a ``Case`` (evidence to plant, a question, its ``Oracle``) and its
controls (evidence absent, evidence only)."""

from __future__ import annotations

from dataclasses import dataclass, replace

AnswerKind = str
"""A registered answer kind: the name a scorer registers under (``answer_kinds.register_scorer``,
the ``rotscope.scorers`` entry points); ``answer_kinds.check_kind`` refuses an unknown one."""


Role = str
"""A registered evidence role (``evidence_roles.register_role``): ``answer``, ``support``, ``decoy``,
``superseded``, ``spread`` built in, each placed by its registered placement; ``prompt.placement``
refuses a role nobody registered."""
EVIDENCE_ONLY_SUFFIX = "~evidence"
ABSENT_SUFFIX = "~absent"
EVIDENCE_ONLY_POSITION = "evidence-only"


@dataclass(frozen=True)
class Evidence:
    """A piece of text planted in the haystack, inserted byte-exact on lines of its own (or a line
    already in the corpus, see ``source``).

    ``role`` decides where it goes, by the placement it is registered with
    (``rotscope.evidence_roles``): the ``answer`` piece (the one that completes the answer) sits
    at the grid's depth; ``support`` pieces follow the experiment's placement rule; ``decoy``
    pieces take independent seeded depths; ``superseded`` pieces go somewhere before the answer;
    ``spread`` pieces (a task over a whole region, ``aggregation``) go evenly, in listed order,
    over the region the grid's depth names (``rotscope.prompt.placement.region``). An outside
    family registers a role of its own (``register_role("distractor", placement="seeded")``).
    """

    evidence_id: str
    text: str
    role: Role = "answer"
    depth: float | None = None
    """A depth pinned by the case itself (a copy of a reasoning task at the midpoint or the end);
    ``None`` places the piece by its role."""
    source: str | None = None
    """The corpus document (its name in the filler) that already holds ``text`` as a line: the
    layout then moves that document so the line lands at the asked depth, and inserts nothing.
    ``None``: the text is inserted."""
    turn: str | None = None
    """In session filler, the kind of turn the piece goes in (``user`` for an instruction the user
    gave); ``None``: the filler's ``turn``. Static filler ignores it."""


@dataclass(frozen=True)
class Claims:
    """Claim-level checks of a user case (``tasks: [cases]``): each claim is a claim id with the
    surface strings that state it. ``cite`` maps each required claim to the evidence ids that
    support it when the case asks for citations (``None`` when it does not)."""

    required: tuple[tuple[str, tuple[str, ...]], ...] = ()
    forbidden: tuple[tuple[str, tuple[str, ...]], ...] = ()
    cite: tuple[tuple[str, tuple[str, ...]], ...] | None = None
    evidence_ids: tuple[str, ...] = ()
    distractors: tuple[tuple[str, str], ...] = ()
    """(evidence id, text) of the pieces that cannot establish the answer."""
    quotes: tuple[tuple[str, str], ...] | None = None
    """When a citation must quote its evidence (a case file's ``quote: true``): (evidence id, the
    span a quote citing it must come from), where a quote counts only as an exact,
    whitespace-normalised substring of its document's span; ``None``: ids alone are checked."""


@dataclass(frozen=True)
class Oracle:
    """What counts as a right answer. ``abstain`` means the right answer is 'not in the context'."""

    answer: str
    aliases: tuple[str, ...] = ()
    abstain: bool = False
    traps: tuple[tuple[str, str], ...] = ()
    """(category, value) pairs: a wrong answer naming ``value`` is scored with that failure category
    (a decoy, the anchor alone, a superseded value, the unfiltered maximum). In a ``set`` answer a
    pair whose value is one of ``items`` names the category of a reply that misses that item alone
    (a chain's last hop)."""
    claims: Claims | None = None
    """Claim checks replace answer matching when set."""
    kind: AnswerKind = "phrase"
    """``phrase``: the answer is found anywhere in the reply. ``number`` and ``choice``: the reply must
    end with ``Answer: <number>`` or ``Answer: <letter>`` (the prompt asks for that format). ``set``:
    every string of ``items`` must be in the reply (RULER's ``string_match_all``). ``instruction``:
    the reply must comply with the rule ``answer`` names (``scoring.instruction``), in controls
    too, where compliance is accidental. ``reply``: the reply must be ``items[0]`` (a code to
    prefix) followed by ``answer``, an earlier turn's whole text (``scoring.reply``, MRCR's task)."""
    items: tuple[str, ...] = ()
    """The strings a ``set`` answer must all name, in the order that gives them meaning (a chain's
    hops); ``answer`` is their display form."""

    gold: tuple[tuple[str, str], ...] = ()
    """In an evidence-absent control: its case's (lead-in, answer) readings
    (``answer_kinds.answer_readings``), so the control reads how likely the case's answer is
    without its evidence (``absent_logprob``). Empty elsewhere."""

    def accepted(self) -> tuple[str, ...]:
        return (self.answer, *self.aliases)


@dataclass(frozen=True)
class Haystack:
    """The haystack a case was rendered in, so a case saved from a failure renders in it again: the
    experiment's filler source read in the order of ``seed``, the ``variant``-th of the ``variants``
    orders a plan reads (``filler.variants``), at least ``tokens`` tokens long, its documents chosen
    avoiding the strings of ``avoid`` (the failing run's guarded strings, which a generating source
    keeps out). ``digest`` is that haystack's digest when the case failed; ``filler`` names its source.
    """

    seed: int
    variant: int
    variants: int
    tokens: int
    avoid: tuple[str, ...] = ()
    digest: str | None = None
    filler: str | None = None


PinnedDepths = tuple[tuple[int, float | str, tuple[tuple[str, float], ...]], ...]
"""(length, position, ((evidence id, depth), ...)) per pinned layout whose pieces sit at their own depths."""


@dataclass(frozen=True)
class Case:
    """One task instance: evidence to plant, a question about it, and its oracle.

    ``control`` marks a control of a case: the evidence-absent one (same layout, no evidence,
    the right answer is an explicit abstention) or, with ``evidence_only``, the case's evidence
    with no padding at all (a case failing there is a capability failure, not a positional one).
    """

    case_id: str
    task: str
    evidence: tuple[Evidence, ...]
    question: str
    oracle: Oracle
    control: bool = False
    guarded: tuple[str, ...] = ()
    """Strings (entity names, planted values) that filler must never contain: a competing value
    outside the declared evidence would make the probe ambiguous."""
    parts: tuple[tuple[str, Case], ...] = ()
    """For a multi-question prompt: (label, case) per question, in the order asked. Each part is
    scored on its own; the bundle's ``question`` is the list of labelled questions."""
    grouped: bool = False
    """All evidence goes as one block at the grid's depth in listed order (a retrieved context):
    only padding moves between layouts, so evidence order is checked across them."""
    slices: tuple[tuple[str, str], ...] = ()
    """(field, value) pairs carried into every row, so results can be sliced by them."""
    evidence_only: bool = False
    at_depth: tuple[float, str | None] | None = None
    """A question of a prompt whose questions sit at depths of their own (``multikey``): the grid
    depth (and its name) its evidence is pinned at, where its rows are counted; ``None``: the
    layout's depth."""

    @property
    def own_depths(self) -> bool:
        """Every question's evidence sits at its own pinned depth: the prompt has one layout per
        length, and each question is reported at its own depth."""
        return bool(self.parts) and all(part.at_depth is not None for _, part in self.parts)

    pins: tuple[tuple[int, float | str], ...] = ()
    """(length in tokens, position) layouts the case is pinned to: it runs there and only there,
    not on the experiment's grid (a failure re-run where it happened). A position is written as in
    ``depths``: a fraction, a name or ``@N``. ``()``: the grid's layouts."""
    pin_depths: PinnedDepths = ()
    """Each evidence piece's own depth at a pinned layout (where a generated case's decoys and facts
    sat when it failed), which replaces the depths its roles would give; ``()``: placed by role."""
    haystack: Haystack | None = None
    """The haystack the case renders in (a case saved from a failure); ``None``: the experiment's
    haystack variant for the case's index."""

    def absent_control(self, gold: tuple[tuple[str, str], ...] = ()) -> Case:
        """The case without its evidence. A reply is checked as the case's own when the oracle
        is a rule to follow (``instruction``): compliance there is the base rate by chance.
        ``gold``: the case's answer readings, which the control reads without the evidence."""
        keeps_oracle = self.oracle.kind == "instruction"
        return Case(
            case_id=f"{self.case_id}{ABSENT_SUFFIX}",
            task=self.task,
            evidence=(),
            question=self.question,
            oracle=self.oracle if keeps_oracle else Oracle(answer="", abstain=True, gold=gold),
            control=True,
            guarded=self.guarded,
            parts=tuple((label, part.absent_control()) for label, part in self.parts),
            slices=self.slices,
            pins=self.pins,
            haystack=self.haystack,
        )

    def evidence_only_control(self) -> Case:
        """The case with its evidence and no padding, scored as the case itself is. Evidence that
        lives in a corpus document is given as its line alone, like inserted evidence."""
        return replace(
            self,
            case_id=f"{self.case_id}{EVIDENCE_ONLY_SUFFIX}",
            evidence=tuple(replace(evidence, source=None) for evidence in self.evidence),
            control=True,
            evidence_only=True,
            parts=tuple((label, part.evidence_only_control()) for label, part in self.parts),
        )

    def scored_parts(self) -> tuple[tuple[str, Case], ...]:
        """The (label, case) pairs that get a row and a score: the parts, or the case itself."""
        return self.parts or (("", self),)
