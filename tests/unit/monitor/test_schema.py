"""The outcome record's allow-list: every shape that could carry text is refused, naming the field
and never the value."""

from __future__ import annotations

from typing import Any

import pytest

from rotscope.monitor.schema import Refused, check

GOOD: dict[str, Any] = {
    "ts": "2026-03-01T12:00:00Z",
    "length_tokens": 8192,
    "evidence_quantile": 0.4,
    "outcome": "answered",
}
SECRET = "SECRET the patient's name is Ada"


def refused(record: Any) -> Refused:
    with pytest.raises(Refused) as caught:
        check(record)
    error = caught.value
    assert SECRET not in str(error) and "Ada" not in str(error)
    return error


def test_a_good_record_is_checked_and_normalised() -> None:
    outcome = check({**GOOD, "ts": "2026-03-01T13:00:00+01:00", "language": "en", "tenant": "t-7", "hops": 2})
    assert outcome.ts == "2026-03-01T12:00:00+00:00"
    assert outcome.labels == (("tenant", "t-7"),)
    assert outcome.hops == 2 and outcome.quantiles == (0.4,)
    assert check({**GOOD, "evidence_quantile": [0.1, 0.9]}).position == pytest.approx(0.5)


@pytest.mark.parametrize(
    "field",
    ["prompt", "completion", "message", "messages", "content", "text", "response", "question", "answer",
     "context", "document", "system", "user", "transcript", "input", "output"],
)  # fmt: skip
def test_text_fields_are_refused_by_name_even_with_a_label_value(field: str) -> None:
    assert refused({**GOOD, field: "hello"}).field == field
    assert refused({**GOOD, field: SECRET}).field == field


@pytest.mark.parametrize(
    "value",
    [{"text": SECRET}, [SECRET], [{"a": SECRET}], {"nested": {"deep": SECRET}}],
)
def test_nested_forms_are_refused(value: Any) -> None:
    assert refused({**GOOD, "tenant": value}).field == "tenant"
    assert refused({**GOOD, "language": value}).field == "language"


@pytest.mark.parametrize(
    "value", [SECRET, "two words", "x" * 33, "line\nbreak", "ünïcode", "", "a/b", "semi;colon"]
)
def test_text_hidden_in_labels_is_refused(value: str) -> None:
    assert refused({**GOOD, "tenant": value}).field == "tenant"
    assert refused({**GOOD, "model_digest": value}).field == "model_digest"


@pytest.mark.parametrize("value", [1, 1.5, True, None])
def test_a_label_must_be_a_string(value: Any) -> None:
    assert refused({**GOOD, "tenant": value}).field == "tenant"


def test_a_field_name_that_is_text_is_refused_without_being_named() -> None:
    error = refused({**GOOD, SECRET: "x"})
    assert error.field is None and "name not shown" in str(error)
    assert refused({**GOOD, "A" * 40: "x"}).field is None


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("ts", "yesterday"), ("ts", "2026-03-01T12:00:00"), ("ts", 1700000000), ("ts", SECRET),
        ("length_tokens", 0), ("length_tokens", "8192"), ("length_tokens", 8192.0), ("length_tokens", True),
        ("evidence_quantile", 1.5), ("evidence_quantile", []), ("evidence_quantile", [0.2, "x"]),
        ("evidence_quantile", SECRET), ("evidence_quantile", float("nan")), ("outcome", "wrong"),
        ("outcome", SECRET), ("outcome", ["answered"]), ("evidence_count", -1), ("hops", 0), ("hops", "2"),
        ("cluster_id", "conversation-12"), ("cluster_id", "abc"), ("cluster_id", SECRET),
        ("cluster_id", "AB" * 8), ("hops", None), ("cluster_id", None), ("risk", None),
    ],
)  # fmt: skip
def test_wrong_types_and_values_of_known_fields_are_refused(field: str, value: Any) -> None:
    assert refused({**GOOD, field: value}).field == field


@pytest.mark.parametrize("field", ["ts", "length_tokens", "evidence_quantile", "outcome"])
def test_required_fields(field: str) -> None:
    record = dict(GOOD)
    del record[field]
    assert refused(record).field == field


@pytest.mark.parametrize("record", [[GOOD], SECRET, 3, None])
def test_a_line_must_be_an_object(record: Any) -> None:
    assert refused(record).field is None


def test_the_line_names_file_line_and_field() -> None:
    error = refused({**GOOD, "prompt": SECRET})
    assert error.line("out.jsonl", 7).startswith("out.jsonl:7: field 'prompt': ")


def test_too_many_labels() -> None:
    assert refused({**GOOD, **{f"d{i}": "x" for i in range(17)}}).field is None
