"""``rotscope doctor`` on this machine: the real engine, its prefill benchmark and the verdict."""

from __future__ import annotations

from typer.testing import CliRunner

from rotscope.cli import app


def test_doctor_exits_0_here_and_prints_the_prefill_speed() -> None:
    result = CliRunner().invoke(app, ["doctor"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "prompt tokens/s" in result.output
    assert "extra buffers" in result.output and "ready for a run" in result.output
