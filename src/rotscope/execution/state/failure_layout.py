"""Where a failure's prompt was laid out, as a case-file line carries it (``rotscope cases RUN
--failing``): each evidence piece's depth at a failing layout, read from the row's spans, and the
haystack the case was rendered in, read from the run's config and metadata. With both, the saved
line re-renders the failing prompt (docs/experiments.md, "Your own cases").

A piece's depth is the one its span records (filler tokens before it over all filler), so the
re-run asks for the very line end it sat at. The haystack is named as the plan reads it
(``plan.workitems``): the filler source in the order of the run's seed, the row's haystack variant
of as many as the run read, at least the run's longest length, avoiding every guarded string of
the run's cases."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from rotscope.config.experiment import ExperimentConfig
from rotscope.filler import describe_filler
from rotscope.filler.variants import variants_for
from rotscope.plan.workitems import numbered_cases
from rotscope.prompt.session_render import SESSION_FILLER
from rotscope.rows import Row


@dataclass(frozen=True)
class RunFiller:
    """What a run read its haystacks with (``types.Haystack`` less the variant) and each variant's
    digest, in variant order."""

    seed: int
    variants: int
    tokens: int
    avoid: tuple[str, ...]
    filler: str
    digests: tuple[str, ...]

    def haystack(self, variant: int) -> dict[str, Any]:
        """The case-file ``haystack`` of the run's ``variant``."""
        found: dict[str, Any] = {
            "seed": self.seed,
            "variant": variant,
            "variants": self.variants,
            "tokens": self.tokens,
            "avoid": list(self.avoid),
        }
        if variant < len(self.digests):
            found["digest"] = self.digests[variant]
        found["filler"] = self.filler
        return found


def run_filler(config: ExperimentConfig, corpus: dict[str, Any] | None) -> RunFiller:
    """The run's haystack settings from its config (``corpus``: the run's metadata of its corpus,
    for the variants' digests)."""
    numbered = numbered_cases(config)
    cases = [case for case, _ in numbered]
    filler = config.filler.static if config.filler.kind == SESSION_FILLER else config.filler
    longest = max([*config.lengths, *(length for case in cases for length, _ in case.pins)])
    known = corpus or {}
    digests = [str(haystack["digest"]) for haystack in known.get("haystacks", [])]
    if not digests and known.get("digest"):
        digests = [str(known["digest"])]
    return RunFiller(
        seed=config.seed,
        variants=variants_for(config.filler.variants, 1 + max((index for _, index in numbered), default=0)),
        tokens=longest,
        avoid=tuple(sorted({guard for case in cases for guard in case.guarded})),
        filler=describe_filler(filler) if filler is not None else config.filler.kind,
        digests=tuple(digests),
    )


def in_run_haystack(row: Row) -> bool:
    """The row's prompt was rendered in one of the run's haystack variants (not in a session or a
    family's own filler stream, nor in a run too old to record its variant)."""
    return row["filler"] is None and row["haystack_variant"] is not None


def piece_depths(row: Row, line_ids: dict[str, str]) -> dict[str, float]:
    """Each piece's depth in the row's prompt by its id in the line (``line_ids``: evidence id ->
    the line's id), from the row's spans."""
    spans = _spans(row)
    return {line_ids.get(span["evidence_id"], span["evidence_id"]): float(span["depth"]) for span in spans}


def listed_order_kept(row: Row, line: dict[str, Any], line_ids: dict[str, str]) -> bool:
    """Whether the line, read back (documents then distractors, pieces at one line end in that
    order), places the pieces in the order the row's prompt held them."""
    listed = [piece["id"] for piece in [*line.get("documents", []), *line.get("distractors", [])]]
    spans = sorted(_spans(row), key=lambda span: span["token_start"])
    held = [line_ids.get(span["evidence_id"], span["evidence_id"]) for span in spans]
    depths = piece_depths(row, line_ids)
    rendered = sorted(listed, key=lambda piece: (depths.get(piece, 0.0), listed.index(piece)))
    return rendered == held


def _spans(row: Row) -> list[dict[str, Any]]:
    spans: list[dict[str, Any]] = json.loads(row["spans"])
    return spans
