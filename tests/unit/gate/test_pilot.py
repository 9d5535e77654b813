"""``rotscope plan --pilot DIR``'s reading of a pilot run's accuracy."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rotscope.errors import BadInput
from rotscope.gate.pilot import pilot_accuracy
from rotscope.store import RunStore

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "runs" / "v1-lexical"


def test_a_pilot_run_gives_its_accuracy_over_scored_items_with_evidence(tmp_path: Path) -> None:
    run = tmp_path / "pilot"
    shutil.copytree(FIXTURE, run)  # opening a store leaves its journal beside it: not in the fixture
    pilot = pilot_accuracy(run)
    with RunStore.read(run) as store:
        rows = [
            row
            for row in store.rows()
            if row["status"] == "ok" and not row.get("control") and row["outcome"] in ("correct", "incorrect")
        ]
    assert pilot.items == len(rows) > 0
    assert pilot.accuracy == pytest.approx(sum(row["outcome"] == "correct" for row in rows) / len(rows))
    assert f"{pilot.accuracy:.2f}" in pilot.describe()


@pytest.mark.parametrize("where", ["missing", "empty"])
def test_a_folder_that_is_no_run_is_one_line_of_bad_input(tmp_path: Path, where: str) -> None:
    folder = tmp_path / where
    if where == "empty":
        folder.mkdir()
    with pytest.raises(BadInput) as caught:
        pilot_accuracy(folder)
    assert str(caught.value).startswith("plan --pilot") and "\n" not in str(caught.value)
