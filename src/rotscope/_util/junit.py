"""One JUnit test case as every JUnit view writes it (``gate --junit``, ``compare --junit``): a
failure, a skipped case, or a passed one whose message goes to its ``system-out``."""

from __future__ import annotations

from typing import Literal
from xml.etree import ElementTree

Outcome = Literal["failure", "skipped", "passed"]


def add_case(
    suite: ElementTree.Element, classname: str, name: str, outcome: Outcome, message: str, failure_type: str
) -> None:
    case = ElementTree.SubElement(suite, "testcase", classname=classname, name=name)
    if outcome == "failure":
        ElementTree.SubElement(case, "failure", message=message, type=failure_type)
    elif outcome == "skipped":
        ElementTree.SubElement(case, "skipped", message=message)
    else:
        ElementTree.SubElement(case, "system-out").text = message
