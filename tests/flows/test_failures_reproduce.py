"""A failure saved by ``rotscope cases RUN --failing`` re-renders the prompt that failed: a failing
latent case (its anchor, superseded revision and fraction each at its own depth) and a failing
competitive case (its needle and each decoy at its own depth), saved and run again as a case file
under another seed, other lengths and one haystack variant, give every failing layout's prompt
digest again, in a text corpus and in a generated filler that avoids the run's guarded values. The
same lines without their pieces' depths and haystack do not; a haystack that is not the one a case
failed in is said in one line, and the run goes on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from rotscope.store import RunStore
from tests.support.cli_helpers import invoke, nonsense_corpus

Key = tuple[str, int, float | str]


def _filler(tmp_path: Path, kind: str, **fields: Any) -> dict[str, Any]:
    if kind == "readinglog":
        return {"kind": "readinglog", **fields}
    return {"kind": "text", "glob": str(nonsense_corpus(tmp_path / "corpus") / "*.txt"), **fields}


def _run(tmp_path: Path, name: str, **fields: Any) -> dict[Key, str]:
    """The run's scored rows' prompt digests by (case id as a line names it, length, position),
    failing rows only where ``failing``."""
    data: dict[str, Any] = {
        "model": "fake/lexical-recent",
        "lengths": [300, 600],
        "depths": [0.1, 0.9],
        "limit": 2,
        **fields,
    }
    config = tmp_path / f"{name}.yaml"
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    result = invoke("run", config, "--out", tmp_path / name)
    assert result.exit_code == 0, result.output
    with RunStore.read(tmp_path / name) as store:
        rows = [dict(row) for row in store.rows()]
    return {_key(row): row["prompt_digest"] for row in rows if row["status"] == "ok"}


def _key(row: dict[str, Any]) -> Key:
    position = row["position"] if row["position"] is not None else float(row["depth"])
    case_id = str(row["case_id"]).replace("~absent", ".absent")
    return case_id, int(row["length_target"]), 0.0 if position == "absent" else position


def _failing(tmp_path: Path, name: str) -> dict[Key, str]:
    with RunStore.read(tmp_path / name) as store:
        rows = [dict(row) for row in store.rows()]
    return {
        _key(row): row["prompt_digest"]
        for row in rows
        if row["status"] == "ok" and row["outcome"] != "correct"
    }


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _save(tmp_path: Path, run: str) -> list[dict[str, Any]]:
    saved = tmp_path / "saved.jsonl"
    result = invoke("cases", tmp_path / run, "--failing", "-o", saved)
    assert result.exit_code == 0, result.output
    assert "not exact" not in result.output
    return _lines(saved)


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("filler", ["text", "readinglog"])
def test_saved_latent_and_competitive_failures_render_the_failing_prompts(
    tmp_path: Path, filler: str
) -> None:
    _run(
        tmp_path,
        "first",
        tasks=["latent", "competitive"],
        seed=7,
        filler=_filler(tmp_path, filler, variants=2),
    )
    failed = _failing(tmp_path, "first")
    lines = _save(tmp_path, "first")
    families = {line["slices"]["family"] for line in lines}
    assert families == {"latent", "competitive"}, failed

    for line in lines:
        pieces = {piece["id"] for piece in [*line.get("documents", []), *line.get("distractors", [])]}
        assert line["haystack"]["seed"] == 7 and line["haystack"]["variants"] == 2
        assert all(set(pin.get("depths", {})) == pieces for pin in line["pin"]), line["pin"]
    competitive = next(
        line for line in lines if line["slices"]["family"] == "competitive" and line["pin"][0].get("depths")
    )
    decoys = [piece["id"] for piece in competitive["distractors"]]
    deepest = max(competitive["pin"], key=lambda pin: pin["length"])["depths"]
    assert len(decoys) == 3 and len({deepest[decoy] for decoy in decoys} | {deepest["needle"]}) > 1

    saved = _write(tmp_path / "saved.jsonl", lines)
    again = _run(
        tmp_path,
        "again",
        tasks=["cases"],
        cases=str(saved),
        controls=False,
        limit=None,
        lengths=[300],
        seed=3,
        filler=_filler(tmp_path, filler, variants=1),
    )
    assert {key: again.get(key) for key in failed} == failed
    latent = [key for key in failed if key[0].startswith("latent") and not key[0].endswith(".absent")]
    assert latent and any(key[0].startswith("competitive") for key in failed)

    # without the pieces' depths and the haystack, the same lines render other prompts
    bare = [
        {**line, "pin": [{k: v for k, v in pin.items() if k != "depths"} for pin in line["pin"]]}
        for line in lines
    ]
    bare = [{k: v for k, v in line.items() if k != "haystack"} for line in bare]
    plain = _run(
        tmp_path,
        "plain",
        tasks=["cases"],
        cases=str(_write(tmp_path / "bare.jsonl", bare)),
        controls=False,
        limit=None,
        lengths=[300],
        seed=3,
        filler=_filler(tmp_path, filler, variants=1),
    )
    assert sum(plain.get(key) != digest for key, digest in failed.items()) >= len(latent)


def test_a_saved_case_in_another_haystack_is_said_and_runs(tmp_path: Path) -> None:
    _run(tmp_path, "first", tasks=["competitive"], filler=_filler(tmp_path, "text"))
    failed = _failing(tmp_path, "first")
    saved = _write(tmp_path / "saved.jsonl", _save(tmp_path, "first"))
    other = nonsense_corpus(tmp_path / "other-corpus", seed=5)
    config = tmp_path / "other.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "model": "fake/lexical-recent",
                "tasks": ["cases"],
                "cases": str(saved),
                "lengths": [300],
                "controls": False,
                "filler": {"kind": "text", "glob": str(other / "*.txt")},
            }
        ),
        encoding="utf-8",
    )
    result = invoke("run", config, "--out", tmp_path / "other")
    assert result.exit_code == 0, result.output
    assert "is not the one it failed in" in result.output and "differ from the failure's" in result.output
    with RunStore.read(tmp_path / "other") as store:
        digests = {_key(dict(row)): row["prompt_digest"] for row in store.rows()}
    assert failed and all(digests.get(key) != digest for key, digest in failed.items())
