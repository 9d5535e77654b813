"""RULER's own set metric, rewritten here so rotscope's scorer can be checked against it."""

from __future__ import annotations


def ruler_string_match_all(preds: list[str], refs: list[list[str]]) -> float:
    """``string_match_all`` of RULER's ``eval/synthetic/constants.py``: per sample the fraction of
    references found (lower-cased substring) in the prediction, averaged, as a percent."""
    return round(
        sum(
            sum(1.0 if r.lower() in pred.lower() else 0.0 for r in ref) / len(ref)
            for pred, ref in zip(preds, refs, strict=True)
        )
        / len(preds)
        * 100,
        2,
    )
