"""The ``cmd/PATH`` backend: a command run once per prompt (tests/support/fake_agent.py plays an agent CLI
that answers as ``fake/lexical`` and reports usage with a fixed harness overhead)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

import rotscope
from rotscope.analysis.summary import load_summary
from rotscope.backends.cmd.backend import CmdBackend, read_usage
from rotscope.backends.cmd.options import CmdOptions
from rotscope.backends.cmd.process import TimedOut, run_in_group
from rotscope.backends.retry import Permanent
from rotscope.config.experiment import ExperimentConfig, build_config, load_config
from rotscope.execution.calls.delivery import check_delivery, delivery_tolerance
from rotscope.execution.state.identity import config_fields
from rotscope.execution.workflows.runner import resume_experiment, run_experiment
from rotscope.store import RunStore
from rotscope.types import Completion, GenerateRequest, GenerationParams
from tests.support.cli_helpers import assert_bad_input, invoke

FAKE_AGENT = Path(__file__).resolve().parents[1] / "support" / "fake_agent.py"
SOURCE = Path(rotscope.__file__).resolve().parents[1]
OVERHEAD = 777
SMALL = {"tasks": ["niah", "nolima"], "lengths": [256, 512], "depths": ["beginning", "end"], "limit": 2}
ONE_CALL = {"tasks": ["niah"], "lengths": [256], "depths": ["midpoint"], "limit": 1, "controls": False}


def agent(folder: Path) -> Path:
    """An executable that runs tests/support/fake_agent.py with this checkout's rotscope."""
    script = folder / "agent.sh"
    script.write_text(
        f'#!/bin/sh\nPYTHONPATH="{SOURCE}" exec "{sys.executable}" "{FAKE_AGENT}" "$@"\n', encoding="utf-8"
    )
    script.chmod(0o755)
    return script


def config(model: str, grid: dict[str, Any], **cmd: Any) -> ExperimentConfig:
    return build_config({"name": "cmd", "model": model, **grid, "cmd": cmd})


def outcomes(run_dir: Path) -> dict[tuple[Any, ...], str]:
    with RunStore.read(run_dir) as store:
        return {
            (row["task"], row["case_id"], row["length_target"], row["position"], row["control"]): (
                row["outcome"]
            )
            for row in store.rows()
        }


def rows(run_dir: Path) -> list[dict[str, Any]]:
    with RunStore.read(run_dir) as store:
        return [dict(row) for row in store.rows()]


def test_the_agent_gives_fake_lexical_outcomes_and_show_reports_its_overhead(tmp_path: Path) -> None:
    usage = ["--usage", "fd", "--overhead", str(OVERHEAD)]
    through_cmd = config(f"cmd/{agent(tmp_path)}", SMALL, args=usage, usage="fd")
    started = time.perf_counter()
    cmd_dir = run_experiment(through_cmd, run_dir=tmp_path / "cmd")
    seconds = time.perf_counter() - started
    fake_dir = run_experiment(config("fake/lexical", SMALL), run_dir=tmp_path / "fake")

    got, expected = outcomes(cmd_dir), outcomes(fake_dir)
    assert got == expected
    assert {"correct", "abstained"} <= set(got.values())
    assert all(row["usage_prompt_tokens"] - row["prompt_tokens"] == OVERHEAD for row in rows(cmd_dir))
    assert sum(row["cost"] for row in rows(cmd_dir)) == pytest.approx(0.001 * len(got))
    overhead = load_summary(cmd_dir).model_dump()["token_counts"]["overhead"]
    assert overhead == {"model": through_cmd.model, "calls": len(got), "median": 777, "min": 777, "max": 777}
    shown = invoke("show", cmd_dir)
    assert shown.exit_code == 0, shown.output
    assert "median 777 tokens (range 777 to 777)" in " ".join(shown.output.split())
    print(f"{len(got)} calls through the agent script in {seconds:.1f} s")


def test_dry_run_warns_when_the_measured_overhead_passes_the_window(tmp_path: Path) -> None:
    script = agent(tmp_path)
    grid = {**ONE_CALL, "lengths": [256, 1024]}
    settings: dict[str, Any] = {"args": ["--usage", "file", "--overhead", "900"], "usage": "file"}
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump({"model": f"cmd/{script}", **grid, "cmd": settings}), encoding="utf-8")
    before = invoke("run", path, "--dry-run")
    assert before.exit_code == 0, before.output
    assert "not measured yet" in " ".join(before.output.split())

    run_experiment(config(f"cmd/{script}", grid, **settings), run_dir=tmp_path / "run")
    path.write_text(
        yaml.safe_dump({"model": f"cmd/{script}", **grid, "cmd": {**settings, "context_window": 1800}}),
        encoding="utf-8",
    )
    after = " ".join(invoke("run", path, "--dry-run").output.split())
    assert "warning: harness overhead" in after and "900 tokens" in after
    assert "window of 1,800 tokens: 1,024" in after
    assert "256 (" not in after  # 256 + 900 + 32 fits


def test_prompt_in_a_file_and_the_system_prompt_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv("AGENT_TOKEN", secret)
    settings = {
        "args": [
            *("--prompt-file", "{prompt_file}", "--system-file", "{system_file}", "--usage", "file"),
            *("--overhead", "50", "--require-env", "AGENT_TOKEN"),
        ],
        "prompt": "file",
        "parts": "split",
        "usage": "file",
        "env": ["AGENT_TOKEN"],
    }
    experiment = build_config(
        {"model": f"cmd/{agent(tmp_path)}", **ONE_CALL, "system_prompt": "Be brief.", "cmd": settings}
    )
    run_dir = run_experiment(experiment, run_dir=tmp_path / "run")
    [row] = rows(run_dir)
    assert row["outcome"] == "correct", row["error"]
    assert row["usage_prompt_tokens"] - row["prompt_tokens"] == 50  # system and user counted as rotscope does
    stored = b"".join(path.read_bytes() for path in run_dir.rglob("*") if path.is_file())
    assert secret.encode() not in stored and b"AGENT_TOKEN" in stored


def test_a_named_variable_that_is_unset_stops_the_run_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENT_TOKEN", raising=False)
    path = tmp_path / "exp.yaml"
    path.write_text(
        yaml.safe_dump({"model": f"cmd/{agent(tmp_path)}", **ONE_CALL, "cmd": {"env": ["AGENT_TOKEN"]}}),
        encoding="utf-8",
    )
    assert_bad_input(invoke("run", path, "--out", tmp_path / "run"), "cmd.env", "AGENT_TOKEN is not set")


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a process that still runs (a zombie waiting for its reaper is gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _gone(*pids: int, within_s: float = 5.0) -> bool:
    """Whether every one of ``pids`` has ended (a SIGKILL takes effect a moment after it is sent)."""
    deadline = time.monotonic() + within_s
    while any(_alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_hung_command_is_an_error_row_after_its_timeout_and_leaves_no_process(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    experiment = config(
        f"cmd/{agent(tmp_path)}", ONE_CALL, args=["--hang", str(pidfile)], timeout_s=3, max_attempts=1
    )
    started = time.perf_counter()
    run_dir = run_experiment(experiment, run_dir=tmp_path / "run")
    seconds = time.perf_counter() - started
    [row] = rows(run_dir)
    assert row["status"] == "error" and row["outcome"] == "error"
    assert "timed out after 3 s" in row["error"]
    pids = [int(pid) for pid in pidfile.read_text().split()]
    assert len(pids) == 2  # the agent and the child it started; SIGTERM ignored by the agent
    assert _gone(*pids)
    assert 3 <= seconds < 3 + 2 + 60  # the timeout, the SIGKILL grace, planning on a loaded machine


def test_a_cancelled_call_kills_the_whole_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    script = f"sleep 600 & echo $! > {pidfile}; wait"

    async def cancel_midway() -> None:
        call = asyncio.ensure_future(
            run_in_group(["/bin/sh", "-c", script], stdin=None, env={}, cwd=str(tmp_path), timeout_s=60)
        )
        while not pidfile.exists() or not pidfile.read_text().strip():
            await asyncio.sleep(0.05)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    asyncio.run(cancel_midway())
    assert _gone(int(pidfile.read_text()))


def test_background_children_are_killed_when_the_command_exits(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    script = f"sleep 600 >/dev/null 2>&1 & echo $! > {pidfile}; echo done"
    finished = asyncio.run(
        run_in_group(["/bin/sh", "-c", script], stdin=None, env={}, cwd=str(tmp_path), timeout_s=30)
    )
    assert finished.returncode == 0 and finished.stdout == b"done\n"
    assert _gone(int(pidfile.read_text()))


def test_timeout_is_raised_when_output_never_ends(tmp_path: Path) -> None:
    with pytest.raises(TimedOut, match=r"timed out after 0\.3 s"):
        asyncio.run(run_in_group(["/bin/sleep", "30"], stdin=b"", env={}, cwd=str(tmp_path), timeout_s=0.3))


def test_a_failing_command_gives_error_rows_that_resume_retries(tmp_path: Path) -> None:
    marker = tmp_path / "failed-once"
    experiment = config(f"cmd/{agent(tmp_path)}", ONE_CALL, args=["--fail-once", str(marker)], max_attempts=1)
    run_dir = run_experiment(experiment, run_dir=tmp_path / "run")
    [row] = rows(run_dir)
    assert row["outcome"] == "error" and row["status"] == "error"
    assert "exit status 1: agent: first call fails" in row["error"]
    assert load_summary(run_dir).model_dump()["error_cap"]["error_rate"] == 1.0

    # The time limit and retries are not the experiment's identity: resume may change them.
    stored = yaml.safe_load((run_dir / "config.yaml").read_text(encoding="utf-8"))
    stored["cmd"]["timeout_s"] = 30.0
    (run_dir / "config.yaml").write_text(yaml.safe_dump(stored), encoding="utf-8")
    resume_experiment(run_dir)
    [row] = rows(run_dir)
    assert row["outcome"] == "correct" and row["error"] is None


def test_a_failed_attempt_is_retried_within_the_call(tmp_path: Path) -> None:
    marker = tmp_path / "failed-once"
    experiment = config(
        f"cmd/{agent(tmp_path)}",
        ONE_CALL,
        args=["--fail-once", str(marker)],
        max_attempts=2,
        backoff_initial_s=0,
        backoff_max_s=0,
    )
    [row] = rows(run_experiment(experiment, run_dir=tmp_path / "run"))
    assert row["outcome"] == "correct" and row["request_attempts"] == 2


def _write_config(tmp_path: Path, model: str, **cmd: Any) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump({"model": model, **ONE_CALL, "cmd": cmd}), encoding="utf-8")
    return path


def test_bad_options_are_one_line_and_exit_2(tmp_path: Path) -> None:
    script = agent(tmp_path)
    plain = tmp_path / "plain.sh"
    plain.write_text("#!/bin/sh\necho hi\n", encoding="utf-8")
    cases: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
        ("cmd/./missing.sh", {}, ("cmd/", "missing.sh", "no such file")),
        (f"cmd/{plain}", {}, ("plain.sh", "not executable")),
        (f"cmd/{tmp_path}", {}, ("not a file",)),
        ("cmd/no-such-command-rotscope", {}, ("no command 'no-such-command-rotscope' on $PATH",)),
        (f"cmd/{script}", {"bogus": 1}, ("unknown key 'cmd.bogus'",)),
        (f"cmd/{script}", {"args": ["{promt_file}"]}, ("cmd", "unknown placeholder {promt_file}")),
        (f"cmd/{script}", {"prompt": "file"}, ("prompt: file needs {prompt_file}",)),
        (f"cmd/{script}", {"parts": "split"}, ("parts: split needs {system}",)),
        (f"cmd/{script}", {"cwd": "nowhere"}, ("cmd.cwd", "nowhere", "is not a folder")),
        (f"cmd/{script}", {"tokenizer": "none.json"}, ("cmd.tokenizer", "none.json")),
        (f"cmd/{script}", {"env": ["BAD-NAME"]}, ("cmd.env",)),
        (f"cmd/{script}", {"timeout_s": 0}, ("cmd.timeout_s",)),
    ]
    for model, options, fragments in cases:
        assert_bad_input(invoke("run", _write_config(tmp_path, model, **options), "--dry-run"), *fragments)


def test_models_lists_the_backend_with_a_hint() -> None:
    result = invoke("models")
    assert result.exit_code == 0
    assert "cmd/PATH: your executable" in " ".join(result.output.split())


def test_relative_paths_resolve_against_the_experiment_file(tmp_path: Path) -> None:
    agent(tmp_path)
    (tmp_path / "work").mkdir()
    path = _write_config(tmp_path, "cmd/./agent.sh", cwd="work")
    result = invoke("run", path, "--dry-run")
    assert result.exit_code == 0, result.output
    assert f"cmd/{tmp_path / 'agent.sh'}" in " ".join(result.output.split())


def _backend(tmp_path: Path, **cmd: Any) -> CmdBackend:
    return CmdBackend(str(agent(tmp_path)), config("cmd/x", ONE_CALL, **cmd).section(CmdOptions))


def test_a_harness_may_add_to_the_prompt_but_never_cut_it(tmp_path: Path) -> None:
    tolerance = delivery_tolerance(_backend(tmp_path))
    request = GenerateRequest(({"role": "user", "content": "x"},), tuple(range(1000)), GenerationParams())
    assert check_delivery(request, Completion("a", prompt_tokens=1000 + 29_000), tolerance).error is None
    cut = check_delivery(request, Completion("a", prompt_tokens=100), tolerance).error
    assert cut is not None and cut.startswith("prompt truncated")


def test_the_executable_is_part_of_the_identity(tmp_path: Path) -> None:
    backend = _backend(tmp_path)
    before = backend.describe()
    (tmp_path / "agent.sh").write_text("#!/bin/sh\necho changed\n", encoding="utf-8")
    after = CmdBackend(str(tmp_path / "agent.sh"), backend.options).describe()
    assert before["model_digest"] != after["model_digest"]
    assert "timeout_s" not in before["options"] and "args" in before["options"]
    assert "timeout_s" not in config_fields(config("cmd/x", ONE_CALL))["cmd"]


def test_usage_is_read_strictly(tmp_path: Path) -> None:
    path = tmp_path / "usage.json"
    path.write_text(json.dumps({"prompt_tokens": 12, "completion_tokens": 3, "cost": 0.5}), encoding="utf-8")
    assert read_usage(path) == {"prompt_tokens": 12, "completion_tokens": 3, "cost": 0.5}
    path.write_text("", encoding="utf-8")
    assert read_usage(path) == {}
    for bad in ("[1]", "{not json", '{"prompt_tokens": "many"}', '{"prompt_tokens": -4}'):
        path.write_text(bad, encoding="utf-8")
        with pytest.raises(Permanent, match="usage"):
            read_usage(path)


def test_an_empty_reply_is_an_error_row(tmp_path: Path) -> None:
    silent = tmp_path / "silent.sh"
    silent.write_text("#!/bin/sh\ncat >/dev/null\n", encoding="utf-8")
    silent.chmod(0o755)
    [row] = rows(run_experiment(config(f"cmd/{silent}", ONE_CALL), run_dir=tmp_path / "run"))
    assert row["outcome"] == "error" and "empty reply" in row["error"]


def test_the_agent_cli_example_runs_through_its_wrapper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """examples/agent-cli.yaml with a stand-in ``claude`` on PATH that answers in its JSON print mode."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    usage = {"input_tokens": 3, "cache_creation_input_tokens": 2000, "cache_read_input_tokens": 30000}
    answer = {"result": "ARGS", "usage": {**usage, "output_tokens": 7}, "total_cost_usd": 0.01}
    claude.write_text(
        f"#!/bin/sh\ncat >/dev/null\necho '{json.dumps(answer)}' | sed \"s/ARGS/$*/\"\n",
        encoding="utf-8",
    )
    claude.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    example = Path(__file__).resolve().parents[2] / "examples" / "agent-cli.yaml"
    experiment = load_config(
        example, {"lengths": [256], "depths": ["midpoint"], "limit": 1, "controls": False}
    )
    [row] = rows(run_experiment(experiment, run_dir=tmp_path / "run"))
    assert row["error"] is None
    assert row["response"] == "-p --output-format json --model sonnet --max-turns 1"
    assert (row["usage_prompt_tokens"], row["usage_completion_tokens"], row["cached_tokens"]) == (
        32003,
        7,
        30000,
    )
    assert row["cost"] == pytest.approx(0.01)


def test_calls_run_concurrently_within_the_limit(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    grid = {**ONE_CALL, "lengths": [256, 512, 768], "depths": ["beginning", "end"]}  # 6 calls
    experiment = build_config(
        {
            "model": f"cmd/{agent(tmp_path)}",
            **grid,
            "cmd": {"args": ["--log", str(log)]},
            "limits": {"cmd": {"concurrency": 2}},
        }
    )
    run_experiment(experiment, run_dir=tmp_path / "run")
    spans = [tuple(map(float, line.split())) for line in log.read_text().splitlines()]
    overlap = max(sum(start <= t < end for start, end in spans) for t, _ in spans)
    assert len(spans) == 6 and overlap == 2
