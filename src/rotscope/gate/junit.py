"""``rotscope gate --junit FILE``: the release verdict as JUnit XML for CI (docs/gates.md). One test
suite, ``rotscope gate``: a test case for the verdict itself (a failure on FAIL, skipped on
INCONCLUSIVE, with the tests or reasons that decided it) and one per slice (task x length x
position): a slice shown to fail is a failure, an untested or inconclusive slice is skipped, the
others pass. Only names, numbers and the record's own words are written: a gate record holds no
prompt or reply text."""

from __future__ import annotations

from xml.etree import ElementTree

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


def gate_junit(record: GateRecord) -> str:
    """The JUnit XML document (``testsuites``) of ``record``."""
    failed = [entry for entry in record.slices if entry.verdict == "FAIL"]
    skipped = [entry for entry in record.slices if entry.verdict == "INCONCLUSIVE"]
    root = ElementTree.Element("testsuites", name="rotscope gate")
    suite = ElementTree.SubElement(
        root,
        "testsuite",
        name="rotscope gate",
        tests=str(len(record.slices) + 1),
        failures=str(len(failed) + (record.verdict == "FAIL")),
        errors="0",
        skipped=str(len(skipped) + (record.verdict == "INCONCLUSIVE")),
    )
    verdict = ElementTree.SubElement(suite, "testcase", classname="rotscope.gate", name="release verdict")
    why = "; ".join([*record.decided_by, *record.reasons]) or record.verdict
    message = f"{record.verdict} on {record.score}: {why}"
    if record.verdict == "FAIL":
        ElementTree.SubElement(verdict, "failure", message=message, type="FAIL")
    elif record.verdict == "INCONCLUSIVE":
        ElementTree.SubElement(verdict, "skipped", message=message)
    else:
        ElementTree.SubElement(verdict, "system-out").text = message
    for entry in record.slices:
        case = ElementTree.SubElement(
            suite, "testcase", classname=f"rotscope.gate.{entry.task}", name=_slice_name(entry)
        )
        if entry.verdict == "FAIL":
            ElementTree.SubElement(case, "failure", message=_slice_message(entry), type="FAIL")
        elif entry.verdict == "INCONCLUSIVE":
            ElementTree.SubElement(case, "skipped", message=_slice_message(entry))
        else:
            ElementTree.SubElement(case, "system-out").text = _slice_message(entry)
    ElementTree.indent(root)
    return ElementTree.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
