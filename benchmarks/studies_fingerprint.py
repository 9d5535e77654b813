"""The planning fingerprint of a run folder: one digest over what planning put in it, so a test that
plans the same experiment file without running it can say its prompts and spans are the ones the
recorded result was measured on (benchmarks/results/studies.md). Run by hand:

    python benchmarks/studies_fingerprint.py RUN_FOLDER [RUN_FOLDER ...]

It prints, per folder, the digest, the number of rows, the calls still unfinished and the
assembler digest of the code that planned it (the manifest's ``subject.assembler_digest``).

The digest covers every row (one per question; a prompt of nine questions is nine rows), sorted by
item id: the item id (which hashes the prompt's token ids, the decoding, the case and the layout),
the digest of the prompt's text, its length in tokens, and each evidence span in tokens (evidence
id, first token, end token). Nothing a call writes (reply, score, timing) is in it, so an unfinished
folder has the digest its finished run will have.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rotscope.errors import BadInput
from rotscope.store import RunStore


def row_material(row: Mapping[str, Any]) -> list[Any]:
    """What one row contributes: its ids, its prompt's digest and length, its spans in tokens."""
    spans = json.loads(row["spans"] or "[]")
    return [
        row["item_id"],
        row["prompt_digest"],
        row["prompt_tokens"],
        [[span["evidence_id"], span["token_start"], span["token_end"]] for span in spans],
    ]


def fingerprint(rows: Iterable[Mapping[str, Any]]) -> str:
    """The digest over ``rows`` (run-store rows, or ``planned_rows`` of a plan), in item-id order."""
    material = sorted((row_material(row) for row in rows), key=lambda part: str(part[0]))
    encoded = json.dumps(material, separators=(",", ":")).encode()
    return hashlib.sha256(encoded).hexdigest()[:16]


def folder_fingerprint(run_dir: Path) -> tuple[str, int, int, str | None]:
    """The folder's digest, its row count, its unfinished calls and its assembler digest."""
    with RunStore.read(run_dir) as store:
        rows = store.rows()
        unfinished = len(store.unfinished())
        subject = store.meta().get("manifest", {}).get("subject", {})
    return fingerprint(rows), len(rows), unfinished, subject.get("assembler_digest")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("folders", nargs="+", type=Path)
    args = parser.parse_args(argv)
    for folder in args.folders:
        try:
            digest, count, unfinished, assembler = folder_fingerprint(folder)
        except BadInput as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        print(f"{digest}  rows={count}  unfinished_calls={unfinished}  assembler={assembler}  {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
