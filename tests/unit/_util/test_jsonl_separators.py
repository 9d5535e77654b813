"""JSON Lines end at ``\\n`` only: text holding U+2028, U+2029, U+0085, lone surrogates and NULs,
written by rotscope's one writer, reads back equal through each of its readers, and a file torn
by a crash (inside a UTF-8 character too) is cut at its last complete line as bytes."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rotscope._util.jsonl import complete_lines, jsonl_line, jsonl_lines, read_jsonl
from rotscope.errors import BadInput
from rotscope.execution.workflows.self_session import _stored
from rotscope.tasks.cases import read_case_file
from rotscope.tasks.replay.records import read_replay_file

SEPARATORS = "\u2028\u2029\u0085\x00\n\r\x0b\x0c\x1c\x1d\x1e"
HIGH, LOW = (0xD800, 0xDBFF), (0xDC00, 0xDFFF)


def _unpaired(text: str) -> bool:
    """No high surrogate right before a low one (JSON reads such a pair as one character)."""
    return not any(HIGH[0] <= ord(a) <= HIGH[1] and LOW[0] <= ord(b) <= LOW[1] for a, b in pairwise(text))


texts = st.text(
    alphabet=st.one_of(
        st.sampled_from(SEPARATORS),
        st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),  # lone surrogates
        st.characters(codec="utf-8"),
    ),
    max_size=40,
).filter(_unpaired)
records = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "tool"]), "content": texts}),
    min_size=1,
    max_size=5,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(written=records)
def test_what_rotscope_writes_reads_back_equal(tmp_path: Path, written: list[dict[str, Any]]) -> None:
    path = tmp_path / "lines.jsonl"
    path.write_text("".join(jsonl_line(record) for record in written), encoding="utf-8")
    data = path.read_bytes()
    assert data.count(b"\n") == len(written)  # one line each, whatever the text holds
    for separator in ("\u2028", "\u2029", "\u0085"):
        assert separator.encode("utf-8") not in data  # escaped: no other reader cuts the line
    assert [record for _, record in read_jsonl(path)] == written
    assert _stored(path) == written  # the reader of the sessions a model writes


def test_the_readers_split_at_newline_only(tmp_path: Path) -> None:
    raw = "this\u2028that\u2029other\u0085end\x0bvt\x0cff\x1cfs"
    lines = [json.dumps({"content": raw}, ensure_ascii=False), json.dumps({"content": "second"})]
    path = tmp_path / "raw.jsonl"
    path.write_bytes(("\r\n".join(lines) + "\n\n").encode("utf-8"))  # CRLF, a blank line at the end
    assert [record["content"] for _, record in read_jsonl(path)] == [raw, "second"]
    assert [number for number, _ in jsonl_lines(path.read_text(encoding="utf-8"))] == [1, 2]


def test_a_case_file_and_a_replay_file_with_separators_in_their_text_are_read(tmp_path: Path) -> None:
    case = {
        "case_id": "sep",
        "question": "What is the\u2028gate code?",
        "documents": [{"id": "fact", "text": "The gate\u2029code\u0085is 4097.", "claims": ["code"]}],
        "claims": {"code": ["4097"]},
        "required_claims": ["code"],
    }
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(case, ensure_ascii=False) + "\n", encoding="utf-8")
    [record] = read_case_file(cases)
    assert record.question == case["question"] and record.documents[0].text == case["documents"][0]["text"]
    content = "log\u2028line\n[[evidence]]The code is 4.[[/evidence]]\u2029\nQuestion: What is the code?"
    replay = {
        "case_id": "rec",
        "messages": [{"role": "user", "content": content}],
        "question": "What is the code?",
        "claims": {"code": ["4"]},
        "required_claims": ["code"],
    }
    path = tmp_path / "replay.jsonl"
    path.write_text(json.dumps(replay, ensure_ascii=False) + "\n", encoding="utf-8")
    [recording] = read_replay_file(path)
    assert recording.case.case_id == "rec" and "\u2028" in recording.recorded


def test_a_file_torn_inside_a_character_is_cut_at_its_last_whole_line(tmp_path: Path) -> None:
    path = tmp_path / "KEY.partial.jsonl"
    whole = jsonl_line({"role": "user", "content": "the vault\u2028holds it"}).encode("utf-8")
    torn = '{"role": "assistant", "content": "caf\u00e9 \u20ac'.encode()[:-2]  # inside the euro sign
    path.write_bytes(whole + torn)
    assert complete_lines(path) == whole
    assert path.read_bytes() == whole  # the torn tail is cut off the file
    path.write_bytes(whole + torn)
    assert _stored(path) == [{"role": "user", "content": "the vault\u2028holds it"}]


def test_an_undecodable_whole_line_in_a_session_is_one_line_of_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "KEY.partial.jsonl"
    path.write_bytes(b'{"role": "user", "content": "\xff"}\n')
    with pytest.raises(BadInput, match=r"not UTF-8 text.*delete the file"):
        _stored(path)
