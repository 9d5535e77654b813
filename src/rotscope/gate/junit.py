"""``rotscope gate --junit FILE``: the release verdict as JUnit XML for CI (docs/gates.md). One test
suite, ``rotscope gate``: a test case for the verdict itself (a failure on FAIL, skipped on
INCONCLUSIVE, with the tests or reasons that decided it), one for forbidden claims where the
candidate's rows were claim-checked (a failure when a reply states one: its claim ids and counts)
and one per slice (task x length x
position): a slice shown to fail is a failure, an untested or inconclusive slice is skipped, the
others pass. Only names, numbers and the record's own words are written: a gate record holds no
prompt or reply text."""

from __future__ import annotations

from xml.etree import ElementTree

from rotscope._util.junit import Outcome, add_case
from rotscope.gate.record import GateRecord, SliceRecord


def _slice_name(entry: SliceRecord) -> str:
    fields = "".join(f", {key}={value}" for key, value in entry.fields.items())
    return f"{entry.task} at {entry.length:,} tokens, {entry.position}{fields}"


def _slice_message(entry: SliceRecord) -> str:
    if entry.difference is None or entry.lower is None or entry.upper is None:
        return f"{entry.verdict}: {entry.reason}"
    return (
        f"{entry.verdict}: candidate - baseline {entry.difference:+.3f} "
        f"[{entry.lower:+.3f}, {entry.upper:+.3f}] on {entry.pairs} pairs; {entry.reason}"
    )


def _outcome(verdict: str) -> Outcome:
    return "failure" if verdict == "FAIL" else "skipped" if verdict == "INCONCLUSIVE" else "passed"


def gate_junit(record: GateRecord) -> str:
    """The JUnit XML document (``testsuites``) of ``record``."""
    failed = [entry for entry in record.slices if entry.verdict == "FAIL"]
    skipped = [entry for entry in record.slices if entry.verdict == "INCONCLUSIVE"]
    forbidden = record.forbidden
    root = ElementTree.Element("testsuites", name="rotscope gate")
    suite = ElementTree.SubElement(
        root,
        "testsuite",
        name="rotscope gate",
        tests=str(len(record.slices) + 1 + (forbidden is not None)),
        failures=str(len(failed) + (record.verdict == "FAIL") + bool(forbidden and forbidden.replies)),
        errors="0",
        skipped=str(len(skipped) + (record.verdict == "INCONCLUSIVE")),
    )
    why = "; ".join([*record.decided_by, *record.reasons]) or record.verdict
    add_case(suite, "rotscope.gate", "release verdict", _outcome(record.verdict),
             f"{record.verdict} on {record.score}: {why}", "FAIL")  # fmt: skip
    if record.forbidden is not None:
        stated = record.forbidden.replies
        add_case(suite, "rotscope.gate", "forbidden claims", "failure" if stated else "passed",
                 record.forbidden.line, "FAIL")  # fmt: skip
    for entry in record.slices:
        add_case(suite, f"rotscope.gate.{entry.task}", _slice_name(entry), _outcome(entry.verdict),
                 _slice_message(entry), "FAIL")  # fmt: skip
    ElementTree.indent(root)
    return ElementTree.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
