"""``rotscope doctor``: one table, exit 0 when a run can work, 2 naming the failing check."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from rotscope.cli import EXIT_ENGINE_CRASHED, app
from rotscope.cli.common import _guarded
from rotscope.execution.doctor import _cache_check, run_checks
from rotscope.execution.workflows.runner import EngineStopped


def test_without_llama_cpp_python_doctor_exits_2_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # import llama_cpp now raises ImportError
    result = CliRunner().invoke(app, ["doctor"])
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "llama-cpp-python" in lines[0] and "pip install" in lines[0]
    assert "Traceback" not in result.output


def test_an_unwritable_cache_folder_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should go", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    check = _cache_check()
    assert check.status == "FAIL" and str(blocker) in check.detail


def test_missing_extras_are_warnings_not_failures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    monkeypatch.setitem(sys.modules, "anthropic", None)
    checks = {check.name: check for check in run_checks()}
    assert checks["anthropic"].status == "warn" and "rotscope[anthropic]" in checks["anthropic"].detail
    assert checks["llama-cpp-python"].status == "FAIL"


def test_repeated_engine_crashes_exit_5_with_the_resume_command(capsys: pytest.CaptureFixture[str]) -> None:
    def crashing() -> None:
        raise EngineStopped(Path("runs/x"), 3, 12, "the local engine crashed 3 times in a row")

    with pytest.raises(typer.Exit) as stopped:
        _guarded(crashing)
    assert stopped.value.exit_code == EXIT_ENGINE_CRASHED == 5
    err = capsys.readouterr().err
    assert "3 of 12 items done" in err and "rotscope run --resume runs/x" in err


def test_doctor_lists_where_each_kind_of_component_comes_from(monkeypatch: pytest.MonkeyPatch) -> None:
    import rotscope.execution.doctor as doctor

    monkeypatch.setattr(doctor, "run_checks", lambda: [doctor.Check("engine", "ok", "stubbed")])
    result = CliRunner().invoke(app, ["doctor"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    components = lines[lines.index("components:") + 1 :]
    for kind, member in (
        ("backends", "llamacpp"),
        ("task families", "niah"),
        ("filler sources", "text"),
        ("scorers", "phrase"),
    ):
        line = next(line for line in components if line.startswith(f"  {kind} from rotscope "))
        assert line.split(" (built-in): ", 1)[1].split(", ").count(member) == 1, line
    assert lines[-1] == "ready for a run"


def test_without_chromium_doctor_says_it_serves_only_the_report_browser_test_and_figures_need_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no chromium, chromium-browser or chrome here
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    checks = {check.name: check for check in run_checks()}
    browser = checks["chromium"]
    assert browser.status == "warn"
    assert "only by the browser test of the HTML report" in browser.detail
    assert "--figures need no browser" in browser.detail
    assert checks["matplotlib"].status == "warn" and "rotscope[figures]" in checks["matplotlib"].detail
    assert "kaleido" not in checks
