"""A run names its folder as the user typed it (issue 53): ``--out runs/x`` prints ``runs/x``, and a
default folder prints relative to the working directory too (it printed absolute before); the
screen's last lines are the headline and the next step with that same folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_helpers import invoke


def _run(*args: str) -> list[str]:
    result = invoke("run", "--model", "fake/lexical", "--lengths", "256,512", "--limit", "4", *args)
    assert result.exit_code == 0, result.output
    return result.stdout.rstrip().splitlines()


@pytest.mark.parametrize("out", [None, "runs/typed"])
def test_the_run_folder_is_named_as_typed_and_ends_the_screen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, out: str | None
) -> None:
    monkeypatch.chdir(tmp_path)
    lines = _run(*(("--out", out) if out else ()))
    named = next(line for line in lines if line.startswith("run folder: "))
    folder = named.removeprefix("run folder: ")
    assert not Path(folder).is_absolute(), named
    assert (tmp_path / folder / "run.db").is_file()
    if out:
        assert folder == out
    assert lines[-1] == f"Next: rotscope report {folder} (every table and plot)"
    assert any(line.startswith("Effective length on niah") for line in lines[-3:-1]), lines[-3:]
