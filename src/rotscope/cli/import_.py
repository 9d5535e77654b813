"""rotscope import."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rotscope._util.safe_text import terminal_safe
from rotscope.cli.common import _guarded, app, console
from rotscope.errors import BadInput

if TYPE_CHECKING:
    from rotscope.imports.items import ImportedItem
    from rotscope.modes.session_record import SessionRecord
    from rotscope.run_meta import ImportedMeta

INSPECT_SUFFIXES = (".eval", ".json")
"""Inspect AI's log formats."""


def _lengths(option: str, value: str | None) -> list[int] | None:
    """``--bin-lengths`` or ``--base-lengths``: ascending whole numbers >= 1, comma-separated."""
    if value is None:
        return None
    try:
        edges = [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        raise BadInput(f"{option}: {value!r} is not whole numbers separated by commas") from None
    if not edges or any(edge < 1 for edge in edges) or edges != sorted(set(edges)):
        raise BadInput(f"{option}: {value!r} must be ascending whole numbers >= 1")
    return edges


@app.command("import")
def import_results(
    file: Annotated[
        Path,
        typer.Argument(
            help="Per-item results: a .csv or .jsonl table, an Inspect AI .eval log, or "
            "lm-evaluation-harness's --log_samples output (a samples_<task>_<time>.jsonl file or the "
            "folder holding them)."
        ),
    ],
    out: Annotated[Path, typer.Option("--out", help="The run folder to make (new or empty).")],
    bin_lengths: Annotated[
        str | None,
        typer.Option(
            "--bin-lengths",
            help="Bin lengths that vary per item to these edges (E1,E2,...): each item goes to the smallest "
            "edge at or above its length, which stays its prompt_tokens.",
        ),
    ] = None,
    base_lengths: Annotated[
        str | None,
        typer.Option(
            "--base-lengths",
            help="The lengths whose mean score is the base of the relative effective length (L1,L2,...; "
            "default 250,500,1000 where tested, else the shortest).",
        ),
    ] = None,
    map_fields: Annotated[
        str | None,
        typer.Option(
            "--map",
            help="An Inspect log of another task: where its samples keep rotscope's fields "
            "(length=metadata.KEY[,depth=metadata.KEY,position=...,case_id=id,instance_id=...,task=...]).",
        ),
    ] = None,
    model_column: Annotated[
        str | None,
        typer.Option(
            "--model-column",
            help="The column naming each row's model: one run folder per model inside --out "
            "(as --models writes).",
        ),
    ] = None,
) -> None:
    """Bring per-item results of another harness into a run folder that every view reads.

    The folder has no prompts, spans or verification, and every view says so. A bad file is one
    line naming its line and column (exit 2); the columns are in docs/commands.md."""

    def body() -> int:
        from rotscope.imports.folder import write_import

        if not file.exists() and not file.is_symlink():
            raise BadInput(f"{file}: no such file")
        edges = _lengths("--bin-lengths", bin_lengths)
        bases = _lengths("--base-lengths", base_lengths)
        from rotscope.imports.lm_eval import is_samples

        if is_samples(file):
            if map_fields is not None:
                raise BadInput("--map reads Inspect logs; lm-eval's samples are read as documented")
            return _write_lm_eval(out, file, edges, bases, model_column)
        if file.is_dir():
            raise BadInput(f"{file}: a folder without lm-eval samples_*.jsonl files (import reads a file)")
        if file.suffix.lower() in INSPECT_SUFFIXES:
            if edges or model_column:
                raise BadInput(
                    "--bin-lengths and --model-column read .csv and .jsonl tables, not Inspect logs"
                )
            from rotscope.integrations.inspect import require_inspect

            require_inspect("rotscope import of an Inspect log")
            from rotscope.integrations.inspect.log_import import parse_map

            mapping = parse_map(map_fields) if map_fields is not None else None
            from rotscope.imports.source import open_regular

            open_regular(file, str(file)).close()  # a folder, FIFO or device is refused unread
            from rotscope.integrations.inspect.log_import import log_items

            items, tokenizer = log_items(file, str(file), mapping)
            return write_import(out, items, source=file, kind="inspect", tokenizer=tokenizer)
        if map_fields is not None:
            raise BadInput("--map reads Inspect logs (.eval, .json); a table names its columns itself")
        from rotscope.imports.table import FORMATS, read_table

        table = read_table(file, str(file), bin_edges=edges, model_column=model_column)
        extra: ImportedMeta = {"ignored_columns": table.ignored_columns}
        if table.unit != "tokens":
            extra["unit"] = table.unit
        if edges:
            extra["binned_lengths"] = edges
        windows = table.context_windows or {}
        models = table.by_model()
        if model_column is None or len(models) < 2:
            if model_column is not None:
                extra["model_column"] = model_column
            return write_import(
                out,
                table.items,
                source=file,
                kind=FORMATS[file.suffix.lower()],
                tokenizer=table.tokenizer,
                extra=extra,
                context_window=next(iter(windows.values()), None),
                base_lengths=bases,
            )
        return _write_models(out, file, table.tokenizer, FORMATS[file.suffix.lower()], models, windows,
                             {**extra, "model_column": model_column}, bases)  # fmt: skip

    rows = _guarded(body)
    console.print(
        f"{rows} rows imported from {terminal_safe(file.name)} -> {terminal_safe(str(out))} "
        "(no prompts, spans or verification)",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


def _write_lm_eval(
    out: Path, file: Path, edges: list[int] | None, bases: list[int] | None, model_column: str | None
) -> int:
    """lm-evaluation-harness's ``--log_samples`` files (``rotscope.imports.lm_eval``)."""
    from rotscope.imports.folder import write_import
    from rotscope.imports.lm_eval import read_samples

    if model_column is not None:
        raise BadInput(
            "--model-column reads .csv and .jsonl tables; lm-eval's samples name their model in "
            "results_*.json"
        )
    table = read_samples(file, str(file), bin_edges=edges)
    extra: ImportedMeta = {"ignored_columns": []}
    if table.unit != "tokens":
        extra["unit"] = table.unit
    if edges:
        extra["binned_lengths"] = edges
    return write_import(out, table.items, source=file, kind="lm-eval", extra=extra, base_lengths=bases)


def _write_models(
    out: Path,
    file: Path,
    tokenizer: str | None,
    kind: str,
    models: dict[str, list[ImportedItem]],
    windows: dict[str, int],
    extra: ImportedMeta,
    base_lengths: list[int] | None,
) -> int:
    """One run folder per model inside ``out``, and ``out/session.json`` naming them (subjects
    [folder, model] in the file's order) as a ``--models`` session does: every view that reads a
    session (compare, show, gate) reads it. Every model's folder is made and checked before any is
    written; ``out`` may hold only what this same import stopped midway left, which it finishes."""
    from rotscope.execution.state.run_folder import SESSION_FILE as RECORD_FILE
    from rotscope.imports.folder import file_digest, prepare_import
    from rotscope.modes.models_session import folder_names
    from rotscope.modes.session_record import SessionRecord, write_record

    names = list(models)
    folders = folder_names(names)
    record = SessionRecord(kind="models", subjects=[[f, m] for f, m in zip(folders, names, strict=True)])
    if out.exists() and not out.is_dir():
        raise BadInput(f"out: {out} is a file, not a folder")
    ours = {*folders, RECORD_FILE, f".{RECORD_FILE}.partial"}
    if out.exists() and any(path.name not in ours for path in out.iterdir()):
        raise BadInput(f"out: {out} is not a new or empty folder")
    _check_record(out / RECORD_FILE, record)
    digest = file_digest(file)
    prepared = [
        prepare_import(
            out / folder,
            models[model],
            source=file,
            kind=kind,
            digest=digest,
            tokenizer=tokenizer,
            extra=extra,
            context_window=windows.get(model),
            base_lengths=base_lengths,
        )
        for folder, model in zip(folders, names, strict=True)
    ]
    written = sum(one.write() for one in prepared)
    write_record(out, record)
    return written


def _check_record(path: Path, record: SessionRecord) -> None:
    """A ``session.json`` already there is this import's own (written last by a call stopped just
    after): anything else is bad input."""
    import json

    if not path.exists():
        return
    wanted = {key: value for key, value in record.model_dump(mode="json").items() if value is not None}
    try:
        held = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        held = None
    if held != wanted:
        raise BadInput(f"out: {path.parent} holds another session; choose another --out")
