"""Which paired layouts moved under the candidate's tokenizer, apart from which answers changed.

Both subjects of a pair are planned from the same cases and layouts (length, position), each
rendered and verified under its own tokenizer and template: with the same tokenizer and template
every span sits at the same tokens, with another the same evidence lands at other token offsets
and the prompt has another token count. The release record lists both kinds of change per paired
layout, so a reader can tell an answer that changed where the prompt's tokens did not move (the
model changed) from one whose layout moved too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rotscope.gate.pairing import RunData, pair_key, row_position
from rotscope.gate.record_checks import Changed, Layouts, Moved, Where
from rotscope.rows import Row
from rotscope.store import IMPORTED_KEY


def _spans(row: Row) -> list[tuple[str, int, int]]:
    return sorted(
        (str(span.get("evidence_id", "")), int(span["token_start"]), int(span["token_end"]))
        for span in json.loads(row["spans"] or "[]")
    )


def _where(row: Row) -> Where:
    return Where(
        task=row["task"],
        case_id=row["case_id"],
        length=row["length_target"],
        position=row_position(row),
        trial=row["trial"],
    )


def _digest(run: RunData, key: str) -> str | None:
    manifest: Mapping[str, Any] = run.meta.get("manifest") or {}  # any version's
    subject = manifest.get("subject") or {}
    digest: str | None = subject.get(key, (run.meta.get("backend") or {}).get(key))
    return digest


def layout_changes(baseline: RunData, candidate: RunData) -> Layouts:
    """Per paired layout: whether its spans or prompt length moved (``moved``), and, listed apart,
    whether its scored answer changed (``answers_changed``, each saying whether its layout moved).
    Where either run was imported (``spans_known`` false) it has no prompts or token spans: no
    layout is said to have moved, and only the changed answers are listed."""
    spans_known = not (baseline.meta.get(IMPORTED_KEY) or candidate.meta.get(IMPORTED_KEY))
    cand = {pair_key(row): row for row in candidate.rows}
    moved: list[Moved] = []
    changed: list[Changed] = []
    paired = 0
    for row in baseline.rows:
        other = cand.get(pair_key(row))
        if other is None:
            continue
        paired += 1
        spans_moved = spans_known and (
            _spans(row) != _spans(other) or row["prompt_tokens"] != other["prompt_tokens"]
        )
        if spans_moved:
            moved.append(
                Moved(
                    **_where(row).model_dump(),
                    baseline_prompt_tokens=row["prompt_tokens"],
                    candidate_prompt_tokens=other["prompt_tokens"],
                    baseline_spans=[[start, end] for _, start, end in _spans(row)],
                    candidate_spans=[[start, end] for _, start, end in _spans(other)],
                )
            )
        scored = row["status"] == "ok" and other["status"] == "ok"
        if scored and row["outcome"] != other["outcome"]:
            changed.append(
                Changed(
                    **_where(row).model_dump(),
                    baseline=row["outcome"],
                    candidate=other["outcome"],
                    layout_moved=spans_moved,
                )
            )
    tokenizers = {
        role: _digest(run, "tokenizer_digest")
        for role, run in (("baseline", baseline), ("candidate", candidate))
    }
    templates = {
        role: _digest(run, "template_digest")
        for role, run in (("baseline", baseline), ("candidate", candidate))
    }
    return Layouts(
        same_tokenizer=tokenizers["baseline"] == tokenizers["candidate"],
        same_template=templates["baseline"] == templates["candidate"],
        tokenizer_digests=tokenizers,
        template_digests=templates,
        spans_known=spans_known,
        paired_layouts=paired,
        spans_moved=len(moved),
        answers_changed=len(changed),
        moved=moved,
        changed=changed,
    )
