"""``codebase``: questions about a code base used as filler, answered by a line already in it.

Nothing is inserted: each case names the file and a fragment of the one line that holds the
answer (in a perturbed code base, see ``rotscope perturb``, so memory cannot supply it); the
layout moves that file so the line lands at the asked depth. A tree read in its own order in
several rotations (``filler.order: tree``, ``filler.variants: N``) asks each question once in
each rotation, so the questions' results do not rest on one arrangement of the code. Cases are written in the
experiment file under ``codebase.cases``, so a run folder's ``config.yaml`` holds them too.
"""

from __future__ import annotations

import re
from pathlib import Path

from rotscope._util.decode import read_text
from rotscope.config.experiment import ExperimentConfig
from rotscope.errors import BadInput
from rotscope.filler import ENCODING_HINT
from rotscope.filler.code import KIND as CODE_FILLER
from rotscope.filler.code import code_root, source_files
from rotscope.filler.tree_variants import tree_variant_count
from rotscope.tasks import BuiltCases, register_task
from rotscope.tasks.codebase_options import CodebaseCase, CodebaseConfig
from rotscope.types import Case, Evidence, Oracle, TaskFamily

ROTATION_MARK = "@"
"""Between a case's id and its rotation of the tree where the tree is read in several
(``filler.order: tree`` with ``filler.variants: N``): ``bender-fallback@2`` is the question asked
in rotation 2. The copies of a case come one after the other, so copy ``k`` (case index
``case * N + k``) reads variant ``k`` by the planner's ``index mod variants``."""


def _evidence_line(root: Path, record: CodebaseCase, where: str, encoding: str) -> str:
    """The stripped text of the one line of the file that contains ``line_contains``."""
    path = root / record.evidence.file
    if not path.is_file():
        raise BadInput(f"{where}.evidence.file: {record.evidence.file!r} is not a file under {root}")
    text = read_text(path, encoding, ENCODING_HINT)
    lines = [line.strip() for line in text.split("\n") if record.evidence.line_contains in line]
    if len(lines) != 1:
        raise BadInput(
            f"{where}.evidence.line_contains: {record.evidence.line_contains!r} is on {len(lines)} lines "
            f"of {record.evidence.file}, it must name exactly one"
        )
    return lines[0]


def _standing_alone(value: str) -> re.Pattern[str]:
    """``value`` as a number or word of its own: ``10`` is not found in ``100`` nor in ``0.010``."""
    return re.compile(rf"(?<![\w.]){re.escape(value)}(?![\w]|\.\d)")


def _check_decoys(root: Path, cases: list[CodebaseCase], encoding: str) -> None:
    """Each decoy stands in some file of the code base: a fake needle that is not there competes
    with nothing."""
    wanted = {decoy for record in cases for decoy in record.decoys}
    if not wanted:
        return
    found: set[str] = set()
    for path in source_files(root):
        text = read_text(path, encoding, ENCODING_HINT)
        found.update(decoy for decoy in wanted - found if _standing_alone(decoy).search(text))
        if found == wanted:
            return
    for number, record in enumerate(cases):
        for decoy in record.decoys:
            if decoy not in found:
                raise BadInput(
                    f"codebase.cases.{number}.decoys: {decoy!r} is in no file under {root}; a decoy is a "
                    "value planted in the code base (rotscope perturb's inject)"
                )


def build_codebase_cases(config: ExperimentConfig) -> list[Case]:
    given = config.optional_section(CodebaseConfig)
    if given is None:
        raise BadInput("codebase: the task family codebase needs codebase.cases in the experiment file")
    if config.filler.kind != CODE_FILLER:
        raise BadInput(f"filler.kind: the codebase family reads a code filler, got {config.filler.kind!r}")
    root = code_root(config.filler)
    rotations = tree_variant_count(config.filler)
    cases: list[Case] = []
    for number, record in enumerate(given.cases):
        where = f"codebase.cases.{number}"
        line = _evidence_line(root, record, where, config.filler.encoding)
        if not any(answer in line for answer in (record.answer, *record.aliases)):
            raise BadInput(f"{where}.answer: {record.answer!r} is not on the evidence line {line!r}")
        cases.extend(
            Case(
                case_id=record.id if rotations == 1 else f"{record.id}{ROTATION_MARK}{rotation}",
                task="codebase",
                evidence=(Evidence("line", line, "answer", source=Path(record.evidence.file).as_posix()),),
                question=record.question,
                oracle=Oracle(
                    answer=record.answer,
                    aliases=tuple(record.aliases),
                    traps=tuple(("decoy", decoy) for decoy in record.decoys),
                ),
                guarded=(line,),
                slices=(("kind", record.kind),),
            )
            for rotation in range(rotations)
        )
    _check_decoys(root, given.cases, config.filler.encoding)
    return cases


@register_task("codebase")
def codebase_family(config: ExperimentConfig) -> TaskFamily:
    return BuiltCases("codebase", lambda: build_codebase_cases(config))
