"""Claim scoring of case-file cases: required claims all present, forbidden claims none (high
risk), citations checked when asked, explicit abstention when the evidence is absent."""

from __future__ import annotations

import pytest

from rotscope.scoring.deterministic import score
from rotscope.types import ClaimReport, Claims, Completion, Oracle

CLAIMS = Claims(
    required=(("window-23", ("23 days", "twenty-three days")), ("desk", ("returns desk",))),
    forbidden=(("window-30", ("30 days",)),),
    evidence_ids=("policy-7", "policy-8"),
    distractors=(("faq-2", "Store credit expires after 90 days at the Harlow outlet."),),
)
CITED = Claims(
    required=CLAIMS.required,
    forbidden=CLAIMS.forbidden,
    cite=(("window-23", ("policy-7",)), ("desk", ("policy-8",))),
    evidence_ids=CLAIMS.evidence_ids,
    distractors=CLAIMS.distractors,
)
ORACLE = Oracle(answer="23 days; returns desk", claims=CLAIMS)


def _score(reply: str, oracle: Oracle = ORACLE) -> tuple[str, str | None, ClaimReport | None]:
    result = score(oracle, Completion(reply))
    return result.outcome, result.category, result.claims


def test_all_required_claims_present_is_correct() -> None:
    outcome, category, report = _score("Within twenty-three days, at the returns desk.")
    assert (outcome, category) == ("correct", None)
    assert report == ClaimReport()


def test_one_required_claim_missing_is_named() -> None:
    outcome, category, report = _score("23 days.")
    assert (outcome, category) == ("incorrect", "missing_claim")
    assert report is not None and report.missing == ("desk",)


def test_forbidden_claim_outweighs_required_ones() -> None:
    outcome, category, report = _score("23 days at the returns desk (it used to be 30 days).")
    assert (outcome, category) == ("incorrect", "forbidden_claim")
    assert report is not None and report.forbidden == ("window-30",) and report.missing == ()


def test_no_required_claim_abstained_distractor_or_wrong() -> None:
    assert _score("The context does not say.")[:2] == ("abstained", "abstained")
    assert _score("")[:2] == ("abstained", "abstained")
    assert _score("Store credit expires after 90 days")[:2] == ("incorrect", "distractor")
    assert _score("Forty days.")[:2] == ("incorrect", "wrong_answer")


def test_citations_must_name_a_supporting_document_for_each_claim() -> None:
    oracle = Oracle(answer="23 days", claims=CITED)
    assert _score("23 days [policy-7], at the returns desk [policy-8].", oracle)[:2] == ("correct", None)
    outcome, category, report = _score("23 days [policy-7], at the returns desk.", oracle)
    assert (outcome, category) == ("incorrect", "missing_citation")
    assert report is not None and report.missing_citations == ("desk",) and report.cited == ("policy-7",)
    outcome, category, report = _score("23 days at the returns desk [policy-7] [policy-8] [faq-2].", oracle)
    assert (outcome, category) == ("incorrect", "wrong_citation")
    assert report is not None and report.wrong_citations == ("faq-2",)


def test_citations_are_not_checked_when_the_case_does_not_ask() -> None:
    assert _score("23 days at the returns desk [faq-2]")[:2] == ("correct", None)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Not in the context.", ("correct", None)),
        ("The Lumen Avenue clinic charges 30 days.", ("incorrect", "forbidden_claim")),
        ("Five euros.", ("incorrect", "hallucinated")),
        ("", ("incorrect", "empty")),
    ],
)
def test_abstain_case_wants_an_explicit_abstention(reply: str, expected: tuple[str, str | None]) -> None:
    oracle = Oracle(answer="", abstain=True, claims=Claims(forbidden=CLAIMS.forbidden))
    assert _score(reply, oracle)[:2] == expected


def test_errors_are_never_scored() -> None:
    result = score(ORACLE, Completion("", error="timeout"))
    assert (result.outcome, result.category, result.claims) == ("error", "error", None)


QUOTED = Claims(
    required=CITED.required,
    forbidden=CITED.forbidden,
    cite=CITED.cite,
    evidence_ids=CITED.evidence_ids,
    distractors=CITED.distractors,
    quotes=(
        ("policy-7", "Refunds are accepted within 23 days of purchase."),
        ("policy-8", "Bring the item to the returns desk."),
    ),
)


def test_quoted_citations_must_quote_the_declared_span_exactly_up_to_whitespace() -> None:
    oracle = Oracle(answer="23 days; returns desk", claims=QUOTED)
    right = (
        '23 days [policy-7] "accepted within\n  23 days", at the returns desk [policy-8]: '
        "\u201cthe returns desk\u201d."
    )
    outcome, category, report = _score(right, oracle)
    assert (outcome, category) == ("correct", None)
    assert report is not None and report.wrong_citations == () and report.missing_citations == ()
    # an id without a quote no longer cites the claim
    outcome, category, report = _score(
        '23 days [policy-7] "within 23 days", at the returns desk [policy-8].', oracle
    )
    assert (outcome, category) == ("incorrect", "missing_citation")
    assert report is not None and report.missing_citations == ("desk",)
    # a quote that is not in the cited document's span: paraphrased, another case, another document
    for quote in ("within twenty-three days", "Accepted within 23 days", "Bring the item"):
        reply = f'23 days [policy-7] "{quote}", at the returns desk [policy-8] "the returns desk".'
        outcome, category, report = _score(reply, oracle)
        assert (outcome, category) == ("incorrect", "wrong_citation"), quote
        assert report is not None and report.wrong_citations == ("policy-7",)
        assert report.missing_citations == ("window-23",)
