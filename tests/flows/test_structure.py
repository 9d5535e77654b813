"""The restructured house keeps its promises: components register from outside the package as the
built-ins do, unknown names are one line naming the experiment key, a position is parsed once and
read back from a stored row as the same value, one row type serves every reader, and the plan's
assembler digest follows what the code does, not where it lives or how it is written."""

from __future__ import annotations

import ast
import inspect
import io
import random
import re
import tokenize
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import rotscope
import rotscope.analysis.summary
import rotscope.gate.pairing
import rotscope.prompt.builder
import rotscope.report.export
import rotscope.report.html
import rotscope.rows
import rotscope.store
from rotscope.backends import BACKENDS, create_backend, register_backend, split_model
from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.cli import app
from rotscope.config.experiment import ExperimentConfig, FillerConfig, build_config
from rotscope.errors import BadInput
from rotscope.execution.workflows.runner import run_experiment
from rotscope.filler import FILLER_SOURCES, Document, documents, register_filler
from rotscope.plan.digests import assembler_digest, code_fingerprint, prompt_shaping_sources
from rotscope.plan.workitems import build_plan
from rotscope.position import NAMED_POSITIONS, Position
from rotscope.rows import Row
from rotscope.store import ITEM_COLUMNS, RunStore
from rotscope.tasks import TASKS
from rotscope.tokenizers.local import FakeTokenizer
from rotscope.types import Capabilities, Completion, GenerateRequest

OUTSIDE_PROVIDER = "outside"
OUTSIDE_FILLER = "outside-notes"
OUTSIDE_HINT = "outside/NAME: a test module's own backend, registered from outside the package"
BUILTIN_PROVIDERS = ("llamacpp", "fake", "fake-remote", "openai", "anthropic", "gemini", "cmd", "hf")
SRC = Path(rotscope.__file__).resolve().parent


# --- 1. a backend and a filler source registered from outside the package ---------------------------


class OutsideBackend:
    """The least a backend needs: a tokenizer, capabilities, and a deterministic answer rule (the
    context line sharing the most words with the question, as the lexical fake does)."""

    context_window = 100_000
    capabilities = Capabilities(local=True, exact_ids=True, max_concurrency=1)

    def __init__(self, name: str) -> None:
        self.model_id = f"{OUTSIDE_PROVIDER}/{name}"
        self._tokenizer = FakeTokenizer()
        self._respond = lexical_responder()

    def tokenizer(self) -> FakeTokenizer:
        return self._tokenizer

    def reserve(self, max_prompt_tokens: int, max_new_tokens: int) -> None:
        return None

    async def generate(self, request: GenerateRequest) -> Completion:
        text = self._respond(request)
        return Completion(
            text=text, prompt_tokens=len(request.token_ids), completion_tokens=self._tokenizer.count(text)
        )

    def describe(self) -> dict[str, Any]:
        return {"backend": OUTSIDE_PROVIDER, "model": self.model_id, "tokenizer": self._tokenizer.name}

    def close(self) -> None:
        return None


def outside_backend(name: str, config: ExperimentConfig) -> OutsideBackend:
    return OutsideBackend(name)


NOTE_WORDS = (
    "amber basalt cedar delta ember fjord granite heron indigo juniper kestrel lichen marble nettle "
    "obsidian pebble quartz reed sorrel tundra umber willow yarrow zephyr"
).split()


def outside_notes(config: FillerConfig, seed: int, avoid: frozenset[str] = frozenset()) -> Iterator[Document]:
    """Generated field notes, the same for the same seed, with no line mentioning a guarded string."""
    rng = random.Random(f"{OUTSIDE_FILLER}:{seed}")
    guarded = [value.lower() for value in avoid]
    for number in range(int(config.options.get("notes", 6))):
        lines = []
        while len(lines) < 30:
            line = " ".join(rng.choice(NOTE_WORDS) for _ in range(rng.randint(5, 11))).capitalize() + "."
            if not any(value in line.lower() for value in guarded):
                lines.append(line)
        yield Document(f"note-{number}", "\n".join(lines))


def describe_outside_notes(config: FillerConfig) -> str:
    return f"{OUTSIDE_FILLER}:{config.options.get('notes', 6)} generated notes"


def register_outside() -> None:
    """Register both components as an outside package would; running it again replaces them."""
    register_backend(OUTSIDE_PROVIDER, hint=OUTSIDE_HINT, models=lambda: [f"{OUTSIDE_PROVIDER}/any"])(
        outside_backend
    )
    register_filler(OUTSIDE_FILLER, describe=describe_outside_notes)(outside_notes)


def test_outside_backend_and_filler_run_end_to_end(tmp_path: Path) -> None:
    register_outside()
    register_outside()  # a second registration (a second run of this test) simply replaces
    assert BACKENDS.get(OUTSIDE_PROVIDER).factory is outside_backend
    assert FILLER_SOURCES.get(OUTSIDE_FILLER).documents is outside_notes
    assert split_model("outside/any") == (OUTSIDE_PROVIDER, "any")

    filler = FillerConfig(kind=OUTSIDE_FILLER)
    first, again, other = (list(documents(filler, seed)) for seed in (7, 7, 8))
    assert first == again and first != other

    config = build_config(
        {
            "model": "outside/any",
            "filler": {"kind": OUTSIDE_FILLER},
            "tasks": ["niah"],
            "limit": 2,
            "lengths": [256],
            "depths": [0.0, 1.0],
        }
    )
    run = run_experiment(config, run_dir=tmp_path / "run")

    with RunStore.open_existing(run) as store:
        rows = store.rows()
    planned = build_plan(config, OutsideBackend("any"))
    assert planned.rejected == []
    assert sorted(row["item_id"] for row in rows) == sorted(item.item_id for item in planned.items)
    assert len([row for row in rows if row["control"] == 0]) == config.limit * len(config.depths)
    assert [row["status"] for row in rows] == ["ok"] * len(rows), [row["error"] for row in rows]
    assert {row["model"] for row in rows} == {"outside/any"}
    assert {row["backend"] for row in rows} == {OUTSIDE_PROVIDER}

    summary = rotscope.load_summary(run).model_dump()
    assert summary["corpus"]["source"] == describe_outside_notes(config.filler)
    assert summary["corpus"]["source"].startswith(f"{OUTSIDE_FILLER}:")
    assert summary["backend"]["model"] == "outside/any"


def test_models_lists_outside_and_builtin_providers_with_hints() -> None:
    register_outside()
    result = CliRunner().invoke(app, ["models"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    for provider in (OUTSIDE_PROVIDER, *BUILTIN_PROVIDERS):
        assert provider in lines, f"{provider} not listed:\n{result.output}"
        hint = lines[lines.index(provider) + 1]
        assert hint.strip(), f"{provider} has an empty hint line"
        assert hint == f"  {BACKENDS.get(provider).hint}"
    assert lines[lines.index(OUTSIDE_PROVIDER) + 1] == f"  {OUTSIDE_HINT}"
    assert "  outside/any" in lines


# --- 2. unknown names are one line naming the key ---------------------------------------------------


def _one_line_naming(error: pytest.ExceptionInfo[BadInput], key: str, known: list[str]) -> str:
    message = str(error.value)
    assert "\n" not in message, message
    assert message.startswith(f"{key}:"), message
    for name in known:
        assert name in message, f"{name!r} not listed in {message!r}"
    return message


def _fake() -> FakeBackend:
    return FakeBackend("lexical", lexical_responder())


def test_unknown_filler_kind_names_filler_kind() -> None:
    config = build_config({"model": "fake/lexical", "filler": {"kind": "no-such-filler"}, "lengths": [256]})
    with pytest.raises(BadInput) as error:
        build_plan(config, _fake())
    known = FILLER_SOURCES.names()
    assert {"code", "text", "readinglog"} <= set(known)
    assert "no-such-filler" in _one_line_naming(error, "filler.kind", known)


def test_unknown_task_names_tasks() -> None:
    config = build_config({"model": "fake/lexical", "tasks": ["no-such-task"], "lengths": [256]})
    with pytest.raises(BadInput) as error:
        build_plan(config, _fake())
    known = TASKS.names()
    assert {"niah", "nolima"} <= set(known)
    assert "no-such-task" in _one_line_naming(error, "tasks", known)


def test_unknown_provider_names_model() -> None:
    config = build_config({"model": "no-such-provider/x", "lengths": [256]})
    with pytest.raises(BadInput) as error:
        create_backend(config)
    known = BACKENDS.names()
    assert set(BUILTIN_PROVIDERS) <= set(known)
    assert "no-such-provider" in _one_line_naming(error, "model", known)


# --- 3. a position is parsed once ------------------------------------------------------------------


@pytest.mark.parametrize("value", [0.0, 0.37, 1.0, *NAMED_POSITIONS, "@0", "@128"])
def test_position_round_trips_through_its_stored_form(value: float | str) -> None:
    position = Position.parse(value)
    if position.offset_tokens is not None:
        depths = [0.0, 0.123, 1.0]  # an offset's depth depends on the length: any will do
    else:
        assert position.fraction is not None
        depths = [position.fraction]  # what the layout stores for it
    for depth in depths:
        assert Position.from_stored(position.stored, depth) == position


def test_a_run_stores_positions_that_parse_back_to_the_config(tmp_path: Path, corpus: Path) -> None:
    config = build_config(
        {
            "model": "fake/lexical",
            "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
            "tasks": ["niah"],
            "limit": 2,
            "lengths": [256],
            "depths": [0.0, "midpoint", "@40"],
        }
    )
    run = run_experiment(config, run_dir=tmp_path / "run")
    with RunStore.open_existing(run) as store:
        probes = [row for row in store.rows() if row["control"] == 0]
    assert probes
    read_back = [Position.from_stored(row["position"], row["depth"]) for row in probes]
    wanted = config.parsed_positions()
    assert len(wanted) == 3
    assert set(read_back) == set(wanted)
    assert all(position in wanted for position in read_back)


# --- 4. one row type -------------------------------------------------------------------------------


def test_store_columns_are_the_row_type() -> None:
    assert len(ITEM_COLUMNS) == len(set(ITEM_COLUMNS))
    assert set(ITEM_COLUMNS) == set(Row.__annotations__) - {"score_value"}  # set by on_score only


def test_readers_use_the_one_row_type() -> None:
    for module in (rotscope.analysis.summary, rotscope.gate.pairing, rotscope.report.export):
        assert module.Row is rotscope.rows.Row, module.__name__
    # the HTML report reads its rows from the store, which gives back that Row
    assert rotscope.report.html.RunStore is rotscope.store.RunStore
    assert "RunStore" in inspect.getsource(rotscope.report.html)
    assert typing.get_type_hints(RunStore.rows)["return"] == list[Row]


def _defines_row(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "Row":
            return True
        type_alias = getattr(ast, "TypeAlias", None)  # ``type Row = ...`` (Python 3.12)
        if type_alias is not None and isinstance(node, type_alias) and node.name.id == "Row":
            return True
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(target, ast.Name) and target.id == "Row" for target in targets):
            return True
    return False


def test_no_module_but_rows_defines_a_row() -> None:
    files = sorted(SRC.rglob("*.py"))
    assert SRC / "rows.py" in files and len(files) > 20
    pattern = re.compile(r"^\s*(class\s+Row\b|Row\s*(:[^=]*)?=)", re.MULTILINE)
    defining = []
    for path in files:
        source = path.read_text(encoding="utf-8")
        if pattern.search(source) or _defines_row(ast.parse(source)):
            defining.append(str(path.relative_to(SRC)))
    assert defining == ["rows.py"]


# --- 5. the plan digest follows code, not files ----------------------------------------------------

SMALL = '''"""A small module."""

import os
from rotscope.layout import PromptBuilder


def build(config, size):
    """Make a builder."""
    # the size is in tokens
    total = size + 1
    return PromptBuilder(config, os.sep, total)
'''

SMALL_RESTYLED = '''"""The same module, documented and laid out otherwise."""
from rotscope.prompt.builder import PromptBuilder  # moved
import sys, os


def build(config,
          size):
    total = (size + 1)   # still tokens
    return PromptBuilder(
        config, os.sep, total,
    )
'''

SMALL_EDITED = SMALL.replace("size + 1", "size + 2")


def _with_comments(source: str) -> str:
    """Comment lines before every definition, and comments stripped again from a copy of it."""
    return re.sub(r"^(\s*)(def |class |async def )", r"\1# a remark\n\1\2", source, flags=re.M)


def _without_comments(source: str) -> str:
    tokens = [token for token in tokenize.generate_tokens(io.StringIO(source).readline)]
    return tokenize.untokenize(token for token in tokens if token.type != tokenize.COMMENT)


def _edit_one_statement(source: str) -> str:
    """The source with its first integer constant outside a docstring raised by one."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            node.value += 1
            return ast.unparse(tree)
    raise AssertionError("no integer constant to edit")


def _moved(source: str) -> str:
    """Imports rewritten as moving the modules would rewrite them."""
    return re.sub(r"^from rotscope\.(\S+) import", r"from rotscope.moved.\1 import", source, flags=re.M)


def test_fingerprint_ignores_imports_docstrings_comments_and_layout() -> None:
    assert code_fingerprint(SMALL) == code_fingerprint(SMALL_RESTYLED)
    assert code_fingerprint(SMALL) != code_fingerprint(SMALL_EDITED)
    assert code_fingerprint(SMALL) != code_fingerprint(SMALL.replace("total = size", "total = 2 * size"))


def test_fingerprint_of_a_real_module() -> None:
    source = inspect.getsource(rotscope.prompt.builder)
    print_ = code_fingerprint(source)
    docstring = ast.get_docstring(ast.parse(source), clean=False)
    assert docstring and docstring in source
    variants = {
        "imports": _moved(source),
        "docstring": source.replace(docstring, "Documented otherwise.", 1),
        "comments added": _with_comments(source),
        "comments removed": _without_comments(_with_comments(source)),
        "layout": ast.unparse(ast.parse(source)),
    }
    for what, variant in variants.items():
        assert variant != source, what
        assert code_fingerprint(variant) == print_, what
    assert code_fingerprint(_edit_one_statement(source)) != print_


def test_assembler_digest_follows_code_not_files() -> None:
    sources = [*prompt_shaping_sources(), SMALL]
    digest = assembler_digest(sources)
    assert assembler_digest(list(reversed(sources))) == digest
    assert assembler_digest(random.Random(3).sample(sources, len(sources))) == digest
    # moving rotscope.layout to rotscope.prompt.builder rewrites the imports of the modules using it
    moved = [
        source.replace("from rotscope.layout import", "from rotscope.prompt.builder import")
        for source in sources
    ]
    assert moved != sources
    assert assembler_digest(moved) == digest
    assert assembler_digest([_moved(source) for source in sources]) == digest
    # one statement of one module edited
    assert assembler_digest([*sources[:-1], SMALL_EDITED]) != digest
    real = inspect.getsource(rotscope.prompt.builder)
    index = sources.index(real)
    edited = [*sources[:index], _edit_one_statement(real), *sources[index + 1 :]]
    assert assembler_digest(edited) != digest
