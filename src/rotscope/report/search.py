"""The lines ``rotscope show`` prints for a search folder (``DIR/search.json``)."""

from __future__ import annotations

from typing import Any


def _bound(decision: dict[str, Any], side: str, relative: bool, value: float) -> str:
    """``lower bound 0.86 ≥ 0.85`` (absolute) or ``score 0.91, lower bound of score - 0.85 × base
    +0.02 ≥ 0`` (relative, paired by instance)."""
    bound = decision[side]
    sign = "≥" if side == "lower" else "<"
    if not relative:
        return f"{side} bound {bound:.2f} {sign} {value:g}"
    return (
        f"score {decision['score']:.2f} vs base {decision['base']:.2f}, {side} bound of "
        f"score − {value:g} × base {bound:+.3f} {sign} 0"
    )


def search_lines(record: dict[str, Any]) -> list[str]:
    relative, value = record["definition"]["relative"], record["definition"]["value"]
    confidence = f"{record['confidence']:.0%}"
    low, high = record["bracket"]["passes"], record["bracket"]["fails"]
    passes = record["pass_decision"]
    fails = record["fail_decision"]
    parts = []
    if passes is not None:
        parts.append(f"passes at {low:,} ({_bound(passes, 'lower', relative, value)})")
    else:
        parts.append(f"no length from {record['range'][0]:,} passes")
    if fails is not None:
        parts.append(f"fails at {high:,} ({_bound(fails, 'upper', relative, value)})")
    else:
        parts.append(f"none up to {record['range'][1]:,} fails")
    head = {
        "decided": f"effective length {low:,} tokens"
        if low is not None
        else "effective length below the range",
        "undecided": "UNDECIDED (a length stayed undecided at the instance cap)",
        "inconclusive": "INCONCLUSIVE (budget spent)",
    }[record["verdict"]]
    lines = [f"{head}: {', '.join(parts)}, {confidence}"]
    if record["verdict"] == "decided" and low is not None and high is None:
        lines[0] = (
            f"effective length at least {low:,} tokens (the range's end): {', '.join(parts)}, {confidence}"
        )
    if record["reason"]:
        lines.append(f"  {record['reason']}")
    grid = record["fixed_grid"]
    lines.append(
        f"calls {record['calls']:,}, prompt tokens {record['prompt_tokens']:,}; a fixed grid of the same "
        f"resolution ({grid['lengths']} lengths × {grid['instances_per_length']} instances) would take "
        f"{grid['calls']:,} calls"
    )
    tested = " → ".join(f"{d['length']:,}:{d['state']}" for d in last_per_step(record["decisions"]))
    lines.append(f"tested in order: {tested}")
    for shorter, longer in record["non_monotone"]:
        lines.append(
            f"non-monotone: {longer:,} scores above the failed {shorter:,} beyond noise; "
            "the lengths between were tested"
        )
    lines.append(f"method: {record['method']}")
    return lines


def last_per_step(decisions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each tested length once, in order of testing, with its final state."""
    final: dict[int, dict[str, Any]] = {}
    for decision in decisions:
        final.pop(decision["length"], None)
        final[decision["length"]] = decision
    order = list(dict.fromkeys(d["length"] for d in decisions))
    return [final[length] for length in order]
