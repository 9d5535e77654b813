"""Perturb a Python code base so no model has it memorised: rename identifiers, change number
literals and inject statements with a concrete syntax tree (libcst), which keeps every comment and
all formatting of the code it does not change.

The rename map (contract)::

    paths: ["core/cache"]                  # optional: only files under these sub-paths are rewritten
    renames: {BaseCache: BenderCache, timeout: nibbler_ttl}
    literals: {"300": 719}                 # number literals replaced in the rewritten files
    inject: [{file: core/cache/backends/base.py, after_class: BenderCache, code: "_fry_retry = 7"}]

A rename applies to every identifier spelled exactly like the old name (classes, functions,
variables, attributes, parameters, keyword arguments, imported names) and to every string literal
whose whole value is the old name (dict keys such as ``"timeout"``). A literal's value may also be
a list of rules tried in order, ``{value: 417, line_contains: max_entries}``, for a number that must
change differently on different lines; a rule without ``line_contains`` takes every other
occurrence. ``after_class`` appends the code to the end of that class's body (a class attribute or
method); ``after_function`` inserts it right after the function, at the function's own level;
``after_line`` inserts it right after the one simple statement (an assignment, a call, a return...)
whose text, as rewritten by the renames and literals, contains the given text, in the same block
and at its indentation (a value planted beside a given line, as ``examples/perturbed-django.map.yaml``
plants the study's fake needles); with none of them it goes at the end of the module. An anchor may
name the class or function before or after its rename. Every rename, literal rule and injection must
apply at least once, and an ``after_line`` exactly once, or nothing is written.
"""

from __future__ import annotations

import ast
import keyword
import shutil
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from rotscope._util.strict_yaml import read_yaml
from rotscope.errors import BadInput

_SKIPPED_DIRECTORIES = {"__pycache__"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LiteralRule(_Strict):
    value: int | float
    line_contains: str | None = None


class Injection(_Strict):
    file: str
    after_class: str | None = None
    after_function: str | None = None
    after_line: str | None = Field(default=None, min_length=1)
    code: str

    @model_validator(mode="after")
    def _one_anchor(self) -> Injection:
        if sum(anchor is not None for anchor in (self.after_class, self.after_function, self.after_line)) > 1:
            raise ValueError("give one of after_class, after_function, after_line")
        try:
            cst.parse_module(self.code)
        except cst.ParserSyntaxError:
            raise ValueError(f"code {self.code!r} is not valid Python") from None
        return self

    def label(self) -> str:
        anchor = (
            f"after_class {self.after_class}"
            if self.after_class
            else f"after_function {self.after_function}"
            if self.after_function
            else f"after_line {self.after_line!r}"
            if self.after_line
            else "at the end"
        )
        return f"{self.file} {anchor}"


def _number(text: str) -> int | float:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        value = None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{text!r} is not a number literal")
    return value


class PerturbMap(_Strict):
    paths: list[str] | None = None
    renames: dict[str, str] = Field(default_factory=dict)
    literals: dict[str, int | float | list[LiteralRule]] = Field(default_factory=dict)
    inject: list[Injection] = Field(default_factory=list)

    @field_validator("renames")
    @classmethod
    def _identifiers(cls, renames: dict[str, str]) -> dict[str, str]:
        for name in (*renames, *renames.values()):
            if not name.isidentifier() or keyword.iskeyword(name):
                raise ValueError(f"{name!r} is not a Python identifier")
        return renames

    @field_validator("literals", mode="before")
    @classmethod
    def _keys_as_text(cls, literals: object) -> object:
        """``literals: {300: 719}`` (an unquoted YAML key) means the same as ``{"300": 719}``."""
        if isinstance(literals, dict):
            return {str(key): value for key, value in literals.items()}
        return literals

    @field_validator("literals")
    @classmethod
    def _numbers(
        cls, literals: dict[str, int | float | list[LiteralRule]]
    ) -> dict[str, int | float | list[LiteralRule]]:
        for key, rules in literals.items():
            _number(key)
            if isinstance(rules, list) and not rules:
                raise ValueError(f"{key!r} has an empty list of rules")
        return literals

    def rules(self) -> dict[tuple[str, int | float], list[tuple[str, LiteralRule]]]:
        """(type name, old value) -> its (label, rule) pairs in the order they are tried: ``300``
        never matches ``300.0``."""
        found: dict[tuple[str, int | float], list[tuple[str, LiteralRule]]] = {}
        for key, rules in self.literals.items():
            listed = rules if isinstance(rules, list) else [LiteralRule(value=rules)]
            old = _number(key)
            found[(type(old).__name__, old)] = [
                (
                    f"{key} -> {rule.value}"
                    + (f" (line_contains {rule.line_contains!r})" if rule.line_contains else ""),
                    rule,
                )
                for rule in listed
            ]
        return found


def load_map(path: Path) -> PerturbMap:
    """Read and validate a rename map; anything wrong is ``BadInput`` naming the file and key."""
    if not path.is_file():
        raise BadInput(f"{path}: rename map not found")
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise BadInput(f"{path}: the rename map must be a mapping with paths, renames, literals, inject")
    try:
        return PerturbMap.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        if first["type"] == "extra_forbidden":
            raise BadInput(f"{path}: unknown key {where!r}") from None
        message = first["msg"].removeprefix("Value error, ")
        raise BadInput(f"{path}: {where}: {message}") from None


@dataclass
class PerturbReport:
    """How often each rename, literal rule and injection applied, and what was written."""

    renames: Counter[str] = field(default_factory=Counter)
    literals: Counter[str] = field(default_factory=Counter)
    inject: Counter[str] = field(default_factory=Counter)
    rewritten: int = 0
    copied: int = 0

    def unmatched(self) -> list[str]:
        return [
            f"{section}.{label}"
            for section, counts in (
                ("renames", self.renames),
                ("literals", self.literals),
                ("inject", self.inject),
            )
            for label, count in counts.items()
            if count == 0
        ]


class _Rewriter(cst.CSTTransformer):
    """Renames names and whole-value strings; replaces number literals by their rules."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, spec: PerturbMap, lines: Sequence[str], report: PerturbReport) -> None:
        super().__init__()
        self.renames = spec.renames
        self.rules = spec.rules()
        self.lines = lines
        self.report = report

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        new = self.renames.get(updated_node.value)
        if new is None:
            return updated_node
        self.report.renames[updated_node.value] += 1
        return updated_node.with_changes(value=new)

    def leave_SimpleString(
        self, original_node: cst.SimpleString, updated_node: cst.SimpleString
    ) -> cst.SimpleString:
        value = updated_node.evaluated_value
        if not isinstance(value, str) or value not in self.renames:
            return updated_node
        self.report.renames[value] += 1
        prefix, quote = updated_node.prefix, updated_node.quote
        return updated_node.with_changes(value=f"{prefix}{quote}{self.renames[value]}{quote}")

    def _replace(self, original: cst.Integer | cst.Float, value: int | float) -> str | None:
        rules = self.rules.get((type(value).__name__, value))
        if rules is None:
            return None
        line = self.lines[self.get_metadata(PositionProvider, original).start.line - 1]
        for label, rule in rules:
            if rule.line_contains is None or rule.line_contains in line:
                self.report.literals[label] += 1
                return repr(rule.value)
        return None

    def leave_Integer(self, original_node: cst.Integer, updated_node: cst.Integer) -> cst.Integer:
        new = self._replace(original_node, updated_node.evaluated_value)
        return updated_node if new is None else updated_node.with_changes(value=new)

    def leave_Float(self, original_node: cst.Float, updated_node: cst.Float) -> cst.Float:
        new = self._replace(original_node, updated_node.evaluated_value)
        return updated_node if new is None else updated_node.with_changes(value=new)


_EMPTY = cst.Module(body=[])
"""Renders one statement's code (``code_for_node``) for ``after_line``."""


class _Injector(cst.CSTTransformer):
    """Adds the statements of each injection of one file at its anchor."""

    def __init__(
        self, injections: Sequence[Injection], renames: dict[str, str], report: PerturbReport
    ) -> None:
        super().__init__()
        self.injections = injections
        self.renames = renames
        self.report = report

    def _named(self, wanted: str | None, name: str) -> bool:
        return wanted is not None and name in (wanted, self.renames.get(wanted))

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        added: list[cst.BaseStatement] = []
        for injection in self.injections:
            if self._named(injection.after_class, updated_node.name.value):
                added.extend(cst.parse_module(injection.code).body)
                self.report.inject[injection.label()] += 1
        if not added or not isinstance(updated_node.body, cst.IndentedBlock):
            return updated_node
        return updated_node.with_changes(
            body=updated_node.body.with_changes(body=[*updated_node.body.body, *added])
        )

    def _after_statements(self, body: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """``body`` with the code of each ``after_function`` and ``after_line`` injection after its
        anchor."""
        statements: list[cst.BaseStatement] = []
        for statement in body:
            statements.append(statement)
            if isinstance(statement, cst.FunctionDef):
                anchored = [i for i in self.injections if self._named(i.after_function, statement.name.value)]
            elif isinstance(statement, cst.SimpleStatementLine):
                text = _EMPTY.code_for_node(statement)
                anchored = [i for i in self.injections if i.after_line is not None and i.after_line in text]
            else:
                continue
            for injection in anchored:
                statements.extend(cst.parse_module(injection.code).body)
                self.report.inject[injection.label()] += 1
        return statements

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        return updated_node.with_changes(body=self._after_statements(updated_node.body))

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body = self._after_statements(updated_node.body)
        for injection in self.injections:
            if (
                injection.after_class is None
                and injection.after_function is None
                and injection.after_line is None
            ):
                body.extend(cst.parse_module(injection.code).body)
                self.report.inject[injection.label()] += 1
        return updated_node.with_changes(body=body)


def rewrite_source(
    source: str,
    spec: PerturbMap,
    report: PerturbReport,
    injections: Sequence[Injection] = (),
    name: str = "<source>",
) -> str:
    """One module rewritten by the map; counts go to ``report``. Raises ``BadInput`` when the
    source does not parse or the result does not compile."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as error:
        raise BadInput(f"{name}: libcst cannot parse it (line {error.raw_line}): {error.message}") from None
    rewritten = MetadataWrapper(module).visit(_Rewriter(spec, source.split("\n"), report))
    if injections:
        rewritten = rewritten.visit(_Injector(injections, spec.renames, report))
    code = rewritten.code
    try:
        compile(code, name, "exec", dont_inherit=True)
    except SyntaxError as error:
        raise BadInput(
            f"{name}: the rewritten code does not compile (line {error.lineno}): {error.msg}"
        ) from None
    return code


def _selected(relative: str, paths: Sequence[str] | None) -> bool:
    if paths is None:
        return True
    return any(relative == path or relative.startswith(path.rstrip("/") + "/") for path in paths)


def _files(root: Path) -> list[Path]:
    return sorted(
        path
        for path in root.rglob("*")
        if path.is_file() and not _SKIPPED_DIRECTORIES.intersection(path.relative_to(root).parts)
    )


def perturb_tree(source: Path, spec: PerturbMap, out: Path, *, map_name: str = "rename map") -> PerturbReport:
    """Write ``source`` to ``out`` with the map applied to the Python files under ``spec.paths``;
    every other file is copied byte for byte (``__pycache__`` folders are left out). Nothing is
    written when any rename, literal rule or injection matches nothing."""
    if not source.is_dir():
        raise BadInput(f"{source}: source folder not found")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise BadInput(f"{out}: output folder exists and is not empty")
    if out.resolve().is_relative_to(source.resolve()):
        raise BadInput(f"{out}: output folder is inside the source folder {source}")
    for sub_path in spec.paths or ():
        if not (source / sub_path).exists():
            raise BadInput(f"{map_name}: paths: {sub_path!r} matches nothing under {source}")
    files = _files(source)
    relative = {path: path.relative_to(source).as_posix() for path in files}
    for injection in spec.inject:
        if not injection.file.endswith(".py") or not _selected(injection.file, spec.paths):
            raise BadInput(f"{map_name}: inject: {injection.file!r} is not a Python file under paths")
        if not (source / injection.file).is_file():
            raise BadInput(f"{map_name}: inject: {injection.file!r} matches nothing under {source}")
    report = PerturbReport()
    for old in spec.renames:
        report.renames[old] = 0
    for rules in spec.rules().values():
        for label, _ in rules:
            report.literals[label] = 0
    for injection in spec.inject:
        report.inject[injection.label()] = 0
    rewritten: dict[Path, str] = {}
    for path in files:
        name = relative[path]
        if path.suffix != ".py" or not _selected(name, spec.paths):
            continue
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            raise BadInput(f"{path}: not UTF-8 source") from None
        injections = [injection for injection in spec.inject if injection.file == name]
        rewritten[path] = rewrite_source(text, spec, report, injections, name=str(path))
    missing = report.unmatched()
    if missing:
        raise BadInput(f"{map_name}: matched nothing under {source}: {', '.join(missing)}")
    several = [
        f"{label} ({report.inject[label]} lines)"
        for label in (injection.label() for injection in spec.inject if injection.after_line is not None)
        if report.inject[label] > 1
    ]
    if several:
        raise BadInput(
            f"{map_name}: inject: after_line must match one line, not several: {', '.join(several)}"
        )
    for path in files:
        target = out / relative[path]
        target.parent.mkdir(parents=True, exist_ok=True)
        if path in rewritten:
            target.write_bytes(rewritten[path].encode("utf-8"))
            report.rewritten += 1
        else:
            shutil.copy2(path, target)
            report.copied += 1
    return report
