"""``aggregation`` (RULER's common-words and frequent-words extraction): the answer is a property
of a whole region of the context, not of one needle. Lines of invented words are spread evenly
over a region of the haystack (``spread`` pieces); a few words appear ``count`` times, a few
runner-ups ``count - gap`` times, the rest once; the question asks for the ``top`` most frequent,
and the answer is that set, scored by set recall (RULER's ``string_match_all``).

Two kinds of case (the ``subtask`` slice): ``common_words``, a numbered list of invented words
(RULER's CWE), and ``frequent_words``, lines of coded text (RULER's FWE). ``gap`` (a slice too)
is the planted difference in count between the ``top``-th word and the runner-ups: the smaller,
the harder, so difficulty is a parameter rather than an accident of the draw.

**Depth** names the region that holds the words, not a point: the region covers
``placement.REGION_WIDTH`` of the haystack, and the grid's depth is the share of the haystack
outside the region that comes before it (0: the region opens the haystack, 1: it closes it). The
summary's cells of this family carry ``region``, the first and last depth the pieces actually
reached. Words and codes are invented: nothing can be answered from a model's knowledge.
"""

from __future__ import annotations

import random
import re
from collections import Counter

from rotscope.errors import BadInput
from rotscope.tasks import BuiltCases, FamilyHooks, register_task
from rotscope.types import Case, Evidence, Oracle

TASK = "aggregation"
SUBTASKS = ("common_words", "frequent_words")
GAPS = (1, 2, 3, 4)
TOP = 3
COUNT = 6
RUNNER_UPS = 2
RARE = 6
PER_LINE = 6
MAX_CASES = 1000
_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"
_CODE_LETTERS = "bcdfghjklmnpqrstvwxz"
_ENTRY = re.compile(r"(\d+)\. ([a-z]+)")
_LIST_LINE = re.compile(r"^(?:\d+\. [a-z]+ ?)+$")
_CODED_LINE = re.compile(r"^Coded line (\d+): ((?:[a-z]+ ?)+)\.$")


def _word(rng: random.Random, subtask: str) -> str:
    if subtask == "common_words":  # a pronounceable invented word of three syllables
        return "".join(rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(3))
    return "".join(rng.choice(_CODE_LETTERS) for _ in range(4))  # a code of four consonants


def _vocabulary(rng: random.Random, subtask: str, size: int) -> list[str]:
    """``size`` distinct words, none inside another (substring matching, as RULER's metric does,
    then agrees with whole-word matching)."""
    found: list[str] = []
    while len(found) < size:
        word = _word(rng, subtask)
        if all(word not in other and other not in word for other in found):
            found.append(word)
    return found


def counts_in(lines: list[str]) -> Counter[str]:
    """How often each word occurs in the family's lines (the numbered list's entries or the coded
    lines' words), recounted from their text: the answer the build checks against the draw."""
    counted: Counter[str] = Counter()
    for line in lines:
        if _LIST_LINE.fullmatch(line):
            counted.update(word for _, word in _ENTRY.findall(line))
        elif match := _CODED_LINE.fullmatch(line):
            counted.update(match.group(2).split())
        else:
            raise ValueError(f"{TASK}: not a line of words: {line!r}")
    return counted


def _lines(words: list[str], subtask: str) -> list[str]:
    chunks = [words[start : start + PER_LINE] for start in range(0, len(words), PER_LINE)]
    if subtask == "common_words":
        numbered = iter(range(1, len(words) + 1))
        return [" ".join(f"{next(numbered)}. {word}" for word in chunk) for chunk in chunks]
    return [f"Coded line {n}: {' '.join(chunk)}." for n, chunk in enumerate(chunks, start=1)]


def _question(subtask: str, top: int) -> str:
    if subtask == "common_words":
        return (
            f"The context holds a numbered list of words, split over several lines. "
            f"Which {top} words appear most often in that list?"
        )
    return (
        f"The context holds lines of coded text (lines that begin with 'Coded line'). "
        f"Which {top} coded words appear most often in those lines?"
    )


def build_aggregation_case(
    case_id: str,
    subtask: str,
    gap: int,
    rng: random.Random,
    *,
    top: int = TOP,
    count: int = COUNT,
    runner_ups: int = RUNNER_UPS,
    rare: int = RARE,
) -> Case:
    """One case: ``top`` words ``count`` times each, ``runner_ups`` words ``count - gap`` times,
    ``rare`` words once, shuffled into lines of ``PER_LINE`` words. The answer lists the top words
    (all tied at ``count``); the runner-ups and the rare words are traps."""
    if subtask not in SUBTASKS:
        raise ValueError(f"{TASK} case {case_id}: subtask must be one of {', '.join(SUBTASKS)}")
    if top < 1 or runner_ups < 1 or rare < 0 or not 1 <= gap <= count - 2:
        raise ValueError(
            f"{TASK} case {case_id}: needs top and runner_ups of at least 1 and a gap of 1 to "
            f"count - 2 (the runner-ups must still outnumber the words that appear once), got gap {gap}"
        )
    vocabulary = _vocabulary(rng, subtask, top + runner_ups + rare)
    winners, seconds = vocabulary[:top], vocabulary[top : top + runner_ups]
    singles = vocabulary[top + runner_ups :]
    words = [*(w for w in winners for _ in range(count)), *(w for w in seconds for _ in range(count - gap))]
    words += singles
    rng.shuffle(words)
    lines = _lines(words, subtask)
    counted = counts_in(lines)
    ranked = sorted(counted.values(), reverse=True)
    if (
        {w for w, n in counted.items() if n == ranked[0]} != set(winners)
        or ranked[top - 1] - ranked[top] != gap
        or len(set(lines)) != len(lines)
        or any(a != b and a in b for a in lines for b in lines)
    ):
        raise ValueError(f"{TASK} case {case_id}: its lines do not recount to its top words and gap")
    question = _question(subtask, top)
    if any(word in question for word in vocabulary):
        raise ValueError(f"{TASK} case {case_id}: the question names a word of the list")
    return Case(
        case_id=case_id,
        task=TASK,
        evidence=tuple(Evidence(f"line-{n}", text, "spread") for n, text in enumerate(lines, start=1)),
        question=question,
        oracle=Oracle(
            answer=", ".join(winners),
            kind="set",
            items=tuple(winners),
            traps=(*(("runner_up", w) for w in seconds), *(("rare_word", w) for w in singles)),
        ),
        guarded=tuple(vocabulary),
        slices=(("subtask", subtask), ("gap", str(gap)), ("top", str(top))),
    )


def build_aggregation_cases(count: int, gaps: tuple[int, ...] = GAPS, seed: str = TASK) -> list[Case]:
    """``count`` cases, seeded: the subtasks alternate and the gaps rotate every two cases, so any
    multiple of ``2 * len(gaps)`` cases (16 by default) holds every (subtask, gap) pair equally."""
    if count > MAX_CASES:
        raise BadInput(f"cases_per_task: {TASK} makes at most {MAX_CASES} cases, got {count}")
    rng = random.Random(seed)
    return [
        build_aggregation_case(
            f"agg-{index:03d}-{SUBTASKS[index % 2][0]}w-g{gaps[index // 2 % len(gaps)]}",
            SUBTASKS[index % 2],
            gaps[index // 2 % len(gaps)],
            rng,
        )
        for index in range(count)
    ]


register_task(TASK, hooks=FamilyHooks(region=True), most_cases=lambda: MAX_CASES)(
    lambda config: BuiltCases(TASK, lambda: build_aggregation_cases(config.cases_per_task))
)
