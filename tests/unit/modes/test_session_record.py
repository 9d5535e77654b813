"""A session's record (``session.json``): one shape for ``--models`` and ``--pair``, an older
pair's ``pair.json`` read into it, and folders that are names inside the session folder only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rotscope.errors import BadInput
from rotscope.modes.session_record import is_session, read_record, write_record

SEEDS = "generation.seed + trial, the same for both subjects in every (case, length, position, trial)"
EXPERIMENT: dict[str, Any] = {"name": "exp", "model": "fake/lexical", "tasks": ["niah"], "cache": {}}


def _pair_file(out: Path, **changes: Any) -> None:
    """``pair.json`` in the shape the pair wrote before it was a session (its keys, in its order)."""
    record = {
        "subjects": {"baseline": "fake/lexical", "candidate": "fake/lexical-recent"},
        "seed": 0,
        "seeds": SEEDS,
        "planned": True,
        "experiment": EXPERIMENT,
        "frozen_plan": None,
        "allow_deviation": False,
        "names": {"baseline": None, "candidate": None},
        **changes,
    }
    out.mkdir(exist_ok=True)
    (out / "pair.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


def _session_file(out: Path, subjects: list[list[str]], **changes: Any) -> None:
    """``session.json`` as a --models session wrote it before the pair was one (no ``kind``)."""
    record = {"subjects": subjects, "seed": 0, "seeds": SEEDS, "planned": True, "experiment": EXPERIMENT}
    out.mkdir(exist_ok=True)
    (out / "session.json").write_text(json.dumps({**record, **changes}), encoding="utf-8")


def test_an_older_pair_file_reads_as_a_pair_session_of_baseline_and_candidate(tmp_path: Path) -> None:
    _pair_file(tmp_path, planned=False, frozen_plan={"grid": {}}, allow_deviation=True)
    assert is_session(tmp_path)
    record = read_record(tmp_path)
    assert record.kind == "pair"
    assert record.subjects == [["baseline", "fake/lexical"], ["candidate", "fake/lexical-recent"]]
    assert (record.planned, record.frozen_plan, record.allow_deviation) == (False, {"grid": {}}, True)


def test_writing_an_older_pair_record_replaces_its_file_by_session_json(tmp_path: Path) -> None:
    _pair_file(tmp_path)
    record = read_record(tmp_path)
    write_record(tmp_path, record)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["session.json"]
    written = json.loads((tmp_path / "session.json").read_text(encoding="utf-8"))
    assert written["subjects"] == [["baseline", "fake/lexical"], ["candidate", "fake/lexical-recent"]]
    assert read_record(tmp_path) == record


def test_a_models_session_file_without_a_kind_is_a_models_session(tmp_path: Path) -> None:
    subjects = [["fake-lexical", "fake/lexical"], ["fake-lexical-recent", "fake/lexical-recent"]]
    _session_file(tmp_path, subjects)
    record = read_record(tmp_path)
    assert record.kind == "models"
    assert record.folders == ["fake-lexical", "fake-lexical-recent"]


@pytest.mark.parametrize(
    "folder", ["../elsewhere", "/tmp/elsewhere", "a/b", "a\\b", ".", "..", "", ".hidden", "session.json"]
)
def test_a_folder_that_is_a_path_or_outside_the_session_is_refused(tmp_path: Path, folder: str) -> None:
    _session_file(tmp_path / "s", [[folder, "fake/lexical"], ["other", "fake/lexical-recent"]])
    with pytest.raises(BadInput, match="subjects"):
        read_record(tmp_path / "s")


def test_a_folder_linked_outside_the_session_is_refused(tmp_path: Path) -> None:
    _session_file(tmp_path / "s", [["linked", "fake/lexical"], ["other", "fake/lexical-recent"]])
    (tmp_path / "s" / "linked").symlink_to(tmp_path)
    with pytest.raises(BadInput, match="'linked' is not a folder name inside"):
        read_record(tmp_path / "s")


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"subjects": [["only", "fake/lexical"]]}, "subjects"),
        ({"subjects": [["a", "fake/lexical"], ["a", "fake/lexical-recent"]]}, "named twice"),
        ({"subjects": [["a", "fake/lexical"], ["b", 7]]}, "subjects"),
        ({"planned": "no"}, "planned"),
        ({"planned": False, "experiment": None}, "without its experiment"),
        ({"planned": False, "experiment": {"cache": ["off"]}}, "experiment.cache"),
        ({"kind": "trio"}, "kind"),
    ],
)
def test_a_hand_edited_session_file_is_bad_input_naming_the_field(
    tmp_path: Path, changes: dict[str, Any], named: str
) -> None:
    subjects = changes.pop("subjects", [["a", "fake/lexical"], ["b", "fake/lexical-recent"]])
    _session_file(tmp_path, subjects, **changes)
    with pytest.raises(BadInput, match=named):
        read_record(tmp_path)
