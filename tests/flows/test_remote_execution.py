"""Running a remote-style backend (the fake, reporting another provider): concurrency and rate
limits, error rows and the error cap, cost, budget stops and resume, the response cache."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner

from rotscope.analysis.summary import load_summary
from rotscope.backends import listed_prices
from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.cli import EXIT_BUDGET, app
from rotscope.config.experiment import ExperimentConfig, ProviderLimits, build_config
from rotscope.errors import BadInput
from rotscope.execution.calls.cost import MILLION, price_table
from rotscope.execution.calls.limits import ProviderLimiter
from rotscope.execution.workflows.dry_run import dry_run
from rotscope.execution.workflows.runner import BudgetReached, Interrupted, resume_experiment, run_experiment
from rotscope.report.html import render_report
from rotscope.types import GenerateRequest

SCHEMA = json.loads(resources.files("rotscope").joinpath("schemas/summary.schema.json").read_text())
PROVIDER = "remotefake"
INPUT_USD, OUTPUT_USD = 3.0, 15.0  # per million tokens
TOTAL = 2 * 2 * 2 + 2 * 2  # 2 cases x 2 lengths x 2 depths, plus 2 controls x 2 lengths


class Responder:
    """The lexical fake, counting calls; it fails (an error row) when ``fail_if`` says so and
    raises Ctrl-C on call number ``interrupt_on``."""

    def __init__(
        self,
        fail_if: Callable[[GenerateRequest], bool] | None = None,
        interrupt_on: int | None = None,
    ) -> None:
        self.inner = lexical_responder()
        self.fail_if = fail_if
        self.interrupt_on = interrupt_on
        self.calls = 0

    def __call__(self, request: GenerateRequest) -> str:
        self.calls += 1
        if self.interrupt_on is not None and self.calls == self.interrupt_on:
            raise KeyboardInterrupt
        if self.fail_if is not None and self.fail_if(request):
            raise TimeoutError("provider timed out")
        return self.inner(request)


def remote(responder: Responder | None = None, latency_s: float = 0.0) -> FakeBackend:
    return FakeBackend("lexical", responder or Responder(), provider=PROVIDER, latency_s=latency_s)


def long_prompt(request: GenerateRequest) -> bool:
    return len(request.token_ids) > 250


def write_experiment(tmp_path: Path, corpus: Path) -> Path:
    """The experiment file of the command-line tests: a priced fake remote model, its own cache."""
    experiment = tmp_path / "experiment.yaml"
    experiment.write_text(
        "\n".join(
            [
                "model: fake-remote/lexical",
                "tasks: [niah]",
                "limit: 2",
                "lengths: [200, 300]",
                "depths: [0.0, 1.0]",
                f"filler: {{kind: text, glob: '{corpus}/*.txt'}}",
                f"prices: {{fake-remote/lexical: {{input: {INPUT_USD}, output: {OUTPUT_USD}}}}}",
                f"cache: {{path: '{tmp_path}/cache/responses.db'}}",
            ]
        ),
        encoding="utf-8",
    )
    return experiment


@pytest.fixture()
def make_config(corpus: Path, tmp_path: Path) -> Callable[..., ExperimentConfig]:
    def make(**changes: Any) -> ExperimentConfig:
        data: dict[str, Any] = {
            "name": "remote-test",
            "model": "fake/lexical",
            "tasks": ["niah"],
            "limit": 2,
            "lengths": [200, 300],
            "depths": [0.0, 1.0],
            "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
            "prices": {"fake/lexical": {"input": INPUT_USD, "output": OUTPUT_USD}},
            "cache": {"path": str(tmp_path / "cache" / "responses.db")},
        }
        data.update(changes)
        return build_config(data)

    return make


def rows(run_dir: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(run_dir / "run.db") as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM items ORDER BY item_id")]


# ---- concurrency and rate limits ----------------------------------------------------------------


def test_remote_calls_overlap_up_to_the_provider_limit(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path
) -> None:
    backend = remote(latency_s=0.02)
    config = make_config(limits={PROVIDER: {"concurrency": 3}})
    run_experiment(config, run_dir=tmp_path / "run", backend=backend)
    assert backend.calls == TOTAL
    assert backend.max_in_flight == 3
    assert all(row["status"] == "ok" for row in rows(tmp_path / "run"))


def test_local_backend_runs_one_call_at_a_time(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path
) -> None:
    backend = FakeBackend("lexical", Responder(), latency_s=0.01)
    run_experiment(
        make_config(limits={"fake": {"concurrency": 8}}), run_dir=tmp_path / "run", backend=backend
    )
    assert backend.calls == TOTAL
    assert backend.max_in_flight == 1


def _start_times(limiter: ProviderLimiter, calls: int, tokens: int) -> list[float]:
    started: list[float] = []

    async def one() -> None:
        async with limiter.slot(tokens):
            started.append(time.monotonic())

    async def every() -> None:
        await asyncio.gather(*(one() for _ in range(calls)))

    begin = time.monotonic()
    asyncio.run(every())
    return [moment - begin for moment in sorted(started)]


def test_requests_per_minute_spread_the_calls() -> None:
    # 4 requests per (shortened) 0.4 s minute: after a burst of 4, one call every 0.1 s, so no
    # 0.4 s window holds more than 4 + 4 starts.
    limited = ProviderLimiter(PROVIDER, ProviderLimits(requests_per_minute=4), period_s=0.4)
    times = _start_times(limited, 12, tokens=10)
    assert times[-1] >= 0.9 * (12 - 4) * 0.1
    for i in range(len(times) - 8):
        assert times[i + 8] - times[i] >= 0.9 * 0.4
    unlimited = ProviderLimiter(PROVIDER, ProviderLimits(), period_s=0.4)
    assert _start_times(unlimited, 12, tokens=10)[-1] < 0.2


def test_tokens_per_minute_charge_each_call_its_tokens() -> None:
    # 1,000 tokens per 0.4 s: calls of 250 tokens go 4 per period, calls of 50 tokens all at once.
    long_calls = ProviderLimiter(PROVIDER, ProviderLimits(tokens_per_minute=1000), period_s=0.4)
    times = _start_times(long_calls, 8, tokens=250)
    assert times[-1] >= 0.9 * (8 * 250 - 1000) / 1000 * 0.4
    short_calls = ProviderLimiter(PROVIDER, ProviderLimits(tokens_per_minute=1000), period_s=0.4)
    assert _start_times(short_calls, 8, tokens=50)[-1] < 0.1


def test_a_call_above_the_token_limit_is_bad_input_before_any_call(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path
) -> None:
    backend = remote()
    config = make_config(limits={PROVIDER: {"tokens_per_minute": 100}})
    with pytest.raises(BadInput, match=r"limits\.remotefake\.tokens_per_minute"):
        run_experiment(config, run_dir=tmp_path / "run", backend=backend)
    assert backend.calls == 0


# ---- error rows and the error cap -----------------------------------------------------------------


def test_errors_are_excluded_counted_per_cell_and_flagged_over_the_cap(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path
) -> None:
    run_dir = run_experiment(
        make_config(max_error_rate=0.05), run_dir=tmp_path / "run", backend=remote(Responder(long_prompt))
    )
    stored = rows(run_dir)
    errors = [row for row in stored if row["status"] == "error"]
    assert errors and all(row["outcome"] == "error" and "timed out" in row["error"] for row in errors)
    assert all(row["length_target"] == 300 for row in errors)
    summary = load_summary(run_dir).model_dump()
    for cell in summary["cells"]:
        expected_errors = sum(
            1
            for row in errors
            if not row["control"] and (row["length_target"], row["depth"]) == (cell["length"], cell["depth"])
        )
        assert cell["errors"] == expected_errors
        assert cell["error_rate"] == expected_errors / cell["n"]
        scored = cell["n"] - cell["errors"]
        assert cell["accuracy"] == (cell["correct"] / scored if scored else None)
    cap = summary["error_cap"]
    assert cap["exceeded"] is True
    assert cap["error_rate"] == len(errors) / len(stored)
    assert {(c["length"], c["depth"]) for c in cap["cells_over"]} == {(300, 0.0), (300, 1.0)}
    jsonschema.validate(summary, SCHEMA)
    assert 'id="error-cap"' in render_report(run_dir)
    shown = CliRunner().invoke(app, ["show", str(run_dir)])
    assert "EXCEEDS THE CAP" in " ".join(shown.stdout.split())


def test_error_rate_within_the_cap_is_not_flagged(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path
) -> None:
    run_dir = run_experiment(
        make_config(max_error_rate=0.6), run_dir=tmp_path / "run", backend=remote(Responder(long_prompt))
    )
    summary = load_summary(run_dir).model_dump()
    assert 0 < summary["error_cap"]["error_rate"] <= 0.6
    assert summary["error_cap"]["exceeded"] is False
    assert 'id="error-cap"' not in render_report(run_dir)


# ---- cost, dry run and budget -------------------------------------------------------------------


def _expected_estimate(config: ExperimentConfig) -> float:
    plan = dry_run(config).plan
    price = price_table(config)[config.model]
    calls = ((item.prompt.prompt_tokens, item.params.max_tokens) for item in plan.items)
    return sum(prompt * price.input + reply * price.output for prompt, reply in calls) / MILLION


def test_dry_run_estimate_is_the_price_table_sum(make_config: Callable[..., ExperimentConfig]) -> None:
    config = make_config()
    estimate = dry_run(config).estimate
    assert estimate.calls == TOTAL
    assert estimate.cached_calls == 0
    assert estimate.max_output_tokens == TOTAL * 32  # each item's reply budget: a needle's phrase
    assert estimate.cost == pytest.approx(_expected_estimate(config))
    assert estimate.cost > 0


def test_dry_run_on_the_command_line_prints_cost_and_calls_nothing(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path, corpus: Path
) -> None:
    experiment = write_experiment(tmp_path, corpus)
    config = make_config()
    result = CliRunner().invoke(app, ["run", str(experiment), "--dry-run", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert f"calls: {TOTAL} (0 answered by the response cache)" in text
    assert f"estimated cost ${_expected_estimate(config):.4f}" in text
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "cache").exists()


def test_unpriced_remote_model_has_unknown_cost_and_cannot_take_a_budget(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path
) -> None:
    config = make_config(prices={})
    run_dir = run_experiment(config, run_dir=tmp_path / "run", backend=remote())
    assert all(row["cost"] is None for row in rows(run_dir))
    assert load_summary(run_dir).model_dump()["cost"]["priced"] is False
    with pytest.raises(BadInput, match="max_cost: no price for model 'fake/lexical'"):
        run_experiment(make_config(prices={}, max_cost=1.0), run_dir=tmp_path / "other", backend=remote())


def test_each_call_stores_its_cost_from_the_reported_usage(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path
) -> None:
    run_dir = run_experiment(make_config(), run_dir=tmp_path / "run", backend=remote())
    for row in rows(run_dir):
        expected = (
            row["usage_prompt_tokens"] * INPUT_USD + row["usage_completion_tokens"] * OUTPUT_USD
        ) / MILLION
        assert row["cost"] == pytest.approx(expected)
    assert load_summary(run_dir).model_dump()["cost"]["usd"] == pytest.approx(
        sum(row["cost"] for row in rows(run_dir))
    )


def test_built_in_prices_can_be_overridden(make_config: Callable[..., ExperimentConfig]) -> None:
    config = make_config(prices={"openai/gpt-4o-mini": {"input": 9.0, "output": 9.0}})
    assert price_table(config)["openai/gpt-4o-mini"].input == 9.0
    assert price_table(config)["openai/gpt-4o"] == listed_prices()["openai/gpt-4o"]


def test_budget_stops_before_it_is_exceeded_and_resume_finishes(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path
) -> None:
    config = make_config(limits={PROVIDER: {"concurrency": 4}})
    full = _expected_estimate(config)
    budget = full / 3
    run_dir = tmp_path / "run"
    with pytest.raises(BudgetReached) as stop:
        run_experiment(
            make_config(limits={PROVIDER: {"concurrency": 4}}, max_cost=budget),
            run_dir=run_dir,
            backend=remote(latency_s=0.01),
        )
    stored = rows(run_dir)
    spent = sum(row["cost"] or 0.0 for row in stored)
    done = [row for row in stored if row["status"] == "ok"]
    assert 0 < len(done) < TOTAL
    assert spent <= budget
    assert stop.value.spent == pytest.approx(spent)
    assert stop.value.done == len(done)

    # Resuming with the same budget spends at most what is left of it (the budget is the run
    # folder's); a larger one finishes every item exactly once.
    with pytest.raises(BudgetReached):
        run_experiment(
            make_config(limits={PROVIDER: {"concurrency": 4}}, max_cost=budget),
            run_dir=run_dir,
            resume=True,
            backend=remote(),
        )
    assert sum(row["cost"] or 0.0 for row in rows(run_dir)) <= budget
    more = remote()
    run_experiment(
        make_config(limits={PROVIDER: {"concurrency": 4}}, max_cost=full * 2),
        run_dir=run_dir,
        resume=True,
        backend=more,
    )
    final = rows(run_dir)
    assert all(row["status"] == "ok" and row["attempts"] == 1 for row in final)
    assert sum(row["cost"] for row in final) <= full * 2


def test_calls_in_flight_hold_their_estimate_against_the_budget(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path
) -> None:
    # Room for two estimates only: with four slots free, two calls may start, not four.
    config = make_config(limits={PROVIDER: {"concurrency": 4}})
    plan = dry_run(config).plan
    largest = max(item.prompt.prompt_tokens for item in plan.items)
    one_call = (largest * INPUT_USD + plan.max_reply_tokens * OUTPUT_USD) / MILLION
    backend = remote(latency_s=0.05)
    with pytest.raises(BudgetReached):
        run_experiment(
            make_config(limits={PROVIDER: {"concurrency": 4}}, max_cost=2.5 * one_call),
            run_dir=tmp_path / "run",
            backend=backend,
        )
    assert backend.max_in_flight == 2
    assert sum(row["cost"] or 0.0 for row in rows(tmp_path / "run")) <= 2.5 * one_call


def test_budget_stop_on_the_command_line_exits_4_and_resume_goes_on(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path, corpus: Path
) -> None:
    experiment = write_experiment(tmp_path, corpus)
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", str(experiment), "--out", str(run_dir), "--max-cost", "0.004"])
    assert result.exit_code == EXIT_BUDGET, result.output
    message = " ".join(result.stderr.split())
    assert message.startswith("rotscope: stopped at budget")
    assert f"rotscope run --resume {run_dir} --max-cost" in message
    assert "Traceback" not in result.output
    resumed = CliRunner().invoke(app, ["run", "--resume", str(run_dir), "--max-cost", "1"])
    assert resumed.exit_code == 0, resumed.output
    assert all(row["status"] == "ok" for row in rows(run_dir))


# ---- the response cache ---------------------------------------------------------------------------

RESULT_FIELDS = (
    "item_id",
    "response",
    "outcome",
    "category",
    "usage_prompt_tokens",
    "usage_completion_tokens",
)


def test_a_repeated_run_is_answered_by_the_cache(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path
) -> None:
    first = run_experiment(make_config(), run_dir=tmp_path / "first", backend=remote())
    again = remote()
    second = run_experiment(make_config(), run_dir=tmp_path / "second", backend=again)
    assert again.calls == 0
    before, after = rows(first), rows(second)
    assert [tuple(r[f] for f in RESULT_FIELDS) for r in before] == [
        tuple(r[f] for f in RESULT_FIELDS) for r in after
    ]
    assert all(row["cached_response"] == 0 and row["cost"] > 0 for row in before)
    assert all(row["cached_response"] == 1 and row["cost"] == 0 for row in after)
    summary = load_summary(second).model_dump()
    jsonschema.validate(summary, SCHEMA)
    assert summary["tokens"]["evaluated"] == 0 < load_summary(first).model_dump()["tokens"]["evaluated"]
    assert summary["cost"] == {
        "usd": 0.0,
        "session_usd": 0.0,
        "priced": True,
        "max_cost": None,
        "cached_responses": TOTAL,
    }


def test_dry_run_counts_what_the_cache_already_holds(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path
) -> None:
    model = "fake-remote/lexical"
    config = make_config(model=model, prices={model: {"input": INPUT_USD, "output": OUTPUT_USD}})
    assert dry_run(config).estimate.cached_calls == 0
    run_experiment(config, run_dir=tmp_path / "run")
    estimate = dry_run(config).estimate
    assert (estimate.calls, estimate.cached_calls, estimate.cost) == (TOTAL, TOTAL, 0.0)


def test_errors_are_never_cached(make_config: Callable[..., ExperimentConfig], tmp_path: Path) -> None:
    run_experiment(make_config(), run_dir=tmp_path / "first", backend=remote(Responder(long_prompt)))
    failed = sum(row["status"] == "error" for row in rows(tmp_path / "first"))
    assert failed > 0
    healthy = remote()
    run_experiment(make_config(), run_dir=tmp_path / "second", backend=healthy)
    assert healthy.calls == failed
    assert all(row["status"] == "ok" for row in rows(tmp_path / "second"))


def test_cache_key_covers_generation_parameters_and_trials(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path
) -> None:
    run_experiment(make_config(), run_dir=tmp_path / "first", backend=remote())
    longer = remote()
    run_experiment(make_config(generation={"max_tokens": 40}), run_dir=tmp_path / "second", backend=longer)
    assert longer.calls == TOTAL
    trials = remote()
    run_experiment(make_config(trials=2), run_dir=tmp_path / "third", backend=trials)
    assert trials.calls == TOTAL  # trial 0 from the cache, trial 1 called


def test_no_cache_calls_again(make_config: Callable[..., ExperimentConfig], tmp_path: Path) -> None:
    run_experiment(make_config(), run_dir=tmp_path / "first", backend=remote())
    uncached = remote()
    run_experiment(make_config(cache={"enabled": False}), run_dir=tmp_path / "second", backend=uncached)
    assert uncached.calls == TOTAL
    assert all(row["cached_response"] == 0 for row in rows(tmp_path / "second"))


def test_local_backends_are_never_cached(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path
) -> None:
    for name in ("first", "second"):
        local = FakeBackend("lexical", Responder())
        run_experiment(make_config(), run_dir=tmp_path / name, backend=local)
        assert local.calls == TOTAL
    assert not (tmp_path / "cache").exists()


def test_default_cache_lives_in_the_user_cache_folder(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    run_experiment(make_config(cache={}), run_dir=tmp_path / "run", backend=remote())
    assert (tmp_path / "xdg" / "rotscope" / "responses.db").is_file()


def test_an_unusable_cache_path_is_bad_input(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path
) -> None:
    (tmp_path / "taken").write_text("a file, not a folder", encoding="utf-8")
    backend = remote()
    with pytest.raises(BadInput, match=r"cache\.path: cannot use"):
        run_experiment(
            make_config(cache={"path": str(tmp_path / "taken" / "responses.db")}),
            run_dir=tmp_path / "run",
            backend=backend,
        )
    assert backend.calls == 0


# ---- interrupts -----------------------------------------------------------------------------------


def test_ctrl_c_during_concurrent_calls_keeps_finished_work(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path
) -> None:
    config = make_config(limits={PROVIDER: {"concurrency": 3}}, cache={"enabled": False})
    run_dir = tmp_path / "run"
    with pytest.raises(Interrupted) as stop:
        run_experiment(config, run_dir=run_dir, backend=remote(Responder(interrupt_on=6), latency_s=0.01))
    finished = [row for row in rows(run_dir) if row["status"] == "ok"]
    assert 0 < len(finished) < TOTAL
    assert stop.value.done == len(finished)
    resume_backend = remote()
    run_experiment(config, run_dir=run_dir, resume=True, backend=resume_backend)
    assert resume_backend.calls == TOTAL - len(finished)
    assert all(row["status"] == "ok" and row["attempts"] == 1 for row in rows(run_dir))


def test_a_real_sigint_cancels_calls_in_flight_and_keeps_finished_work(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path
) -> None:
    config = make_config(limits={PROVIDER: {"concurrency": 2}}, cache={"enabled": False})
    run_dir = tmp_path / "run"
    # The signal comes from another thread while calls are in flight, as a user's Ctrl-C would: when
    # the fifth call starts (at concurrency 2, at least three have answered), not at a time, which a
    # loaded machine would stretch past the first answer or past the last.
    timer = threading.Timer(0.0, os.kill, (os.getpid(), signal.SIGINT))
    inner = lexical_responder()
    started = 0

    def respond(request: GenerateRequest) -> str:
        nonlocal started
        started += 1
        if started == 5:
            timer.start()
        return inner(request)

    try:
        with pytest.raises(Interrupted) as stop:
            backend = FakeBackend("lexical", respond, provider=PROVIDER, latency_s=0.05)
            run_experiment(config, run_dir=run_dir, backend=backend)
    finally:
        timer.cancel()
    finished = [row for row in rows(run_dir) if row["status"] == "ok"]
    assert 0 < len(finished) < TOTAL
    assert stop.value.done == len(finished)
    assert all(row["status"] == "pending" for row in rows(run_dir) if row not in finished)
    resume_backend = remote()
    run_experiment(config, run_dir=run_dir, resume=True, backend=resume_backend)
    assert resume_backend.calls == TOTAL - len(finished)
    assert all(row["status"] == "ok" and row["attempts"] == 1 for row in rows(run_dir))


def test_resume_takes_a_new_budget_and_no_cache(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path
) -> None:
    # The resumed run makes its backend from the folder's config, so the run does too: resuming a
    # folder made through another backend is refused (its prompts plan to other items).
    model = "fake-remote/lexical"
    config = make_config(model=model, prices={model: {"input": INPUT_USD, "output": OUTPUT_USD}})
    run_dir = run_experiment(config, run_dir=tmp_path / "run")
    resumed = resume_experiment(run_dir, max_cost=2.0, use_cache=False)
    assert resumed == run_dir
    stored = (run_dir / "config.yaml").read_text(encoding="utf-8")
    assert "max_cost: 2.0" in stored
