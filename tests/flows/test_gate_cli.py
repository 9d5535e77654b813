"""``rotscope plan``, ``run --plan`` and ``gate`` end to end with the deterministic fake models:
exit codes 0 / 1 / 2 / 3 and the release record."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import Result
from typer.testing import CliRunner

from rotscope.cli import app
from rotscope.gate.decision import Rule
from rotscope.gate.sizing import Design, gate_power, verdict_rates
from rotscope.plan.manifest import manifest_digest, read_manifest

SYLLABLES = ("zu", "qa", "xo", "vy", "ku", "pim", "dax", "fol", "wex", "jor", "ibb", "oth")


def _invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(arg) for arg in args])


def _one_error_line(result: Result, *fragments: str) -> None:
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("rotscope: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gatecli")
    rng = random.Random(0)
    (root / "corpus").mkdir()
    for number in range(16):  # a haystack per case: the gate clusters on shared ones (issue 48)
        lines = (" ".join(rng.choice(SYLLABLES) + rng.choice(SYLLABLES) for _ in range(8)) for _ in range(40))
        (root / "corpus" / f"doc{number}.txt").write_text(".\n".join(lines) + ".\n", encoding="utf-8")
    return root


def _experiment(folder: Path, name: str, **fields: Any) -> Path:
    data: dict[str, Any] = {
        "name": name,
        "model": "fake/lexical",
        "tasks": ["niah"],
        "lengths": [200],
        "depths": ["beginning", "midpoint", "end"],
        "limit": 16,
        "filler": {"kind": "text", "glob": str(folder / "corpus" / "*.txt"), "variants": 16},
        # 16 cases per slice can show non-inferiority within 0.3, not within 0.1.
        "gate": {"min_instances": 5, "margin": 0.3},
    }
    data.update(fields)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def runs(folder: Path) -> dict[str, Path]:
    """A plan, a baseline under it, a same-model candidate and a tail-only candidate."""
    experiment = _experiment(folder, "exp")
    planned = _invoke("plan", experiment, "-o", folder / "plan.json")
    assert planned.exit_code == 0, planned.output
    (folder / "plan.txt").write_text(planned.output, encoding="utf-8")  # what plan printed, read below
    made = {"plan": folder / "plan.json", "experiment": experiment, "printed": folder / "plan.txt"}
    for name, extra in (
        ("baseline", ()),
        ("same", ()),
        ("recent", ("--model", "fake/lexical-recent", "--allow-deviation")),
    ):
        result = _invoke("run", experiment, "--plan", folder / "plan.json", "--out", folder / name, *extra)
        assert result.exit_code == 0, result.output
        made[name] = folder / name
    return made


@pytest.fixture(scope="module")
def small(folder: Path) -> tuple[Path, Path]:
    """Two runs of 3 cases: fewer than the minimum of 5 instances per slice."""
    experiment = _experiment(folder, "small", limit=3)
    for name in ("small-base", "small-cand"):
        assert _invoke("run", experiment, "--out", folder / name).exit_code == 0
    return folder / "small-base", folder / "small-cand"


@pytest.fixture(scope="module")
def seeded(folder: Path) -> Path:
    """The baseline's experiment with another layout seed."""
    assert _invoke("run", _experiment(folder, "seeded", seed=1), "--out", folder / "seeded").exit_code == 0
    return folder / "seeded"


def test_plan_writes_a_manifest_and_names_its_digest(runs: dict[str, Path]) -> None:
    manifest = read_manifest(runs["plan"])
    assert manifest["grid"]["lengths"] == [200]
    result = _invoke("plan", runs["experiment"], "-o", runs["plan"].with_name("again.json"))
    assert result.exit_code == 0
    assert f"plan {manifest_digest(manifest)}" in result.output


def _design(cases: int, slices: int) -> Design:
    cells = {f"c{case}": 1 for case in range(cases)}
    return Design.from_slices({("niah", 200, f"p{number}", ()): cells for number in range(slices)})


def test_plan_states_the_gates_power_at_its_counts(runs: dict[str, Path]) -> None:
    """16 cases x 3 positions and the evidence-absent control at one length: 4 slices of 16
    instances; plan prints the probabilities simulated through the gate's tests for that shape,
    and the gate's record states them too."""
    manifest = read_manifest(runs["plan"])
    planned = manifest["planned"]
    assert (planned["slices"], planned["instances_per_slice"], planned["clusters"]) == (4, 16, 16)
    expected = gate_power(_design(16, 4), Rule(0.3, 0.05, 0.0, 5))
    shown = " ".join(runs["printed"].read_text(encoding="utf-8").split())
    assert f"P(PASS | identical) = {expected.pass_identical:.2f}" in shown
    assert f"P(FAIL | a drop of the margin everywhere) = {expected.fail_margin_everywhere:.2f}" in shown
    assert "simulated through the gate's own tests, 2000 datasets per truth" in shown
    record = json.loads(
        _invoke("gate", "--baseline", runs["baseline"], "--candidate", runs["same"], "--json").output
    )
    assert record["power"]["simulated"] and record["power"]["slices"] == 4
    assert record["power"]["pass_identical"] == pytest.approx(expected.pass_identical, abs=0.08)


def test_plan_says_the_accuracy_it_assumed_and_sizes_at_a_pilot_runs(runs: dict[str, Path]) -> None:
    """Without --pilot the plan names the assumed 0.90; with a pilot run folder it simulates at
    that run's accuracy (the fake model finds every needle: 1.00 on items with evidence); a folder
    that is no run is one line of bad input, exit 2."""
    out = runs["plan"].with_name("pilot.json")
    assumed = runs["printed"].read_text(encoding="utf-8")  # the plan without --pilot
    assert "gate power assumes baseline accuracy 0.90 (no --pilot run given)" in " ".join(assumed.split())
    piloted = _invoke("plan", runs["experiment"], "-o", out, "--pilot", runs["baseline"])
    shown = " ".join(piloted.output.split())
    assert piloted.exit_code == 0, piloted.output
    assert f"gate power at baseline accuracy 1.00 from the pilot run {runs['baseline']}" in shown
    assert "baseline accuracy 0.99" in shown  # the simulated truth, clipped below a certain 1
    _one_error_line(_invoke("plan", runs["experiment"], "-o", out, "--pilot", out.with_name("nowhere")),
                    "plan --pilot")  # fmt: skip


def test_plan_simulates_the_haystack_variants_its_cases_share(folder: Path) -> None:
    """16 cases reading 3 haystack texts: the gate clusters on the 3, so the plan states the power
    of that (it cannot PASS) and --power says why no size reaches it (one line, exit 2)."""
    glob = str(folder / "corpus" / "*.txt")
    shared = _experiment(folder, "shared", filler={"kind": "text", "glob": glob, "variants": 3})
    out = folder / "shared.json"
    result = _invoke("plan", shared, "-o", out)
    shown = " ".join(result.output.split())
    assert result.exit_code == 0, result.output
    assert "3 shared haystack variants" in shown and "P(PASS | identical) = 0.00" in shown
    _one_error_line(_invoke("plan", shared, "-o", out, "--power", "0.8"), "share 3 haystack variants")


def test_power_grows_with_cases_and_falls_with_slices() -> None:
    rule = Rule(0.1, 0.05, 0.0, 5)
    passing = [verdict_rates(_design(n, 6), rule, [0.9] * 6, datasets=400)["PASS"] for n in (10, 30, 80)]
    assert passing == sorted(passing) and passing[0] < 0.5 < passing[-1]
    drop = [0.9 - 0.3] + [0.9] * 14
    one, many = _design(60, 1), _design(60, 15)
    assert (
        verdict_rates(one, rule, drop[:1], datasets=400)["FAIL"]
        > verdict_rates(many, rule, drop, datasets=400)["FAIL"]
    )


def test_plan_power_picks_the_cases_per_task_an_identical_candidate_needs(folder: Path) -> None:
    experiment = _experiment(folder, "sized", limit=None)
    result = _invoke("plan", experiment, "-o", folder / "sized.json", "--power", "0.8")
    assert result.exit_code == 0, result.output
    chosen = read_manifest(folder / "sized.json")["config"]["cases_per_task"]
    assert f"cases_per_task {chosen}: an identical candidate PASSes" in " ".join(result.output.split())
    rule = Rule(0.3, 0.05, 0.0, 5)
    assert verdict_rates(_design(chosen, 4), rule, [0.9] * 4)["PASS"] >= 0.8
    assert verdict_rates(_design(chosen - 1, 4), rule, [0.9] * 4)["PASS"] < 0.8


def test_plan_power_on_a_case_file_too_small_exits_2(folder: Path) -> None:
    cases = folder / "few.jsonl"
    cases.write_text(
        "".join(
            json.dumps({"case_id": f"c{n}", "question": f"What is code {n}?",
                        "documents": [{"id": "d", "text": f"Code {n} is {n * 7 + 3}.", "claims": ["v"]}],
                        "claims": {"v": [str(n * 7 + 3)]}, "required_claims": ["v"]})
            + "\n"
            for n in range(6)
        ),
        encoding="utf-8",
    )  # fmt: skip
    experiment = _experiment(folder, "few", tasks=["cases"], cases=str(cases), limit=None)
    result = _invoke("plan", experiment, "-o", folder / "few.json", "--power", "0.8")
    _one_error_line(result, "plan --power 0.80", "cases per task; task cases has 6")
    assert not (folder / "few.json").exists()


def test_a_run_whose_flags_change_the_plan_exits_2(runs: dict[str, Path], folder: Path) -> None:
    result = _invoke("run", runs["experiment"], "--plan", runs["plan"], "--lengths", "300")
    _one_error_line(result, "grid.lengths: plan [200], run [300]", "--allow-deviation")
    result = _invoke("run", runs["experiment"], "--plan", runs["plan"], "--lengths", "300", "--dry-run")
    _one_error_line(result, "grid.lengths: plan [200], run [300]")
    allowed = ("--allow-deviation", "--dry-run")
    assert (
        _invoke("run", runs["experiment"], "--plan", runs["plan"], "--lengths", "300", *allowed).exit_code
        == 0
    )


def test_an_allowed_deviation_is_listed_by_show(runs: dict[str, Path]) -> None:
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["show", str(runs["recent"])])
    assert result.exit_code == 0
    assert "deviation subject.model: plan 'fake/lexical', run 'fake/lexical-recent'" in result.output
    summary = json.loads(_invoke("show", runs["recent"], "--json").stdout)
    assert summary["plan"]["deviations"][0]["field"] == "subject.model"


def test_the_same_model_passes_with_exit_0(runs: dict[str, Path], folder: Path) -> None:
    record_path = folder / "pass.json"
    result = _invoke(
        "gate", "--baseline", runs["baseline"], "--candidate", runs["same"], "--plan", runs["plan"], "-o",
        record_path,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "PASS" in result.output
    record = json.loads(record_path.read_text(encoding="utf-8"))
    assert record["verdict"] == "PASS" and record["exit_code"] == 0
    plan = read_manifest(runs["plan"])
    assert record["plan_digest"] == manifest_digest(plan)
    for role in ("baseline", "candidate"):
        bound = record[role]
        assert bound["model"] == "fake/lexical"
        assert bound["cases_digest"] == plan["cases"]["digest"]
        assert bound["template_digest"] == plan["subject"]["template_digest"]
        assert bound["tokenizer_digest"] == plan["subject"]["tokenizer_digest"]
        assert bound["assembler_digest"] == plan["subject"]["assembler_digest"]
        assert bound["plan_digest"] == manifest_digest(plan)
    assert {item["position"] for item in record["slices"]} == {"beginning", "midpoint", "end", "absent"}


def test_a_model_that_reads_only_the_tail_fails_with_exit_1(runs: dict[str, Path], folder: Path) -> None:
    result = _invoke(
        "gate", "--baseline", runs["baseline"], "--candidate", runs["recent"], "--plan", runs["plan"],
        "--json", "-o", folder / "fail.json",
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    record = json.loads(result.stdout)
    assert record["verdict"] == "FAIL"
    failing = {item["position"] for item in record["slices"] if item["verdict"] == "FAIL"}
    assert "beginning" in failing and "end" not in failing
    assert record["candidate"]["plan_deviations"][0]["field"] == "subject.model"


def test_too_few_instances_give_inconclusive_with_exit_3(small: tuple[Path, Path]) -> None:
    result = _invoke("gate", "--baseline", small[0], "--candidate", small[1])
    assert result.exit_code == 3, result.output
    assert "INCONCLUSIVE" in result.output and "fewer than the plan's minimum 5" in result.output
    assert (small[1] / "gate-vs-small-base.json").is_file()


def test_runs_with_other_cases_or_seeds_exit_2(
    runs: dict[str, Path], small: tuple[Path, Path], seeded: Path
) -> None:
    result = _invoke("gate", "--baseline", runs["baseline"], "--candidate", seeded)
    _one_error_line(result, "different seeds", "baseline 0, candidate 1")
    result = _invoke("gate", "--baseline", runs["baseline"], "--candidate", small[1])
    _one_error_line(result, "not the candidate")


def test_a_run_outside_the_plan_exits_2(runs: dict[str, Path], seeded: Path) -> None:
    result = _invoke("gate", "--baseline", runs["baseline"], "--candidate", seeded, "--plan", runs["plan"])
    _one_error_line(result, "candidate run seeded deviates from the plan at seeds.layout")


def test_gate_on_a_folder_that_is_no_run_exits_2(runs: dict[str, Path], folder: Path) -> None:
    result = _invoke("gate", "--baseline", runs["baseline"], "--candidate", folder / "corpus")
    _one_error_line(result, "not a run folder")


def test_outputs_in_a_missing_folder_are_one_line_exit_2(runs: dict[str, Path], folder: Path) -> None:
    missing = folder / "no-such-folder"
    result = _invoke("plan", runs["experiment"], "-o", missing / "plan.json")
    _one_error_line(result, "plan: cannot write", "no-such-folder")
    result = _invoke(
        "gate", "--baseline", runs["baseline"], "--candidate", runs["baseline"], "-o", missing / "r.json"
    )
    _one_error_line(result, "gate: cannot write", "no-such-folder")
    result = _invoke("report", runs["baseline"], "-o", missing / "report.html")
    _one_error_line(result, "report: cannot write", "no-such-folder")


def _as_import(run: Path, csv_path: Path) -> Path:
    """The run's scored rows as another harness would give them: question, instance, length,
    position, outcome, no prompt, seed or evidence."""
    from rotscope.store import RunStore

    with RunStore.read(run) as store:
        rows = [row for row in store.rows() if row["status"] == "ok"]
    lines = ["item_id,instance_id,length_tokens,position,correct,task,trial,control,model\n"]
    for row in rows:
        correct = int(row["outcome"] == "correct")
        lines.append(
            f"{row['case_id']},{row['instance_id']},{row['length_target']},{row['position']},{correct},"
            f"{row['task']},{row['trial']},{row['control']},imported-{row['model']}\n"
        )
    csv_path.write_text("".join(lines), encoding="utf-8")
    return csv_path


def test_a_native_run_gates_against_an_imported_one_as_against_itself(
    runs: dict[str, Path], folder: Path
) -> None:
    """Issue 51: a gate between a native run and an import of the same outcomes decides as the gate
    between the native runs (it used to exit 2 on "different seeds (baseline 0, candidate None)"),
    and a regression imported from elsewhere fails as the native one does."""
    for name in ("same", "recent"):
        imported = folder / f"imported-{name}"
        made = _invoke("import", _as_import(runs[name], folder / f"{name}.csv"), "--out", imported)
        assert made.exit_code == 0, made.output
        native = _invoke("gate", "--baseline", runs["baseline"], "--candidate", runs[name], "--json")
        mixed = _invoke("gate", "--baseline", runs["baseline"], "--candidate", imported, "--json")
        assert mixed.exit_code == native.exit_code, mixed.output
        native_record, mixed_record = json.loads(native.stdout), json.loads(mixed.stdout)
        assert mixed_record["verdict"] == native_record["verdict"]
        assert mixed_record["candidate"]["imported"] is not None
        key = ("task", "length", "position", "pairs", "baseline_accuracy", "candidate_accuracy")
        assert [[entry[field] for field in key] for entry in mixed_record["slices"]] == [
            [entry[field] for field in key] for entry in native_record["slices"]
        ]
    assert json.loads(mixed.stdout)["verdict"] == "FAIL"  # the tail-only candidate, imported


def test_the_gate_writes_junit_that_a_parser_reads(runs: dict[str, Path], folder: Path) -> None:
    """Issue 51: ``gate --junit``: one case for the verdict and one per slice; a FAIL is a failure
    a JUnit reader counts, an identical candidate none; names and numbers only."""
    from xml.etree import ElementTree

    for name, failing in (("same", False), ("recent", True)):
        target = folder / f"{name}-junit.xml"
        result = _invoke("gate", "--baseline", runs["baseline"], "--candidate", runs[name], "--junit", target)
        assert result.exit_code == (1 if failing else 0), result.output
        suite = ElementTree.parse(target).getroot().find("testsuite")
        assert suite is not None
        record = json.loads((runs[name] / "gate-vs-baseline.json").read_text(encoding="utf-8"))
        cases = suite.findall("testcase")
        assert len(cases) == int(suite.get("tests", "0")) == len(record["slices"]) + 1
        failures = [case for case in cases if case.find("failure") is not None]
        assert len(failures) == int(suite.get("failures", "0"))
        assert (cases[0].find("failure") is not None) == failing
        assert len(failures) == sum(entry["verdict"] == "FAIL" for entry in record["slices"]) + failing
