"""What ``workitems`` decides of a case before rendering: one layout per length for a case without
evidence, and the filler documents named in a competing-value rejection."""

from __future__ import annotations

from collections.abc import Iterator

from rotscope.filler import Document
from rotscope.plan.rejections import name_competing_files
from rotscope.types import Rejection


def _rejection(reason: str) -> Rejection:
    return Rejection("cases", ("renewal",), False, 512, 0.0, "beginning", None, reason)


def test_the_documents_holding_a_competing_value_are_named() -> None:
    reason = "case renewal at L: the filler contains '45 days', a competing value for case renewal; other"
    filler = [
        Document("a.txt", "renew after 45 days."),
        Document("b.txt", "nothing"),
        Document("c.txt", "paid in 45 days"),
    ]
    (named,) = name_competing_files([_rejection(reason)], filler)
    assert named.reason == (
        "case renewal at L: the filler contains '45 days' (in a.txt, c.txt), a competing value "
        "for case renewal; other"
    )


def test_other_rejections_leave_the_filler_unread() -> None:
    def unread() -> Iterator[Document]:
        raise AssertionError("the filler was read")
        yield  # a generator: reading it raises

    rejections = [_rejection("evidence p7 sits at depth 0.00, asked 0.50")]
    assert name_competing_files(rejections, unread()) == rejections
