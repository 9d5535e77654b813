"""The dry run's cost is honest about what it does not know (issue 35, item 5): token counts that
are estimates say so and by which tokenizer, a price says its date and pricing page, an unpriced
model says how to add a price (and the example line works), and a remote run gets a wall-time
estimate from its provider's rate limits, labelled as one. No model is called."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import yaml

from rotscope.config.experiment import ProviderLimits
from rotscope.execution.workflows.dry_run import wall_time
from rotscope.report.dry_run import wall_time_line
from tests.support.cli_helpers import invoke, nonsense_corpus

LIMITS = {"openai": {"requests_per_minute": 20, "tokens_per_minute": 3000, "concurrency": 2}}


def _experiment(folder: Path, model: str, **fields: Any) -> Path:
    data = {
        "name": "cost",
        "model": model,
        "tasks": ["niah"],
        "lengths": [200, 300],
        "depths": [0.0, 1.0],
        "limit": 3,
        "filler": {"kind": "text", "glob": str(nonsense_corpus(folder / "corpus") / "*.txt")},
        "remote": {"base_url": "http://127.0.0.1:9"},  # never reached: a dry run calls nothing
        "cache": {"enabled": False},
        **fields,
    }
    path = folder / "cost.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _text(result: Any) -> str:
    assert result.exit_code == 0, (result.output, result.exception)
    return " ".join(result.stdout.split())


def test_a_remote_model_without_its_tokenizer_has_labelled_estimates_a_dated_price_and_a_time(
    tmp_path: Path,
) -> None:
    text = _text(invoke("run", _experiment(tmp_path, "openai/gpt-4o", limits=LIMITS), "--dry-run"))
    found = re.search(
        r"token counts: ≈ ([\d,]+) prompt tokens \(estimated by regex; set remote\.tokenizer", text
    )
    assert found is not None, text
    tokens = int(found.group(1).replace(",", ""))
    assert f"prompt tokens ≈ {tokens:,}" in text and "lower bound ≈ " in text
    assert "price: prices as of 2026-05-01, from https://platform.openai.com/docs/pricing" in text
    assert "(an upper estimate: every reply as long as max_tokens)" in text
    calls = int(re.search(r"calls: ([\d,]+) ", text).group(1))  # type: ignore[union-attr]
    charged = tokens + calls * 32  # the default max_tokens
    minutes = max(calls / 20, charged / 3000)
    assert (
        f"wall time: ≈ {math.ceil(minutes)} min at 20 requests/min, 3,000 tokens/min (limits.openai), "
        f"concurrency 2: an estimate" in text
    ), text
    assert "provider's latency can make it longer" in text


def test_an_unpriced_model_says_how_to_add_a_price_and_the_example_works(tmp_path: Path) -> None:
    text = _text(invoke("run", _experiment(tmp_path, "openai/gpt-5"), "--dry-run"))
    assert "estimated cost unknown" in text
    assert "no price for openai/gpt-5: add one under prices: in the experiment file" in text
    example = re.search(r"prices: (openai/gpt-5: \{[^}]+\})", text)
    assert example is not None, text
    assert "wall time: unknown, no rate limit is configured" in text
    priced = yaml.safe_load(example.group(1))  # the printed line is valid YAML for prices:
    text = _text(invoke("run", _experiment(tmp_path, "openai/gpt-5", prices=priced), "--dry-run"))
    assert "estimated cost $" in text and "price: prices: of the experiment file" in text


def test_a_local_engine_counts_exactly_and_says_by_which_tokenizer(tmp_path: Path) -> None:
    text = _text(invoke("run", _experiment(tmp_path, "fake/lexical"), "--dry-run"))
    assert re.search(r"token counts: [\d,]+ prompt tokens, exact \(counted by fake:regex\)", text), text
    assert "≈" not in text and "wall time" not in text and "price:" not in text


def test_the_wall_time_is_the_slower_of_the_two_rate_limits() -> None:
    by_requests = wall_time(
        "openai", ProviderLimits(requests_per_minute=10, tokens_per_minute=1e6), 100, 1000
    )
    assert by_requests.minutes == 10
    by_tokens = wall_time("openai", ProviderLimits(requests_per_minute=1e4, tokens_per_minute=100), 100, 1000)
    assert by_tokens.minutes == 10
    assert wall_time("openai", ProviderLimits(), 100, 1000).minutes is None
    fast = wall_time_line(wall_time("openai", ProviderLimits(requests_per_minute=1000), 5, 10))
    assert fast.startswith("wall time: ≈ under 1 min at 1,000 requests/min, unlimited tokens/min")
