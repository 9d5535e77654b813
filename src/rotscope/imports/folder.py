"""An imported run folder: checked items written as a run store of the same schema as a run's,
made whole before it appears (``execution.state.run_folder.create_store``) under the folder's one
writer, so ``show``, ``report``, ``compare`` and ``gate`` read it as they read any run.

All or nothing: the whole file is read and checked, and every folder's rows and metadata made
(``prepare_import``), before the first write; a kill at any moment leaves a folder as it was or
holding what a cut creation leaves, and the same import run again finishes it (a folder that holds
this very import already is left as it is)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rotscope.errors import BadInput
from rotscope.execution.state.run_folder import create_store, has_store, only_leftovers, writing
from rotscope.imports.items import ImportedItem, import_meta, model_of, planned_row, result_values
from rotscope.rows import PlannedRow, ResultValues
from rotscope.run_meta import ImportedMeta, RunMeta
from rotscope.store import RunStore

CONFIG_NOTE = (
    "# This folder was made by rotscope import from {source}: its rows came from another harness\n"
    "# (no prompts, spans or verification), so there is no experiment to run or resume.\n"
)
"""The folder's config.yaml: a note, not an experiment."""


def file_digest(path: Path) -> str:
    """The SHA-256 of the imported file."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class PreparedImport:
    """One run folder's import, made and checked before anything is written: its rows, their
    results, its metadata and its config note."""

    run_dir: Path
    rows: list[PlannedRow]
    results: dict[str, ResultValues]
    meta: RunMeta
    config_text: str

    def done(self) -> bool:
        """Whether ``run_dir`` holds this very import already (the same file, options and rows,
        finished by an earlier call that was stopped before it said so)."""
        if not has_store(self.run_dir):
            return False
        try:
            with RunStore.read(self.run_dir) as store:
                stored = store.meta()
        except (BadInput, sqlite3.DatabaseError):
            return False
        wanted = json.loads(json.dumps(self.meta))
        return all(stored.get(key) == value for key, value in wanted.items())

    def check_out(self) -> bool:
        """``True`` when the folder holds this import already; ``False`` when it is new, empty or
        holds only what an import stopped midway left (its lock, a store under its temporary
        name, the config note), which the import replaces; else bad input: an import never writes
        into a folder that holds anything else."""
        if self.run_dir.exists() and not self.run_dir.is_dir():
            raise BadInput(f"out: {self.run_dir} is a file, not a folder")
        if has_store(self.run_dir):
            if self.done():
                return True
            raise BadInput(f"out: {self.run_dir} holds a run already; choose another --out")
        if not only_leftovers(self.run_dir):
            raise BadInput(f"out: {self.run_dir} is not empty; choose another --out")
        return False

    def write(self) -> int:
        """Write the folder whole under its one writer (nothing when it holds this import already);
        returns its rows."""
        if self.check_out():
            return len(self.rows)

        def fill(store: RunStore) -> None:
            store.add_planned(self.rows, {})
            store.record(self.results)
            store.set_meta(self.meta)

        with writing(self.run_dir):
            if not self.check_out():  # again under the lock: another writer may have come first
                create_store(self.run_dir, fill, self.config_text).close()
        return len(self.rows)


def check_base_lengths(items: Sequence[ImportedItem], base_lengths: Sequence[int] | None) -> None:
    """Every base length (``--base-lengths``) is a length of ``items``: else one line naming it."""
    missing = sorted(set(base_lengths or ()) - {item.length for item in items})
    if missing:
        raise BadInput(
            f"--base-lengths: no row at length {missing[0]:,} (a base length is a length of the file)"
        )


def _folder_digest(folder: Path) -> str:
    """One digest of a folder's files (an lm-eval output folder of sample files), by name and content."""
    digest = hashlib.sha256()
    for path in sorted(child for child in folder.iterdir() if child.is_file()):
        digest.update(path.name.encode("utf-8") + b"\0" + file_digest(path).encode("ascii") + b"\0")
    return digest.hexdigest()[:16]


def prepare_import(
    run_dir: Path,
    items: Sequence[ImportedItem],
    *,
    source: Path,
    kind: str,
    digest: str | None = None,
    tokenizer: str | None = None,
    extra: ImportedMeta | None = None,
    context_window: int | None = None,
    base_lengths: Sequence[int] | None = None,
) -> PreparedImport:
    """``items`` (from ``source``, of format ``kind``, its SHA-256 ``digest`` computed when not
    given) as the run folder ``run_dir`` will hold them, checked; ``extra`` adds keys to the
    folder's ``imported`` metadata; a base length the items never reach is refused."""
    check_base_lengths(items, base_lengths)
    digest = digest or (file_digest(source) if source.is_file() else _folder_digest(source))
    model = model_of(items)
    rows = [planned_row(item, order, run_dir.name, model) for order, item in enumerate(items)]
    meta = import_meta(items, run_id=run_dir.name, source=source.name, kind=kind, digest=digest,
                       tokenizer=tokenizer, context_window=context_window,
                       base_lengths=base_lengths)  # fmt: skip
    meta["imported"].update(extra or {})
    results = {row["item_id"]: result_values(item) for row, item in zip(rows, items, strict=True)}
    prepared = PreparedImport(run_dir, rows, results, meta, CONFIG_NOTE.format(source=source.name))
    prepared.check_out()
    return prepared


def write_import(
    run_dir: Path,
    items: Sequence[ImportedItem],
    *,
    source: Path,
    kind: str,
    tokenizer: str | None = None,
    extra: ImportedMeta | None = None,
    context_window: int | None = None,
    base_lengths: Sequence[int] | None = None,
) -> int:
    """Write ``items`` (from ``source``, of format ``kind``) as the run folder ``run_dir``; returns
    the rows written (``prepare_import``). Run again after a kill at any moment, the same import
    finishes the folder, or finds it whole and writes nothing."""
    return prepare_import(run_dir, items, source=source, kind=kind, tokenizer=tokenizer, extra=extra,
                          context_window=context_window, base_lengths=base_lengths).write()  # fmt: skip
