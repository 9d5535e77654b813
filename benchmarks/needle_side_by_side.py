"""rotscope beside needlehaystack (0.1.0, the Greg Kamradt harness) on the same grid, model file and
server: issue 53's side-by-side. Run by hand, on an idle machine (nothing else running):

    python benchmarks/needle_side_by_side.py [--mode both|inprocess|server] [--rounds 2]
        [--lengths 256,512,1024] [--depths beginning,midpoint,end] [--limit 3] [--label TEXT]
        [--out benchmarks/results/needle_side_by_side.md]

needlehaystack runs in a virtual environment of its own (its pins would move the project's), with
the very llama.cpp build the project's environment has (the wheel pip built and cached for it)::

    python3.11 -m venv /tmp/needle-venv
    /tmp/needle-venv/bin/pip install -c benchmarks/needle_constraints.txt needlehaystack==0.1.0 \\
        "$(find ~/.cache/pip/wheels -name 'llama_cpp_python-<version>-*.whl' | head -1)"

(``--needle-python`` names another interpreter.) The script checks that both environments load the
same ``libllama.so`` (its SHA-256) and refuses to compare otherwise.

The grid is examples/quick-v1.yaml's (the frozen quick grid: niah and nolima, 3 cases each, 256,
512 and 1,024 tokens, beginning, midpoint and end, evidence-absent controls, 32 new tokens, greedy);
``--lengths``, ``--depths``, ``--limit`` and ``--tasks`` shrink it for both harnesses alike. For each
mode, two interleaved rounds (rotscope, needlehaystack, rotscope, needlehaystack), each a fresh
process timed from its start to its exit:

- ``inprocess``: ``rotscope run CONFIG --no-cache`` on the bundled model, against needlehaystack with
  a ``ModelProvider`` calling llama-cpp-python in its process (``benchmarks/needle_harness.py``);
- ``server``: one llama-cpp-python server (``rotscope serve-llama``, as
  tests/integration/test_openai_server.py starts it, ``tests/llama_server.served``) for both:
  rotscope's ``openai/smollm2`` with ``remote.base_url`` on it, needlehaystack posting to it.

needlehaystack is given rotscope's cases (the same needle sentence, question and answer) at the
same lengths (the whole prompt's tokens: its ``final_context_length_buffer`` is set to the case's
prompt without context) and depths (0, 50, 100 percent), one tester per case, the same thread count
and batch, the same ``max_tokens``, greedy with ``repeat_penalty`` 1.0; it reads its replies with a
string-match evaluator. What the two cannot share, so where their outcomes may differ: the haystack
(rotscope's code filler; needlehaystack's Paul Graham essays), the words around it (each harness's
own prompt), where exactly the needle lands (needlehaystack backs up to a period; rotscope places
it on a line of its own at a verified depth), and rotscope's evidence-absent controls, which
needlehaystack has no way to ask (rotscope makes those calls too: its wall time includes them).

Outcomes: rotscope's rows against examples/quick-v1.items.tsv (by prompt digest, with the per-CPU
allow-list of tests/integration/test_quick_v1.py), each harness's rounds against each other, and
per (length, depth) how many of the same questions each answered, needlehaystack's replies scored
by rotscope's own scorer (``scoring.deterministic.score``), beside its evaluator's own count.

Writes the results file (``--out``): the machine (CPU model, cores, AVX2/AVX512/AMX), the load
averages before and after, the wall times and their ratios, the work each harness did and the
outcome tables.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.integration.test_quick_v1 import KERNEL_CHANGES, recorded  # noqa: E402
from tests.llama_server import SERVED_NAME, served  # noqa: E402

from rotscope.backends import create_backend  # noqa: E402
from rotscope.backends.llamacpp.backend import LlamaCppBackend, bundled_model_path  # noqa: E402
from rotscope.backends.llamacpp.options import LlamaCppOptions  # noqa: E402
from rotscope.config.experiment import build_config, read_config_file  # noqa: E402
from rotscope.errors import BadInput  # noqa: E402
from rotscope.plan.workitems import build_plan  # noqa: E402
from rotscope.scoring.deterministic import score  # noqa: E402
from rotscope.types import Case, Completion  # noqa: E402

CONFIG = ROOT / "examples" / "quick-v1.yaml"
HARNESS = ROOT / "benchmarks" / "needle_harness.py"
RESULTS = ROOT / "benchmarks" / "results" / "needle_side_by_side.md"
TARGETS = {"inprocess": 0.35, "server": 0.5}
N_CTX = 2048


@dataclass
class Timed:
    harness: str
    round: int
    wall_s: float
    rows: list[dict[str, Any]]
    detail: dict[str, float] = field(default_factory=dict)


def machine() -> dict[str, str]:
    info = Path("/proc/cpuinfo").read_text(encoding="utf-8") if Path("/proc/cpuinfo").exists() else ""
    model = next(
        (line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), ""
    )
    flags = next(
        (line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), []
    )
    features = [name for name in ("avx2", "avx512f", "amx_tile", "amx_int8", "amx_bf16") if name in flags]
    return {
        "cpu": model or platform.processor() or "unknown",
        "cores": str(os.cpu_count()),
        "features": ", ".join(features) or "none of AVX2/AVX512/AMX",
    }


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text(encoding="utf-8").split()[:3])


def lib_digest(python: str) -> str:
    """SHA-256 of the ``libllama.so`` that ``python``'s llama_cpp loads."""
    found = subprocess.run(
        [python, "-c", "import llama_cpp, pathlib; print(pathlib.Path(llama_cpp.__file__).parent)"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    library = Path(found.stdout.strip()) / "lib" / "libllama.so"
    return hashlib.sha256(library.read_bytes()).hexdigest()


def grid_config(args: argparse.Namespace) -> dict[str, Any]:
    data: dict[str, Any] = read_config_file(CONFIG)
    if args.lengths:
        data["lengths"] = [int(value) for value in args.lengths.split(",")]
    if args.depths:
        # a fraction as a number (the config reads a string as a named position or @N)
        data["depths"] = [_depth(value) for value in args.depths.split(",")]
    if args.limit:
        data["limit"] = args.limit
    if args.tasks:
        data["tasks"] = args.tasks.split(",")
    if args.score:
        data["score"] = args.score
    data["cache"] = {"enabled": False}
    return data


def needle_cases(cases: list[Case]) -> list[dict[str, Any]]:
    out = []
    for case in cases:
        out.append(
            {
                "case_id": case.case_id,
                "needle": " ".join(evidence.text for evidence in case.evidence),
                "question": case.question,
                "answers": list(case.oracle.accepted()),
            }
        )
    return out


def run_rotscope(config: dict[str, Any], folder: Path, round_number: int) -> Timed:
    folder.mkdir(parents=True)
    path = folder / "experiment.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    rotscope = Path(sys.executable).with_name("rotscope")
    out = folder / "run"
    started = time.perf_counter()
    with (folder / "rotscope.log").open("w") as log:
        process = subprocess.run(
            [str(rotscope), "run", str(path), "--no-cache", "--out", str(out)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    wall = time.perf_counter() - started
    if not (out / "run.db").exists():
        raise SystemExit(
            f"rotscope run exited {process.returncode} with no run.db: see {folder / 'rotscope.log'}"
        )
    with sqlite3.connect(out / "run.db") as db:
        db.row_factory = sqlite3.Row
        rows = [dict(row) for row in db.execute("SELECT * FROM items ORDER BY plan_order")]
    return Timed("rotscope", round_number, wall, rows, {"exit": float(process.returncode)})


def run_needle(python: str, spec: dict[str, Any], folder: Path, round_number: int) -> Timed:
    work = folder / "work"
    work.mkdir(parents=True)
    spec_path, result_path = folder / "spec.json", folder / "result.json"
    spec_path.write_text(json.dumps({**spec, "workdir": str(work)}), encoding="utf-8")
    started = time.perf_counter()
    with (folder / "needle.log").open("w") as log:
        process = subprocess.run(
            [python, str(HARNESS), str(spec_path), str(result_path)], stdout=log, stderr=subprocess.STDOUT
        )
    wall = time.perf_counter() - started
    if process.returncode != 0:
        # the folder is a temporary one, gone when this exits: the log's end goes with the message
        tail = (folder / "needle.log").read_text(encoding="utf-8", errors="replace").splitlines()[-15:]
        ending = "\n".join(tail)
        raise SystemExit(f"needlehaystack exited {process.returncode}; the end of its log:\n{ending}")
    result = json.loads(result_path.read_text(encoding="utf-8"))
    detail = {key: float(result[key]) for key in ("import_s", "load_s", "calls_s")}
    return Timed("needlehaystack", round_number, wall, result["rows"], detail)


def interleaved(
    rounds: int, config: dict[str, Any], python: str, spec: dict[str, Any], folder: Path
) -> list[Timed]:
    timed: list[Timed] = []
    for number in range(1, rounds + 1):
        timed.append(run_rotscope(config, folder / f"rotscope-{number}", number))
        print(f"  round {number}: rotscope {timed[-1].wall_s:.1f} s", flush=True)
        timed.append(run_needle(python, spec, folder / f"needle-{number}", number))
        print(f"  round {number}: needlehaystack {timed[-1].wall_s:.1f} s", flush=True)
    return timed


def reference_outcomes(rows: list[dict[str, Any]]) -> tuple[int, int]:
    """(rows differing from examples/quick-v1.items.tsv, rows compared), by prompt digest."""
    import llama_cpp

    expected = {digest: outcome for _, digest, outcome in recorded()}
    by_id = {item_id: digest for item_id, digest, _ in recorded()}
    system = llama_cpp.llama_print_system_info().decode()
    for feature, changes in KERNEL_CHANGES.items():
        if feature in system:
            for item_id, outcome in changes.items():
                expected[by_id[item_id]] = outcome
    compared = [row for row in rows if row["prompt_digest"] in expected]
    return sum(row["outcome"] != expected[row["prompt_digest"]] for row in compared), len(compared)


def cell_key(case_id: str, length: int, depth: float) -> tuple[str, int, float]:
    return case_id, length, round(depth, 3)


def outcome_tables(rotscope: Timed, needle: Timed, cases: dict[str, Case]) -> list[str]:
    """Per (length, depth): each harness's correct answers to the same questions, needlehaystack's
    replies scored by rotscope's scorer (and by its own evaluator), and the cells where they agree."""
    ours = {
        cell_key(row["case_id"], row["length_target"], row["depth"]): row["outcome"] == "correct"
        for row in rotscope.rows
        if not row["control"]
    }
    theirs: dict[tuple[str, int, float], tuple[bool, int]] = {}
    for row in needle.rows:
        reply = Completion(text=row["response"] or "")
        correct = score(cases[row["case_id"]].oracle, reply).outcome == "correct"
        theirs[cell_key(row["case_id"], row["length"], row["depth"])] = (correct, int(row["score"]))
    by_cell: dict[tuple[int, float], list[tuple[bool, bool, int]]] = defaultdict(list)
    for key, (correct, own) in theirs.items():
        if key in ours:
            by_cell[(key[1], key[2])].append((ours[key], correct, own))
    lines = [
        "| length | depth | questions | rotscope correct | needlehaystack correct (rotscope's scorer) "
        "| needlehaystack's evaluator | same outcome |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    total = [0, 0, 0, 0, 0]
    for (length, depth), cells in sorted(by_cell.items()):
        counts = [
            len(cells),
            sum(a for a, _, _ in cells),
            sum(b for _, b, _ in cells),
            sum(c for _, _, c in cells),
            sum(a == b for a, b, _ in cells),
        ]
        total = [t + c for t, c in zip(total, counts, strict=True)]
        lines.append(f"| {length} | {depth:g} | " + " | ".join(str(c) for c in counts) + " |")
    lines.append("| all | | " + " | ".join(f"**{c}**" for c in total) + " |")
    return lines


def same_rounds(timed: list[Timed], harness: str) -> bool:
    """Whether every round of ``harness`` gave the same replies to the same cells."""
    replies = []
    for run in (t for t in timed if t.harness == harness):
        if harness == "rotscope":
            replies.append(sorted((r["prompt_digest"], r["response"] or "") for r in run.rows))
        else:
            replies.append(sorted((r["case_id"], r["length"], r["depth"], r["response"]) for r in run.rows))
    return all(r == replies[0] for r in replies)


def work_line(run: Timed) -> str:
    if run.harness == "rotscope":
        calls = len(run.rows)
        prompt = sum(r["usage_prompt_tokens"] or r["prompt_tokens"] for r in run.rows)
        generated = sum(r["usage_completion_tokens"] or 0 for r in run.rows)
        controls = sum(bool(r["control"]) for r in run.rows)
        tokens = f"{prompt:,} prompt tokens, {generated:,} new"
        return f"rotscope: {calls} calls ({controls} of them controls), {tokens}"
    prompt = sum(r["prompt_tokens"] or 0 for r in run.rows)
    generated = sum(r["completion_tokens"] or 0 for r in run.rows)
    return f"needlehaystack: {len(run.rows)} calls, {prompt:,} prompt tokens, {generated:,} new"


def mode_section(mode: str, timed: list[Timed], cases: dict[str, Case]) -> list[str]:
    title = {"inprocess": "In-process", "server": "Through the same llama.cpp server"}[mode]
    lines = [
        f"### {title}",
        "",
        "| round | rotscope (s) | needlehaystack (s) | ratio |",
        "|---:|---:|---:|---:|",
    ]
    ours = [t for t in timed if t.harness == "rotscope"]
    theirs = [t for t in timed if t.harness == "needlehaystack"]
    for a, b in zip(ours, theirs, strict=True):
        lines.append(f"| {a.round} | {a.wall_s:.1f} | {b.wall_s:.1f} | {a.wall_s / b.wall_s:.2f}x |")
    ours_s, theirs_s = sum(t.wall_s for t in ours), sum(t.wall_s for t in theirs)
    ratio = ours_s / theirs_s
    lines += [
        f"| all | {ours_s:.1f} | {theirs_s:.1f} | **{ratio:.2f}x** |",
        "",
        f"rotscope's time over needlehaystack's, all rounds: **{ratio:.2f}x** (issue 53's target: "
        f"<= {TARGETS[mode]}x).",
        "",
        f"- work, round 1: {work_line(ours[0])}; {work_line(theirs[0])}",
        "- needlehaystack's own split, per round (import, model or tokenizer load, the tester's calls): "
        + "; ".join(
            f"{t.detail['import_s']:.1f} + {t.detail['load_s']:.1f} + {t.detail['calls_s']:.1f} s"
            for t in theirs
        ),
        f"- each harness's rounds gave the same replies: rotscope {same_rounds(timed, 'rotscope')}, "
        f"needlehaystack {same_rounds(timed, 'needlehaystack')}",
    ]
    exits = {int(t.detail["exit"]) for t in ours}
    if exits != {0}:
        lines.append(f"- rotscope run's exit codes: {sorted(exits)}")
    differ, compared = reference_outcomes(ours[0].rows)
    lines += [
        f"- rotscope's outcomes against examples/quick-v1.items.tsv (allow-list applied): {differ} differ "
        f"of {compared} compared ({len(ours[0].rows) - compared} rows outside the recorded grid)",
        "",
        "Outcomes on the same questions, round 1:",
        "",
        *outcome_tables(ours[0], theirs[0], cases),
        "",
    ]
    return lines


def _depth(value: str) -> float | str:
    try:
        return float(value)
    except ValueError:
        return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=["both", "inprocess", "server"], default="both")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--lengths", help="comma-separated, instead of quick-v1's")
    parser.add_argument("--depths", help="comma-separated positions, instead of quick-v1's")
    parser.add_argument("--limit", type=int, help="cases per task, instead of quick-v1's 3")
    parser.add_argument("--tasks", help="comma-separated, instead of quick-v1's niah,nolima")
    parser.add_argument(
        "--score",
        choices=["accuracy", "likelihood", "both"],
        help="what rotscope keeps (its default: both, each gold answer's likelihood read as well)",
    )
    parser.add_argument("--needle-python", default="/tmp/needle-venv/bin/python")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs, run folders)")
    parser.add_argument("--label", default="", help="a line under the results' heading")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    model = bundled_model_path()
    ours_lib, theirs_lib = lib_digest(sys.executable), lib_digest(args.needle_python)
    if ours_lib != theirs_lib:
        raise SystemExit(
            f"different llama.cpp builds: {ours_lib[:12]} here, {theirs_lib[:12]} in needlehaystack's"
        )
    data = grid_config(args)
    config = build_config(data)
    plan = build_plan(config, create_backend(config))
    cases = {item.case.case_id: item.case for item in plan.items if not item.case.control}
    lengths = sorted({item.layout.length_tokens for item in plan.items})
    depths = sorted({round(item.layout.depth * 100) for item in plan.items if not item.case.control})
    settings = LlamaCppBackend(model, LlamaCppOptions(**data["llamacpp"])).resolve_settings()
    spec = {
        "model": str(model),
        "n_ctx": N_CTX,
        "n_batch": settings.n_batch,
        "threads": settings.threads,
        "max_tokens": data["generation"]["max_tokens"],
        "lengths": lengths,
        "depths": depths,
        "cases": needle_cases(list(cases.values())),
    }
    print(
        f"grid: {len(cases)} cases x lengths {lengths} x depths {depths} percent; "
        f"{len(plan.items)} rotscope calls"
    )
    before = load_average()
    sections: list[str] = []
    modes = ["inprocess", "server"] if args.mode == "both" else [args.mode]
    # the work folder is removed at the end unless --keep names it for a look at the logs
    kept = contextlib.nullcontext(tempfile.mkdtemp(prefix="needle-side-by-side-")) if args.keep else None
    with kept or tempfile.TemporaryDirectory(prefix="needle-side-by-side-") as temporary:
        folder = Path(temporary)
        for mode in modes:
            print(f"{mode}:", flush=True)
            if mode == "inprocess":
                timed = interleaved(
                    args.rounds, data, args.needle_python, {**spec, "mode": mode}, folder / mode
                )
            else:
                with served(model, folder / "server.log", n_ctx=N_CTX, threads=settings.threads) as base_url:
                    remote = {
                        "base_url": base_url,
                        "tokenizer": str(model),
                        "timeout_s": 600,
                        "params": {"repeat_penalty": 1.0},
                    }
                    served_data = {
                        **data,
                        "model": f"openai/{SERVED_NAME}",
                        "remote": {**data["remote"], **remote},
                    }
                    needle_spec = {**spec, "mode": mode, "base_url": base_url}
                    timed = interleaved(
                        args.rounds, served_data, args.needle_python, needle_spec, folder / mode
                    )
            sections += mode_section(mode, timed, cases)
    after = load_average()
    facts = machine()
    text = [
        "# needle_side_by_side",
        "",
        "rotscope beside needlehaystack 0.1.0 on the same grid, model file and server (issue 53): "
        "`python benchmarks/needle_side_by_side.py` (its docstring says what each harness is given and "
        "where their outcomes cannot agree). Wall times are whole processes, start to exit.",
        "",
        f"## {date.today().isoformat()}{': ' + args.label if args.label else ''}",
        "",
        f"- machine: {facts['cpu']}, {facts['cores']} cores, {facts['features']}; llama.cpp build "
        f"(libllama.so) {ours_lib[:12]} in both environments; {settings.threads} threads, n_batch "
        f"{settings.n_batch}",
        f"- grid: {', '.join(data['tasks'])}, {len(cases)} case(s), lengths {lengths}, "
        f"depths {depths} percent, "
        f"controls {data['controls']}, score {data.get('score') or 'both'}, max_tokens {spec['max_tokens']}, "
        f"{args.rounds} interleaved round(s) per mode",
        f"- load average (1, 5, 15 min) before: {before}; after: {after}",
        "",
        *sections,
    ]
    args.out.write_text("\n".join(text).rstrip() + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    try:
        main()
    except BadInput as error:  # a bad argument is one line and exit 2, as in rotscope's commands
        print(f"needle_side_by_side: {error}", file=sys.stderr)
        sys.exit(2)
