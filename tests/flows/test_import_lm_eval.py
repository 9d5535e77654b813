"""``rotscope import`` of lm-evaluation-harness's ``--log_samples`` output (issue 51): RULER's samples
(the metric keyed by the document's own ``max_length``, -1 at every other length) and LongBench's
(a per-document ``length`` in words, an F1 in [0, 1]) become run folders whose cells equal a direct
computation on the samples; the model comes from ``results_*.json``; no prompt or reply text is
stored; a sample without a length is one line naming it, exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.support.cli_helpers import assert_bad_input, invoke
from tests.support.fault_battery import assert_text_absent

STAMP = "2026-11-30T10-21-07.123456"
LENGTHS = (4096, 8192, 16384)
DOCS = 40
REPLY = "The special magic number for zorvath-quill is 7741290"
PROMPT = "A special magic number is hidden within the following text: octarine lanterns"


def _ruler_sample(doc_id: int, length: int, score: float, filter_name: str = "none") -> dict[str, Any]:
    """One sample as lm-eval logs a RULER task (``process_results``: every configured length is a
    metric key, -1 except the document's own)."""
    metrics = {str(other): -1.0 for other in LENGTHS}
    metrics[str(length)] = score
    return {
        "doc_id": doc_id,
        "doc": {
            "index": doc_id % DOCS,
            "input": PROMPT,
            "outputs": ["7741290"],
            "length": length - 37,
            "max_length": length,
            "gen_prefix": "Answer:",
        },
        "target": "['7741290']",
        "arguments": {"gen_args_0": {"arg_0": PROMPT, "arg_1": {"until": []}}},
        "resps": [[REPLY]],
        "filtered_resps": [REPLY],
        "filter": filter_name,
        "metrics": [str(other) for other in LENGTHS],
        "doc_hash": f"d{doc_id}",
        "prompt_hash": f"p{doc_id}",
        "target_hash": "t",
        **metrics,
    }


@pytest.fixture(scope="module")
def ruler(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("lm-eval") / "Org__Model-7B"
    root.mkdir()
    rng = np.random.default_rng(11)
    truth = {length: rng.random(DOCS) < p for length, p in zip(LENGTHS, (0.95, 0.8, 0.45), strict=True)}
    lines = []
    for number, length in enumerate(LENGTHS):
        for doc in range(DOCS):
            doc_id = number * DOCS + doc
            lines.append(_ruler_sample(doc_id, length, float(truth[length][doc])))
            # a second filter of the same document: read once
            lines.append(_ruler_sample(doc_id, length, 0.0, filter_name="strict"))
    samples = root / f"samples_niah_single_2_{STAMP}.jsonl"
    samples.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    (root / f"results_{STAMP}.json").write_text(
        json.dumps({"config": {"model": "vllm", "model_args": "pretrained=Org/Model-7B,max_length=32768"}}),
        encoding="utf-8",
    )
    result = invoke("import", root, "--out", root.parent / "out")
    assert result.exit_code == 0, result.output
    assert f"{len(LENGTHS) * DOCS} rows imported" in result.output
    shown = invoke("show", root.parent / "out", "--json")
    assert shown.exit_code == 0, shown.output
    return {"root": root, "truth": truth, "summary": json.loads(shown.stdout), "samples": samples}


def test_ruler_samples_give_the_accuracy_of_the_samples_at_each_length(ruler: dict[str, Any]) -> None:
    summary, truth = ruler["summary"], ruler["truth"]
    accuracy = {cell["length"]: cell["accuracy"] for cell in summary["cells"]}
    assert accuracy == pytest.approx({length: truth[length].mean() for length in LENGTHS})
    assert {cell["n"] for cell in summary["cells"]} == {DOCS}  # the second filter was not read again
    assert summary["model"] == "Org/Model-7B"
    assert summary["imported"]["format"] == "lm-eval"
    assert [task["task"] for task in summary["tasks"]] == ["niah_single_2"]
    assert {cell["position"] for cell in summary["cells"]} == {"unknown"}


def test_no_prompt_or_reply_text_is_stored(ruler: dict[str, Any]) -> None:
    assert_text_absent(ruler["root"].parent / "out" / "run.db", REPLY, PROMPT, "7741290", "octarine")


def test_one_samples_file_imports_alone(ruler: dict[str, Any], tmp_path: Path) -> None:
    result = invoke("import", ruler["samples"], "--out", tmp_path / "one")
    assert result.exit_code == 0, result.output
    summary = json.loads(invoke("show", tmp_path / "one", "--json").stdout)
    assert summary["model"] == "Org/Model-7B" and len(summary["cells"]) == len(LENGTHS)


def test_longbench_samples_count_words_and_keep_partial_credit(tmp_path: Path) -> None:
    scores = [1.0, 0.5, 0.0, 0.25, 1.0, 0.75]
    words = [1800, 2100, 5200, 5900, 9800, 12000]
    lines = [
        {
            "doc_id": number,
            "doc": {"input": "q", "context": "c", "answers": ["a"], "length": length},
            "filtered_resps": ["a"],
            "resps": [["a"]],
            "filter": "none",
            "metrics": ["qa_f1_score"],
            "qa_f1_score": score,
        }
        for number, (score, length) in enumerate(zip(scores, words, strict=True))
    ]
    path = tmp_path / f"samples_longbench_hotpotqa_{STAMP}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    result = invoke("import", path, "--out", tmp_path / "lb", "--bin-lengths", "4000,8000,16000")
    assert result.exit_code == 0, result.output
    summary = json.loads(invoke("show", tmp_path / "lb", "--json").stdout)
    assert summary["imported"]["unit"] == "words"
    assert summary["model"] == "lm-eval"  # no results file beside it
    means = {cell["length"]: cell.get("mean_score", cell["accuracy"]) for cell in summary["cells"]}
    assert means == pytest.approx({4000: 0.75, 8000: 0.125, 16000: 0.875})


def test_a_sample_without_a_length_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / f"samples_gsm8k_{STAMP}.jsonl"
    path.write_text(
        json.dumps({"doc_id": 0, "doc": {"question": "2+2"}, "filtered_resps": ["4"], "exact_match": 1.0})
        + "\n",
        encoding="utf-8",
    )
    line = assert_bad_input(invoke("import", path, "--out", tmp_path / "x"), "line 1", "max_length")
    assert "length" in line
    assert not (tmp_path / "x").exists()
