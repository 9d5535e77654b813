"""The comparison's pure pieces: the leaderboard's order, a pair's sentence, lengths in words."""

from __future__ import annotations

from rotscope.compare.analysis import pair_sentence, rank_key, short_length
from rotscope.compare.pairwise import LengthDifference
from rotscope.compare.record import EffectiveEntry, LeaderboardEntry
from rotscope.records.effective import EffectiveState


def _entry(label: str, value: int | None, state: EffectiveState, base: float | None) -> LeaderboardEntry:
    effective = EffectiveEntry(
        definition=None, value=value, state=state, bracket_low=None, bracket_high=None, bracket_state=None
    )
    return LeaderboardEntry(
        rank=1, task="niah", run=label, label=label, model=None, imported=False, window=None,
        effective_length=effective, base_score=base, worst_position=None, lengths=[], prompt_tokens=0,
        completion_tokens=0, cost_usd=0.0, priced=True,
    )  # fmt: skip


def test_the_leaderboard_orders_by_effective_length_then_base_score() -> None:
    entries = [
        _entry("no-signal", None, "no-signal", 0.1),
        _entry("short", 200, "value", 1.0),
        _entry("long-low", 800, "at-least-longest", 0.5),
        _entry("below", None, "below-shortest", 0.9),
        _entry("long-high", 800, "at-least-longest", 1.0),
    ]
    order = [entry.label for entry in sorted(entries, key=rank_key)]
    assert order == ["long-high", "long-low", "short", "below", "no-signal"]


def _length(length: int, verdict: str) -> LengthDifference:
    return LengthDifference(length, None, None, None, None, None, 0, None, None, verdict)  # type: ignore[arg-type]


def test_a_pair_reads_as_one_sentence() -> None:
    lengths = [_length(4096, "no difference shown"), _length(16384, "better"), _length(32768, "better")]
    assert pair_sentence("A", "B", lengths) == (
        "B better than A at 16,384 and 32,768; no difference shown at 4,096"
    )
    assert pair_sentence("A", "B", [_length(1600, "worse"), _length(200, "too few pairs")]) == (
        "A better than B at 1,600; too few pairs at 200"
    )
    # no verdict: the pair still names its models (issue 51: three models' lines told apart)
    assert pair_sentence(
        "A", "B", [_length(500, "no difference shown"), _length(2000, "no difference shown")]
    ) == ("B vs A: no difference shown at 500 and 2,000")
    assert short_length(1000) == "1,000" and short_length(131072) == "131,072"
