"""Session filler: the turns of a working session (a coding agent's conversation) instead of
documents. ``filler: {kind: session, source: generated}`` draws a seeded, invented session;
``source: PATH.jsonl`` reads the user's own transcript, one OpenAI-style message a line.

A turn is plain text per role; ``prompt.session`` renders turns with the model's chat template and
cuts them to length. Nothing here knows about evidence or templates, so another family (a chat
haystack of generated turns, MRCR-style) can draw the same turns.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rotscope._util.jsonl import read_jsonl
from rotscope.config.experiment import FillerConfig
from rotscope.errors import BadInput
from rotscope.filler import ENCODING_HINT, Document, register_filler
from rotscope.filler.readinglog import _guard_pattern

TurnRole = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[TurnRole, ...] = ("system", "user", "assistant", "tool")
GENERATED = "generated"
TOOL_CALL = "[tool call]"
"""Opens the line of an assistant turn that calls a tool (a transcript's ``tool_calls`` as text)."""


@dataclass(frozen=True)
class Turn:
    """One message of a session; ``name`` is the tool a ``tool`` turn reports from."""

    role: TurnRole
    content: str
    name: str = ""


def is_note(turn: Turn) -> bool:
    """Whether a turn is the assistant's own words (a note, a plan), not a tool call: what the model
    writes itself with ``filler.assistant: model``."""
    return turn.role == "assistant" and TOOL_CALL not in turn.content


def session_source(config: FillerConfig) -> str:
    """The session a config names: ``generated`` or a transcript's path."""
    return config.source or GENERATED


def session_turns(config: FillerConfig, seed: int, avoid: frozenset[str] = frozenset()) -> Iterator[Turn]:
    """The session's turns: endless generated ones for ``seed``, or the transcript's (repeated
    after its end when ``allow_repeat``). Generated turns holding a guarded string are skipped."""
    source = session_source(config)
    if source == GENERATED:
        yield from generated_session(seed, avoid)
        return
    turns = load_transcript(Path(source), config.encoding)
    while True:
        yield from turns
        if not config.allow_repeat:
            return
        turns = [turn for turn in turns if turn.role != "system"]


KIND = "session"
"""The source's registered name: ``filler.kind`` of an experiment on session filler, and
``Layout.filler`` of its prompts (``rotscope.prompt.session_render.SESSION_FILLER``)."""


@register_filler(KIND, describe=lambda config: f"{KIND}:{session_source(config)}")
def session_documents(
    config: FillerConfig, seed: int, avoid: frozenset[str] = frozenset()
) -> Iterator[Document]:
    """The session's turns as documents (one per turn), for readers that want text alone."""
    for number, turn in enumerate(session_turns(config, seed, avoid), start=1):
        yield Document(name=f"turn-{number}-{turn.role}", text=turn.content)


# --- transcripts ---------------------------------------------------------------------------


def _text_content(content: Any, where: str) -> str:
    """A message's content as text: a string, a list of ``{"type": "text", "text": ...}`` parts,
    or null (an assistant turn that only calls tools)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict) or not isinstance(part.get("text", None), str):
                raise BadInput(f"{where}: content parts must be objects with a string 'text'")
            texts.append(part["text"])
        return "\n".join(texts)
    raise BadInput(
        f"{where}: content must be a string, a list of text parts or null, not {type(content).__name__}"
    )


def _tool_calls(calls: Any, where: str) -> str:
    """An assistant's ``tool_calls`` written as text lines (``[tool call] name(arguments)``)."""
    if not isinstance(calls, list):
        raise BadInput(f"{where}: tool_calls must be a list")
    lines = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise BadInput(f"{where}: each tool call needs a function with a string name")
        arguments = function.get("arguments", "")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, sort_keys=True)
        lines.append(f"{TOOL_CALL} {function['name']}({arguments})")
    return "\n".join(lines)


def parse_message(record: dict[str, Any], where: str) -> Turn:
    """One OpenAI-style message as a turn, or ``BadInput`` naming ``where`` and the problem."""
    role = record.get("role")
    if role not in ROLES:
        raise BadInput(f"{where}: role {role!r} is not one of {', '.join(ROLES)}")
    content = _text_content(record.get("content"), where)
    if role == "assistant" and "tool_calls" in record:
        calls = _tool_calls(record["tool_calls"], where)
        content = f"{content}\n{calls}" if content else calls
    name = record.get("name", "")
    if not isinstance(name, str):
        raise BadInput(f"{where}: name must be a string")
    if not content.strip():
        raise BadInput(f"{where}: the message has no text")
    return Turn(role=role, content=content.replace("\r\n", "\n").strip("\n"), name=name)


def load_transcript(path: Path, encoding: str = "utf-8") -> list[Turn]:
    """A transcript file's turns; a bad line is one error naming ``path:line``."""
    if not path.is_file():
        raise BadInput(f"filler.source: {path} does not exist")
    turns = [
        parse_message(record, f"{path}:{number}")
        for number, record in read_jsonl(path, encoding, ENCODING_HINT)
    ]
    if not any(turn.role != "system" for turn in turns):
        raise BadInput(f"filler.source: {path} holds no user, assistant or tool message")
    return turns


# --- the generated coding-agent session ---------------------------------------------------

_ONSETS = ["b", "br", "c", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "qu"]
_VOWELS = ["a", "e", "i", "o", "u", "ea", "io"]
_CODAS = ["", "n", "r", "l", "x", "t", "sk", "m"]
_VERBS = ["load", "parse", "merge", "flush", "resolve", "render", "index", "sync", "encode", "prune"]
_NOUNS = ["config", "batch", "token", "segment", "manifest", "cursor", "ledger", "shard", "window", "payload"]
_ERRORS = [("KeyError", "'{noun}_id'"),
           ("TypeError", "unsupported operand type(s) for +: 'int' and 'NoneType'"),
           ("AssertionError", "assert {a} == {b}"),
           ("ValueError", "invalid literal for int() with base 10: '{noun}'"),
           ("AttributeError", "'NoneType' object has no attribute '{verb}'")]  # fmt: skip
_REQUESTS = [
    "The {module} tests started failing after yesterday's change to {function}. Can you find out why?",
    "Please add a --dry-run flag to the {module} command; it should print what {function} would do.",
    "{function} is slow on large inputs. Profile it and make it faster without changing its output.",
    "Users report that {function} drops the last {noun} when the input ends without a newline. Fix it.",
]
_FOLLOW_UPS = [
    "Looks reasonable. While you are there, check whether {function} has the same problem.",
    "Before changing more, can you run the whole {module} suite again?",
    "Keep the public signature of {function} as it is; other teams import it.",
    "Thanks. Please also update the docstring of {function}.",
]
_CLOSINGS = [
    "Good, that is fixed. Next, have a look at {function} in {file}.",
    "The CI run for {module} is still red; please look at it next.",
    "Fine. Leave {caller} alone for now and move on to the {module} docs.",
]
_NOTES = [
    "The failure is in {function}: it reads {noun}s before the {other} is loaded.",
    "I'll look at how {function} is called from {caller} next.",
    "The traceback points at line {line} of {file}. Reading that file.",
    "The grep shows {count} call sites; only {caller} passes a {noun} of None.",
    "That test still fails, so the cause is elsewhere. Going back to {file}.",
]


class _Project:
    """The invented repository a generated session works in: names drawn once per seed."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.name = self.word()
        self.modules = [self.word() for _ in range(5)]
        self.functions = [f"{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}" for _ in range(12)]

    def word(self) -> str:
        rng = self.rng
        return "".join(
            rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(rng.randint(2, 3))
        )

    def fields(self) -> dict[str, str]:
        rng = self.rng
        module = rng.choice(self.modules)
        return {
            "module": module,
            "function": rng.choice(self.functions),
            "caller": rng.choice(self.functions),
            "noun": rng.choice(_NOUNS),
            "other": rng.choice(_NOUNS),
            "file": f"src/{self.name}/{module}.py",
            "line": str(rng.randint(12, 480)),
            "count": str(rng.randint(2, 14)),
        }


def _file_read(project: _Project, fields: dict[str, str]) -> str:
    rng = project.rng
    summary = (
        f"{fields['module'].capitalize()}: {rng.choice(_VERBS)}s {rng.choice(_NOUNS)}s for {project.name}."
    )
    lines = [f'"""{summary}"""', "", "from __future__ import annotations", "",
             f"import {rng.choice(project.modules)}", ""]  # fmt: skip
    for function in rng.sample(project.functions, 3):
        noun, other = rng.choice(_NOUNS), rng.choice(_NOUNS)
        lines += [
            f"def {function}({noun}, {other}=None):",
            f'    """Return the {noun} after {function.split("_")[0]}ing it with the {other}."""',
            f"    if {other} is None:",
            f"        {other} = {rng.choice(project.modules)}.default_{other}()",
            f"    result = [{noun}[key] for key in sorted({noun}) if key != {rng.randint(0, 9)}]",
            f"    return {rng.choice(_VERBS)}_{rng.choice(_NOUNS)}(result, {other})",
            "",
        ]
    numbered = [f"{number:>4}  {line}" for number, line in enumerate(lines, start=int(fields["line"]) // 10)]
    return f"{fields['file']}\n" + "\n".join(numbered)


def _grep(project: _Project, fields: dict[str, str]) -> str:
    rng = project.rng
    hits = []
    for _ in range(int(fields["count"])):
        module = rng.choice(project.modules)
        hits.append(
            f"src/{project.name}/{module}.py:{rng.randint(3, 400)}:"
            f"    value = {fields['function']}({rng.choice(_NOUNS)})"
        )
    return "\n".join(hits)


def _test_run(project: _Project, fields: dict[str, str]) -> str:
    rng = project.rng
    passed, failed = rng.randint(20, 140), rng.randint(1, 4)
    error, message = rng.choice(_ERRORS)
    message = message.format(
        noun=fields["noun"], verb=rng.choice(_VERBS), a=rng.randint(1, 99), b=rng.randint(1, 99)
    )
    test = f"test_{fields['function']}_{rng.choice(['empty', 'large', 'unicode', 'none', 'nested'])}"
    return "\n".join([
        f"$ python -m pytest tests/test_{fields['module']}.py -q",
        f"{'.' * min(passed, 60)}F{'.' * rng.randint(0, 9)}",
        f"FAILED tests/test_{fields['module']}.py::{test} - {error}: {message}",
        "Traceback (most recent call last):",
        f'  File "tests/test_{fields["module"]}.py", line {rng.randint(10, 200)}, in {test}',
        f"    assert {fields['function']}(sample) == expected",
        f'  File "{fields["file"]}", line {fields["line"]}, in {fields["function"]}',
        f"    return {fields['caller']}(result, {fields['other']})",
        f"{error}: {message}",
        f"{failed} failed, {passed} passed in {rng.randint(1, 40)}.{rng.randint(0, 99):02d}s",
    ])  # fmt: skip


def _diff(project: _Project, fields: dict[str, str]) -> str:
    rng = project.rng
    noun, other = fields["noun"], fields["other"]
    return "\n".join([
        f"--- a/{fields['file']}",
        f"+++ b/{fields['file']}",
        f"@@ -{fields['line']},6 +{fields['line']},7 @@ def {fields['function']}({noun}, {other}=None):",
        f"     if {other} is None:",
        f"-        {other} = {rng.choice(project.modules)}.default_{other}()",
        f"+        {other} = {rng.choice(project.modules)}.load_{other}(strict=True)",
        f"+    {noun} = dict({noun} or {{}})",
        f"     result = [{noun}[key] for key in sorted({noun})]",
    ])  # fmt: skip


def _plan(project: _Project, fields: dict[str, str]) -> str:
    rng = project.rng
    return "\n".join([
        "Plan:",
        f"1. Change {fields['function']} to build the {fields['noun']} index once.",
        f"2. Cache the {fields['other']} in {fields['caller']} between calls.",
        f"3. Rewrite test_{fields['module']} around the cache, then drop the old {rng.choice(_NOUNS)} path.",
    ])  # fmt: skip


def _abandon(project: _Project, fields: dict[str, str]) -> str:
    return (
        f"That plan does not work: {fields['caller']} mutates the {fields['other']} after it is cached, "
        f"so step 2 would return stale data. Abandoning it and fixing {fields['function']} directly instead."
    )


def _note(project: _Project) -> Turn:
    """The assistant's note between steps."""
    return Turn("assistant", project.rng.choice(_NOTES).format(**project.fields()))


def _episode(project: _Project) -> Iterator[Turn]:
    """One step of the session: a request, reads, a grep, a test run, a plan, a fix."""
    rng = project.rng
    fields = project.fields()
    yield Turn("user", rng.choice(_REQUESTS).format(**fields))
    yield Turn("assistant", f"[tool call] read_file(path={fields['file']!r})")
    yield Turn("tool", _file_read(project, fields), "read_file")
    yield _note(project)
    yield Turn("assistant", f"[tool call] grep(pattern={fields['function']!r})")
    yield Turn("tool", _grep(project, fields), "grep")
    yield Turn("user", rng.choice(_FOLLOW_UPS).format(**project.fields()))
    yield Turn("assistant", f"Running the tests for {fields['module']}.\n[tool call] run(command='pytest')")
    yield Turn("tool", _test_run(project, fields), "run")
    if rng.random() < 0.5:
        yield Turn("assistant", _plan(project, fields))
        yield Turn("user", rng.choice(_FOLLOW_UPS).format(**fields))
        yield Turn("assistant", _abandon(project, fields))
    yield _note(project)
    yield Turn("tool", _diff(project, fields), "apply_patch")
    yield Turn("tool", _test_run(project, fields), "run")
    yield Turn("assistant", rng.choice(_NOTES).format(**project.fields()))
    yield Turn("user", rng.choice(_CLOSINGS).format(**project.fields()))


def generated_session(seed: int, avoid: frozenset[str] = frozenset()) -> Iterator[Turn]:
    """An endless coding-agent session for ``seed``: a system turn, then episodes of work."""
    rng = random.Random(f"session:{seed}")
    project = _Project(rng)
    guard = _guard_pattern(avoid)
    yield Turn("system", f"You are a coding agent in the {project.name} repository.")
    while True:
        for turn in _episode(project):
            if guard is None or not guard.search(turn.content):
                yield turn
