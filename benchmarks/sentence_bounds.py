"""The closing sentence never states a bound that contradicts its own point estimate: the quick
experiment (``examples/quick.yaml``: niah, 16 cases, 256/512/1,024 tokens, base 256) run on a
scripted model with the bundled model's curve, over many seeds. Run by hand:

    python benchmarks/sentence_bounds.py [--seeds 20] [--rho 0.5]

The scripted model (``scripted``): the string matcher's answer when a draw says right, else an
abstention. The draw is a Gaussian copula on the instance (the question): right at a length of
target accuracy p when ``Phi(sqrt(rho) z_case + sqrt(1 - rho) e_case,length) < p``, z and e
standard normals hashed from (seed, question[, length]), so each length's accuracy over instances
is p (the curve 0.81/0.81/0.38 of the bundled model's first run) and an instance hard at one length
tends to be hard at another (``rho``). Each seed is one run through ``execution.workflows.runner``, its
summary from ``analysis.summary`` and its sentence from ``report.sentence.one_sentence``; a seed
contradicts when the lead entry's bracket (``analysis.bracket.contradicts``) denies its point, or
when the sentence states a lower end above the point or an upper end at or below it.
Prints one line per seed and the tally.

Measured results: ``benchmarks/results/bracket_coverage.md`` (section "sentence").
"""

from __future__ import annotations

import argparse
import hashlib
import math
import re
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from scipy import stats as scipy_stats

from rotscope import load_summary
from rotscope.analysis.bracket import contradicts
from rotscope.backends.fake import ABSTAIN, FakeBackend, lexical_responder
from rotscope.config.experiment import build_config
from rotscope.execution.workflows.runner import run_experiment
from rotscope.report.sentence import one_sentence
from rotscope.types import GenerateRequest

QUICK = Path(__file__).resolve().parents[1] / "examples" / "quick.yaml"
BUNDLED_CURVE = {256: 0.81, 512: 0.81, 1024: 0.38}


def _normal(*parts: object) -> float:
    digest = hashlib.sha256(repr(parts).encode()).digest()
    uniform = (int.from_bytes(digest[:8], "big") + 0.5) / 2**64
    return float(scipy_stats.norm.ppf(uniform))


def scripted(seed: int, curve: dict[int, float], rho: float) -> Any:
    """A responder right at each length with the curve's chance, correlated within an instance."""
    lexical = lexical_responder()
    lengths = sorted(curve)

    def respond(request: GenerateRequest) -> str:
        answer = lexical(request)
        question = re.search(r"Question: (.*)", request.messages[-1]["content"])
        asked = question.group(1) if question else ""
        tokens = max(1, len(request.token_ids))
        length = min(lengths, key=lambda n: abs(math.log(tokens / n)))
        latent = math.sqrt(rho) * _normal(seed, asked) + math.sqrt(1 - rho) * _normal(seed, asked, length)
        return answer if scipy_stats.norm.cdf(latent) < curve[length] else ABSTAIN

    return respond


def stated_bounds(sentence: str) -> tuple[int | None, int | None]:
    """The lower and upper end the sentence's bracket states (``None`` where it states none)."""
    found = re.search(r"bracket: (?:at least )?([\d,]+) to (?:under|beyond) ([\d,]+)", sentence)
    if found:
        low = int(found.group(1).replace(",", ""))
        high = None if "beyond" in found.group(0) else int(found.group(2).replace(",", ""))
        return low, high
    only_low = re.search(r"bracket: at least ([\d,]+)", sentence)
    if only_low:
        return int(only_low.group(1).replace(",", "")), None
    only_high = re.search(r"bracket: under ([\d,]+)", sentence)
    if only_high:
        return None, int(only_high.group(1).replace(",", ""))
    return None, None


def one_seed(seed: int, rho: float, folder: Path) -> dict[str, Any]:
    config = build_config({**yaml.safe_load(QUICK.read_text(encoding="utf-8")), "seed": seed})
    backend = FakeBackend("scripted", scripted(seed, BUNDLED_CURVE, rho))
    typed = load_summary(run_experiment(config, run_dir=folder / f"seed-{seed}", backend=backend))
    summary = typed.model_dump()
    sentence = one_sentence(typed) or ""
    entry = summary["effective_lengths"]["tasks"][0]
    point = entry["value"]
    low, high = stated_bounds(sentence)
    stated_contradiction = point is not None and (
        (low is not None and low > point) or (high is not None and high <= point)
    )
    return {
        "seed": seed,
        "point": point,
        "state": entry["state"],
        "bracket": entry["bracket"]["state"],
        "low": entry["bracket"]["low"]["length"],
        "high": entry["bracket"]["high"]["length"],
        "contradicts": contradicts(point, entry["bracket"]) or stated_contradiction,
        "cannot_place": "cannot place it" in sentence,
        "sentence": sentence,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--rho", type=float, default=0.5)
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as folder:
        for seed in range(args.seeds):
            result = one_seed(seed, args.rho, Path(folder))
            results.append(result)
            print(
                f"seed {seed:>3}: point {result['point']} ({result['state']}), bracket {result['bracket']} "
                f"[{result['low']}, {result['high']}), contradicts {result['contradicts']}, "
                f"cannot place {result['cannot_place']}",
                flush=True,
            )
    print(f"\nexample: {results[0]['sentence']}")
    print(f"contradictions: {sum(r['contradicts'] for r in results)} of {len(results)}")
    print(f"points: {dict(Counter(r['point'] for r in results))}")
    print(f"brackets: {dict(Counter((r['low'], r['high']) for r in results))}")
    print(f"'cannot place it': {sum(r['cannot_place'] for r in results)} of {len(results)}")


if __name__ == "__main__":
    main()
