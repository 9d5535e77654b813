"""``rotscope compare --junit FILE``: the comparison as JUnit XML for CI (design: the contract of
``compare --junit``). One test suite per task, one test case per pair of runs x length: a verdict
of ``worse`` (the second run worse than the first) is a failure, ``too few pairs`` a skipped case
(nothing was tested), ``better`` and ``no difference shown`` pass. Only names, numbers and the
verdict's own words are written: no prompt or reply text is in a comparison record."""

from __future__ import annotations

from xml.etree import ElementTree

from rotscope._util.junit import Outcome, add_case
from rotscope.compare.record import Comparison, Pair, PairLength
from rotscope.compare.table import family_label, shown


def _case_name(pair: Pair, length: PairLength) -> str:
    return f"{pair.second} vs {pair.first} at {length.length:,} tokens"


def _message(pair: Pair, length: PairLength, family: str) -> str:
    if length.difference is None or length.ci_low is None or length.ci_high is None:
        return f"{pair.second} against {pair.first}: {length.verdict}"
    held = f", p (Holm) {length.p_holm:.3g} ({family})" if length.p_holm is not None else ""
    return (
        f"{pair.second} against {pair.first}: {length.verdict}, difference {length.difference:+.3f} "
        f"[{length.ci_low:+.3f}, {length.ci_high:+.3f}] on {length.pairs} pairs{held}"
    )


OUTCOMES: dict[str, Outcome] = {"worse": "failure", "too few pairs": "skipped"}
"""A length's verdict as its test case's outcome; ``better`` and ``no difference shown`` pass."""


def comparison_junit(comparison: Comparison) -> str:
    """The JUnit XML document (``testsuites``) of ``comparison``, its texts as every view shows them
    (``table.shown``: no control character, which XML 1.0 cannot hold)."""
    comparison = shown(comparison)
    root = ElementTree.Element("testsuites", name="rotscope compare")
    for task in comparison.tasks:
        pairs = [pair for pair in comparison.pairs if pair.task == task]
        cases = [(pair, length) for pair in pairs for length in pair.lengths]
        failures = sum(1 for _, length in cases if length.verdict == "worse")
        skipped = sum(1 for _, length in cases if length.verdict == "too few pairs")
        suite = ElementTree.SubElement(
            root,
            "testsuite",
            name=f"compare {task}",
            tests=str(len(cases)),
            failures=str(failures),
            errors="0",
            skipped=str(skipped),
        )
        for pair, length in cases:
            outcome: Outcome = (
                "failure"
                if length.verdict == "worse"
                else "skipped"
                if length.verdict == "too few pairs"
                else "passed"
            )
            message = _message(pair, length, family_label(comparison, task))
            add_case(suite, f"rotscope.compare.{task}", _case_name(pair, length), outcome, message, "worse")
    ElementTree.indent(root)
    return ElementTree.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
