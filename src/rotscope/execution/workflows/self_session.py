"""The session the model under test writes itself (``filler: {kind: session, assistant: model}``):
the run's first step, before any prompt is planned.

The seeded generator gives the user turns, the tool calls and the tool output as it always does;
at each of the assistant's own turns (a note between steps, a plan, its abandonment) the model is
called on the session so far and its reply becomes that turn, so the session the probes are placed
in holds the model's own earlier words. The session only grows, so consecutive calls share their
prefix (a local engine reuses it).

Each turn is appended to ``RUN/session/KEY.partial.jsonl`` the moment it exists (a transcript: one
OpenAI-style message a line, each note with the usage of its call); the finished session is renamed
to ``KEY.jsonl`` in one step, so a partial file is never read as a session. Running again replays
the stored turns (checking each generated one against the generator) and calls the model only for
notes not yet written; a finished session calls it never. The planner reads the finished file as
it reads any transcript (``filler.session.load_transcript``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal, NotRequired, TypedDict, cast

from rotscope._util.decode import decode
from rotscope._util.inside import inside
from rotscope._util.jsonl import complete_lines, jsonl_line, jsonl_lines
from rotscope._util.resume_hint import out_option, resume_command
from rotscope._util.safe_text import storable
from rotscope.config.experiment import ExperimentConfig
from rotscope.errors import BadInput, EngineCrashed, SessionNotWritten, SessionStopped
from rotscope.execution.calls.cost import (
    check_budget_price,
    completion_cost,
    estimate_cost,
    find_price,
    price_table,
)
from rotscope.execution.calls.execute import Reporter
from rotscope.execution.state.identity import DIGESTS, config_digest
from rotscope.execution.state.run_folder import SESSION_DIR, has_store
from rotscope.filler.session import Turn, generated_session, is_note, load_transcript
from rotscope.plan.workitems import config_reply_budget
from rotscope.prompt.session_render import SESSION_FILLER, holds_marker, render, supports_tools, to_message
from rotscope.run_meta import SessionGeneration
from rotscope.store import RunStore
from rotscope.types import Backend, Completion, GenerateRequest, GenerationParams, Tokenizer

EMPTY_NOTE = "(no note)"
"""A note the model left empty (a transcript turn needs text)."""
MARKED_NOTE = "(note withheld: it held a chat-template marker)"
"""A note holding a turn marker's text, which would break the session's role boundaries."""
_ANEW = "delete the file to write the session anew"
USAGE: Final = "usage"
"""The key of a note's line that records its call (a transcript reader ignores it)."""


class NoteUsage(TypedDict, total=False):
    """The ``usage`` of a stored note's line: the call that wrote it (a note
    written before sessions were priced lacks ``usd``)."""

    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None
    latency_s: float
    usd: float | None


class NoteLine(TypedDict):
    """One stored line of a session the model writes: a transcript turn, and for a note the call
    that wrote it."""

    role: str
    content: str
    name: NotRequired[str]
    usage: NotRequired[NoteUsage]


_Summed = Literal["prompt_tokens", "completion_tokens", "cached_tokens", "latency_s"]
"""The usage keys ``SessionWriter.cost`` adds up over the notes."""


def _line(turn: Turn, usage: NoteUsage | None = None) -> str:
    record: NoteLine = {"role": turn.role, "content": turn.content}
    if turn.name:
        record["name"] = turn.name
    if usage is not None:
        record[USAGE] = cast(NoteUsage, dict(usage))
    return jsonl_line(record)


def _stored(path: Path) -> list[NoteLine]:
    """The lines of a stored session. A partial session's last line cut short by a crash (even
    inside a character) was never written: it is cut off the file as bytes, so the turns appended
    next follow a whole line."""
    if not path.is_file():
        return []
    text = decode(complete_lines(path), "utf-8", str(path), f"; {_ANEW}")
    records: list[NoteLine] = []
    for number, line in jsonl_lines(text):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            raise BadInput(f"{path}:{number}: not valid JSON; {_ANEW}") from None
    return records


def _usage(completion: Completion, usd: float | None) -> NoteUsage:
    return {
        "prompt_tokens": completion.prompt_tokens,
        "completion_tokens": completion.completion_tokens,
        "cached_tokens": completion.cached_tokens,
        "latency_s": round(completion.latency_s, 4),
        "usd": usd,
    }


def self_written(config: ExperimentConfig) -> bool:
    """Whether the run's session filler is one the model writes itself."""
    return config.filler.kind == SESSION_FILLER and config.filler.assistant == "model"


def written_notice(cost: Mapping[str, Any], calls_now: int) -> str:
    """What writing the session cost, for the run's notices."""
    stored = cost["calls"] - calls_now
    replayed = f" ({stored} replayed from the run folder)" if stored else ""
    return (
        f"session written by the model: {cost['sessions']} session(s), {cost['turns']} turns, "
        f"{cost['calls']} calls{replayed}, prompt tokens {cost['prompt_tokens']:,}, "
        f"completion tokens {cost['completion_tokens']:,}"
    )


class SessionWriter:
    """Writes (or reads back) the run's model-written sessions; called by the planner once per
    haystack variant (``plan.session_prompts.SessionWriter``)."""

    def __init__(
        self, config: ExperimentConfig, run_dir: Path, backend: Backend, reporter: Reporter | None = None
    ) -> None:
        self.config = config
        self.run_dir = run_dir
        self.backend = backend
        self.reporter = reporter
        self.params = GenerationParams(
            temperature=config.generation.temperature,
            max_tokens=config.filler.note_tokens,
            seed=config.generation.seed,
        )
        description = backend.describe()
        self._key_material = {
            "config": config_digest(config),
            "model": description.get("model"),
            **{name: description.get(key) for name, key in DIGESTS.items()},
        }
        self.price = find_price(config.model, price_table(config), local=backend.capabilities.local)
        check_budget_price(config, self.price, config.model)  # before the session's first call
        self.rows_spent = 0.0
        """What the run's rows already spent: a session written again (its file deleted) after rows
        were stored counts against the budget on top of them."""
        if has_store(run_dir):
            with RunStore.read(run_dir) as store:
                self.rows_spent = store.rows_spent()
        self.files: list[Path] = []
        self.calls_made = 0
        self._reserved = False

    def key(self, seed: int, guarded: frozenset[str], target: int) -> str:
        """Names a session by all it depends on: the experiment, the model, the variant's seed, the
        strings left out and the length it must reach."""
        material = {**self._key_material, "seed": seed, "guarded": sorted(guarded), "target": target}
        return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:16]

    def __call__(self, seed: int, guarded: frozenset[str], target: int) -> list[Turn]:
        folder = self.run_dir / SESSION_DIR
        key = self.key(seed, guarded, target)
        finished = folder / f"{key}.jsonl"
        partial = folder / f"{key}.partial.jsonl"
        for path in (finished, partial):  # a link planted in the folder never leads a write out of it
            inside(self.run_dir, path, what="the model's session")
        if not finished.is_file():
            folder.mkdir(parents=True, exist_ok=True)
            try:
                self._grow(seed, guarded, target, partial)
            except KeyboardInterrupt:  # loading the engine, rendering or calling it: all kept
                raise SessionStopped(
                    f"interrupted writing the session; the {len(_stored(partial))} turns written so far "
                    f"are kept in {partial}; run {self._again()} to continue",
                    budget=False,
                ) from None
            partial.replace(finished)  # one step: a session file is always a whole session
        self.files.append(finished)
        return load_transcript(finished)

    def _grow(self, seed: int, guarded: frozenset[str], target: int, partial: Path) -> None:
        """The generator's turns, each note the model's, up to the first note at which the session
        already holds ``target`` tokens; every turn appended to ``partial`` as it exists."""
        tokenizer = self.backend.tokenizer()
        tools = supports_tools(tokenizer)
        stored = _stored(partial)
        turns: list[Turn] = []
        self._notice(f"the model writes its session (seed {seed}, {target:,} tokens) into {partial.parent}")
        with partial.open("a", encoding="utf-8") as out:
            for index, turn in enumerate(generated_session(seed, guarded)):
                if is_note(turn):
                    text = render(tokenizer, [to_message(t, tools) for t in turns])
                    ids = tokenizer.encode(text, special=True)
                    if len(ids) >= target:
                        return
                    if index < len(stored):
                        turns.append(self._replayed_note(stored[index], partial, index))
                        continue
                    messages = tuple(to_message(t, tools).message() for t in turns)
                    request = GenerateRequest(messages, tuple(ids), self.params)
                    completion = self._call(request, target, partial, turns)
                    note = Turn("assistant", self._note_text(completion.text, tokenizer))
                    out.write(_line(note, _usage(completion, completion_cost(self.price, completion))))
                    out.flush()
                    turns.append(note)
                    continue
                if index < len(stored):
                    self._check_replayed(stored[index], turn, partial, index)
                else:
                    out.write(_line(turn))
                    out.flush()
                turns.append(turn)
        raise AssertionError("the generated session is endless")  # pragma: no cover

    def _replayed_note(self, record: NoteLine, partial: Path, index: int) -> Turn:
        content = record.get("content")
        if record.get("role") != "assistant" or not isinstance(content, str) or USAGE not in record:
            raise BadInput(f"{partial}:{index + 1}: not a note the model wrote; {_ANEW}")
        return Turn("assistant", content)

    def _check_replayed(self, record: NoteLine, turn: Turn, partial: Path, index: int) -> None:
        if record != json.loads(_line(turn)):
            raise BadInput(
                f"{partial}:{index + 1}: differs from the generated session (the generator changed since it "
                f"was written); {_ANEW}"
            )

    def _call(self, request: GenerateRequest, target: int, partial: Path, turns: list[Turn]) -> Completion:
        """One note's call; a failure stops the run with the session so far kept as partial."""
        if not self._reserved:
            # sized for the run's prompts too: a loaded in-process engine keeps its first context
            longest = math.ceil(target * (1 + self.config.length_tolerance)) + 1
            self.backend.reserve(longest, max(self.params.max_tokens, config_reply_budget(self.config)))
            self._reserved = True
        kept = f"the {len(turns)} turns written so far are kept in {partial}"
        max_cost = self.config.max_cost
        estimate = estimate_cost(self.price, len(request.token_ids), self.params.max_tokens)
        spent = 0.0 if max_cost is None else self.rows_spent + self.spent(partial)
        if max_cost is not None and estimate is not None and spent + estimate > max_cost:
            raise SessionStopped(
                f"stopped at budget writing the session: ${spent:.4f} spent of --max-cost ${max_cost:.4f}, "
                f"the next note could exceed it; {kept}; run {self._again(' --max-cost LARGER')} to continue",
                budget=True,
            )
        self.calls_made += 1
        try:
            completion = asyncio.run(self.backend.generate(request))
        except EngineCrashed as crashed:
            completion = Completion(text="", error=str(crashed))
        if completion.error is not None:
            raise SessionNotWritten(
                f"filler.assistant: model: the model failed writing a note of its session "
                f"({completion.error}); {kept}; run {self._again()} to continue"
            )
        return completion

    def _again(self, options: str = "") -> str:
        """The command that continues the run: a resume once its store exists, else the same run."""
        if has_store(self.run_dir):
            return f"{resume_command(self.run_dir, options)}"
        return f"the same command with {out_option(self.run_dir)}{options}"

    def spent(self, partial: Path | None = None) -> float:
        """USD the notes stored so far cost: the finished sessions and ``partial``, the one being
        written (a note without a price counts nothing, as a row does)."""
        paths = [*self.files, *([partial] if partial is not None else [])]
        return sum(
            float((record.get(USAGE) or {}).get("usd") or 0.0) for path in paths for record in _stored(path)
        )

    def _note_text(self, text: str, tokenizer: Tokenizer) -> str:
        note = storable(text).replace("\r\n", "\n").strip()  # a lone surrogate tokenizes as nothing
        if not note:
            return EMPTY_NOTE
        return MARKED_NOTE if holds_marker(tokenizer, note) else note

    def _notice(self, message: str) -> None:
        if self.reporter is not None:
            self.reporter.notice(message)

    def cost(self) -> SessionGeneration:
        """What writing the run's sessions cost, read from the stored notes (so it is the whole cost,
        however many runs it took): the summary's ``session_generation``."""
        names: tuple[_Summed, ...] = ("prompt_tokens", "completion_tokens", "cached_tokens", "latency_s")
        totals: dict[str, float] = dict.fromkeys(("calls", *names), 0)
        turns = 0
        for path in self.files:
            for record in _stored(path):
                turns += 1
                usage = record.get(USAGE)
                if isinstance(usage, dict):
                    totals["calls"] += 1
                    for name in names:
                        totals[name] += usage.get(name) or 0
        # the totals' keys are SessionGeneration's counts (a comprehension mypy cannot follow)
        return cast(
            SessionGeneration,
            {
                **{name: int(value) for name, value in totals.items()},
                "latency_s": round(totals["latency_s"], 3),
                "usd": self.spent(),
                "priced": all(
                    (record.get(USAGE) or {}).get("usd") is not None
                    for path in self.files
                    for record in _stored(path)
                    if USAGE in record
                ),
                "sessions": len(self.files),
                "turns": turns,
                "note_tokens": self.params.max_tokens,
                "files": [str(path.relative_to(self.run_dir)) for path in self.files],
            },
        )
