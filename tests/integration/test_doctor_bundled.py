"""``rotscope doctor`` on this machine: the real engine, its prefill benchmark and the verdict."""

from __future__ import annotations

from typer.testing import CliRunner

from rotscope.cli import app


def test_doctor_exits_0_here_and_prints_the_prefill_speed() -> None:
    result = CliRunner().invoke(app, ["doctor"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "prompt tokens/s" in result.output
    assert "extra buffers" in result.output and "ready for a run" in result.output
    from rotscope.backends.llamacpp.extra_buffers import cpu_has_amx

    # On a CPU with AMX doctor says how to start llama-cpp-python's own server safely.
    # (one word: the table wraps its cells at spaces to the console's width)
    assert ("serve-llama" in result.output) == cpu_has_amx(), result.output
