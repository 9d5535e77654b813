"""A session's record, ``DIR/session.json``: which subject runs in which folder (``subjects``,
[folder, model] pairs in the order given), whether every subject's rows are stored yet
(``planned``), and what planning them again needs (the experiment; a pair's frozen plan). One
shape for both session forms (``--models`` and its two-subject form ``--pair``, ``kind``); a
folder is a name inside the session folder, never a path (ARCHITECTURE.md, ``modes/``).

Folders written before the pair was a session keep resuming: their ``pair.json``
(``{"subjects": {"baseline": M, "candidate": M}, ...}``) is read into the same record, and the
first write of a resume replaces it by ``session.json``."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rotscope._util.inside import inside, open_own
from rotscope.errors import BadInput
from rotscope.execution.state.run_folder import PAIR_FILE, SESSION_FILE

Kind = Literal["models", "pair"]
PAIR_FOLDERS = ("baseline", "candidate")
"""A pair's folders, by role: what ``rotscope gate`` is given."""
_NAME_MAX = 255
"""The longest file name (in bytes) the common file systems take."""
_WORDS: dict[Kind, str] = {"models": "a --models session", "pair": "a paired session"}


class SessionRecord(BaseModel):
    """``session.json``, checked where it is read: a hand-edited file is bad input naming the
    field, never a ``KeyError`` deep in a resume. Keys a later version adds are kept."""

    model_config = ConfigDict(strict=True, extra="allow")

    kind: Kind = "models"
    """``pair``: two subjects in ``baseline`` and ``candidate``, under a frozen plan if one was given;
    a record without it (written before pairs were sessions) is a ``--models`` session."""
    subjects: list[Annotated[list[str], Field(min_length=2, max_length=2)]] = Field(min_length=2)
    """Each subject as [folder, model or subject name], in the order given."""
    seed: int | None = None
    seeds: str = ""
    planned: bool = True
    """False until every subject's rows are stored: a resume then plans the session again."""
    experiment: dict[str, Any] | None = None
    """The session's experiment as given (``ExperimentConfig`` dumped), before any subject."""
    frozen_plan: dict[str, Any] | None = None
    """A pair's frozen plan (``rotscope run --plan``), checked again when planning resumes."""
    allow_deviation: bool = False
    prompts: str | None = None
    """How the subjects' prompts relate, once planned (``models_session.IDENTICAL``/``RERENDERED``)."""
    names: dict[str, str | None] | None = None
    """Each folder's subject name (``subjects:`` of the experiment), once planned."""

    @property
    def folders(self) -> list[str]:
        return [folder for folder, _ in self.subjects]

    @property
    def words(self) -> str:
        """The session in words: ``a paired session`` or ``a --models session``."""
        return _WORDS[self.kind]


def is_session(folder: Path) -> bool:
    """Whether ``folder`` holds a session's record (``session.json``, or an older pair's ``pair.json``)."""
    return (folder / SESSION_FILE).is_file() or (folder / PAIR_FILE).is_file()


def read_record(out: Path) -> SessionRecord:
    """The session record of ``out``; ``BadInput`` naming the file and field when it is not one,
    or when it names a folder that is not a plain name inside ``out``."""
    legacy = not (out / SESSION_FILE).is_file() and (out / PAIR_FILE).is_file()
    path = out / (PAIR_FILE if legacy else SESSION_FILE)
    words = _WORDS["pair" if legacy else "models"]
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as error:  # RecursionError: JSON nested too deep
        raise BadInput(f"{path}: not {words}'s record ({error})") from None
    if not isinstance(data, dict):
        raise BadInput(f"{path}: not {words}'s record (not a mapping)")
    if legacy:
        data = _from_pair_file(path, data)
    try:
        record = SessionRecord.model_validate(data)
    except ValidationError as error:
        raise BadInput(f"{path}: {_first_problem(error)}") from None
    _check_planning(path, record)
    _check_folders(path, out, record)
    return record


def _from_pair_file(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    """An older pair's ``pair.json`` as a session record: its ``subjects`` mapped by role become
    the ``baseline`` and ``candidate`` folders."""
    subjects = data.get("subjects")
    if not isinstance(subjects, dict):
        raise BadInput(f"{path}: not a paired session's record (no subjects)")
    for role in PAIR_FOLDERS:
        if not isinstance(subjects.get(role), str) or not subjects[role]:
            raise BadInput(f"{path}: subjects.{role} must be the subject's name or model, a string")
    return {**data, "kind": "pair", "subjects": [[role, subjects[role]] for role in PAIR_FOLDERS]}


def _check_planning(path: Path, record: SessionRecord) -> None:
    if record.planned:
        return
    if record.experiment is None:
        raise BadInput(f"{path}: {record.words} stopped while planning, without its experiment")
    if not isinstance(record.experiment.get("cache", {}), dict):
        raise BadInput(f"{path}: experiment.cache must be a mapping")


def _check_folders(path: Path, out: Path, record: SessionRecord) -> None:
    """Every folder a plain name, distinct, and inside ``out`` once links are followed: a session
    writes and resumes its subjects' folders and nothing else."""
    for folder, subject in record.subjects:
        if not subject:
            raise BadInput(f"{path}: subjects: the subject of folder {folder!r} is empty")
        if not is_folder_name(folder) or not _leads_inside(out, folder):
            raise BadInput(f"{path}: subjects: {folder!r} is not a folder name inside {out}")
    if len(set(record.folders)) != len(record.folders):
        raise BadInput(f"{path}: subjects: a folder is named twice ({', '.join(record.folders)})")


def _leads_inside(out: Path, folder: str) -> bool:
    """Whether ``out/folder`` is a folder right inside ``out`` once links are followed."""
    try:
        return inside(out, out / folder).parent == out.resolve()
    except BadInput:
        return False


def is_folder_name(name: str) -> bool:
    """A plain name for a folder in the session folder: no separator, not ``.``/``..``, not the
    session's own files, no longer than a file system takes (255 bytes)."""
    return (
        bool(name)
        and len(name.encode("utf-8", "surrogatepass")) <= _NAME_MAX
        and re.fullmatch(r"[^/\\\x00]+", name) is not None
        and name not in {".", "..", SESSION_FILE, PAIR_FILE}
        and not name.startswith(".")
    )


def write_record(out: Path, record: SessionRecord) -> None:
    """``session.json`` replaced whole (a temporary file renamed over it), never seen half written;
    an older pair's ``pair.json`` goes once it is (the reader prefers ``session.json``)."""
    partial = out / f".{SESSION_FILE}.partial"
    with os.fdopen(open_own(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "w", encoding="utf-8") as handle:
        data = {key: value for key, value in record.model_dump(mode="json").items() if value is not None}
        handle.write(json.dumps(data, indent=2) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(partial, out / SESSION_FILE)
    (out / PAIR_FILE).unlink(missing_ok=True)


def remove_record(out: Path) -> None:
    """A refused session leaves nothing behind, as a refused run does."""
    (out / SESSION_FILE).unlink(missing_ok=True)


def _first_problem(error: ValidationError) -> str:
    """The first problem of ``error`` as ``field 'a.b': what it should be``."""
    problem = error.errors()[0]
    key = ".".join(str(part) for part in problem["loc"]) or "(top)"
    if problem["type"] == "missing":
        return f"field {key!r} is missing"
    return f"field {key!r}: {problem['msg']}"
