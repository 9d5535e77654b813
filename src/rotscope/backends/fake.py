"""A deterministic fake model for tests and docs: a string matcher, as a saturated NIAH rewards.

``fake/lexical`` answers with the context line that shares the most words with the question, or
abstains when none shares two; ``fake/lexical-recent`` reads only the last half of the context,
so it shows a position effect; ``fake/curve-MIDPOINT`` answers as ``fake/lexical`` does with the
chance of a known accuracy curve of length (``backends.curve``, a logistic in log length around
``MIDPOINT`` tokens with per-instance random effects) and abstains otherwise, so a search for the
effective length can be checked against the truth; ``fake/blind-DEPTH`` answers as
``fake/lexical`` does, each question of a multi-question prompt on its own ``Q<k>:`` line, but
abstains where the answering line sits within 0.1 of ``DEPTH``, so a depth effect inside one
prompt can be checked (``multikey``); ``fake/session-drop-PERCENT`` answers as ``fake/lexical``
does but abstains on that share of questions in session filler only; ``fake/echo`` answers a
question as ``fake/lexical`` does and replies to anything else (a session's tool output, where the
model writes its own note) with a note quoting the last turn's last line and the prompt's size, so
a session it writes itself depends on all it read. None sees the oracle.

The local fakes read likelihoods (``FakeBackend.likelihood``) on a known curve: an answer form
found (with its lead-in) in the line the responder's lexical reading picks has probability
``ANSWER_PROBABILITY`` (``fake/curve-MIDPOINT``: the curve's chance for the question at the prompt's
length), any other ``MISSING_PROBABILITY``, spread evenly over its answer's tokens (its lead-in's
have probability 1). ``fake-remote/`` reads none, as a chat API
that gives only its generated tokens' log-probabilities.
``fake-remote/NAME`` is
the same model run as a remote API is run (concurrently, interleaved, through the response cache), so budgets,
limits and caching can be tried without a network.
"""

from __future__ import annotations

import asyncio
import functools
import math
import re
from collections.abc import Callable

from rotscope._util.text import content_stems
from rotscope.answer_stop import answer_end
from rotscope.backends import CHAT_API_LIKELIHOOD, register_backend
from rotscope.backends.curve import LogisticCurve, uniform
from rotscope.config.experiment import ExperimentConfig
from rotscope.errors import BadInput
from rotscope.tokenizers.local import FakeTokenizer
from rotscope.types import (
    BackendDescription,
    Capabilities,
    Completion,
    GenerateRequest,
    GenerationParams,
    Likelihood,
    LikelihoodRequest,
)

Responder = Callable[[GenerateRequest], str]
ANSWER_PROBABILITY = 0.9
"""The fakes' probability of an answer form that the line their reading picks contains."""
MISSING_PROBABILITY = 0.01
"""Their probability of any other form (an answer the context does not give them)."""


def _context_and_question(request: GenerateRequest) -> tuple[list[str], str]:
    """The context's lines and the question. In a session (no ``<context>`` in the last turn) the
    context is every earlier turn."""
    user = request.messages[-1]["content"]
    if "<context>" in user or len(request.messages) < 2:
        context = user.split("<context>", 1)[-1].split("</context>", 1)[0]
    else:
        context = "\n".join(message["content"] for message in request.messages[:-1])
    question = re.search(r"Question: (.*)", user)
    return [line for line in context.splitlines() if line.strip()], question.group(1) if question else ""


@functools.lru_cache(maxsize=1 << 16)
def _line_stems(line: str) -> frozenset[str]:
    """A context line's content stems: the same filler lines come back in every prompt of a run."""
    return frozenset(content_stems(line))


def lexical_responder(recent_fraction: float = 1.0) -> Responder:
    def respond(request: GenerateRequest) -> str:
        lines, question = _context_and_question(request)
        visible = lines[int(len(lines) * (1 - recent_fraction)) :]
        wanted = content_stems(question)
        best = max(visible, key=lambda line: len(wanted & _line_stems(line)), default="")
        if len(wanted & _line_stems(best)) < 2:
            return ABSTAIN
        return best.strip()

    return respond


ABSTAIN = "not in the context"


def curve_responder(curve: LogisticCurve) -> Responder:
    """The lexical answer with the curve's chance at the prompt's length, else an abstention. The
    instance is the question; the depth is where the answering line sits in the context."""
    lexical = lexical_responder()

    def respond(request: GenerateRequest) -> str:
        answer = lexical(request)
        if answer == ABSTAIN:
            return answer
        lines, question = _context_and_question(request)
        depth = next((i for i, line in enumerate(lines) if line.strip() == answer), 0)
        right = curve.correct(question, len(request.token_ids), round(depth / max(len(lines), 1), 2))
        return answer if right else ABSTAIN

    return respond


BLIND_WIDTH = 0.1
_QUESTION_LINE = re.compile(r"^(Q\d+): (.*)$", re.MULTILINE)


def blind_responder(blind: float) -> Responder:
    """The lexical answer to each question, abstaining where the answering line's depth (the
    context's characters before it over all of them) is within ``BLIND_WIDTH`` of ``blind``."""

    def answer(lines: list[str], question: str) -> str:
        wanted = content_stems(question)
        best = max(range(len(lines)), key=lambda i: len(wanted & _line_stems(lines[i])), default=None)
        if best is None or len(wanted & _line_stems(lines[best])) < 2:
            return ABSTAIN
        total = sum(len(line) for line in lines)
        depth = sum(len(line) for line in lines[:best]) / max(total - len(lines[best]), 1)
        return ABSTAIN if abs(depth - blind) <= BLIND_WIDTH else lines[best].strip()

    def respond(request: GenerateRequest) -> str:
        lines, question = _context_and_question(request)
        user = request.messages[-1]["content"]
        if "\nQuestions:\n" not in user:
            return answer(lines, question)
        asked = _QUESTION_LINE.findall(user.split("\nQuestions:\n", 1)[1])
        return "\n".join(f"{label}: {answer(lines, text)}" for label, text in asked)

    return respond


def in_session(request: GenerateRequest) -> bool:
    """Whether the prompt is a session (earlier turns), not one user turn holding a context."""
    return "<context>" not in request.messages[-1]["content"] and len(request.messages) > 1


def session_drop_responder(drop: float) -> Responder:
    """The lexical answer, except that in a session a share ``drop`` of questions (by a hash of the
    question and length) is abstained on: a model known to lose accuracy in sessions only."""
    lexical = lexical_responder()

    def respond(request: GenerateRequest) -> str:
        _, question = _context_and_question(request)
        if in_session(request) and uniform("session-drop", question, len(request.token_ids)) < drop:
            return ABSTAIN
        return lexical(request)

    return respond


def echo_responder() -> Responder:
    """A question's lexical answer; to anything else, a note naming the last line it read."""
    lexical = lexical_responder()

    def respond(request: GenerateRequest) -> str:
        last = request.messages[-1]["content"] if request.messages else ""
        if "Question: " in last or "\nQuestions:\n" in last:
            return lexical(request)
        line = next((line.strip() for line in reversed(last.splitlines()) if line.strip()), "")
        return f"Noted after {len(request.token_ids)} tokens: {line[:80]}"

    return respond


PATTERNED = ("curve-MIDPOINT", "blind-DEPTH", "session-drop-PERCENT")
"""The fakes named by a pattern (a parameter in the name), listed after the fixed ones."""


RESPONDERS: dict[str, Responder] = {
    "lexical": lexical_responder(),
    "lexical-recent": lexical_responder(0.5),
    "echo": echo_responder(),
}


class FakeBackend:
    """Calls ``responder`` on each request. A responder that raises becomes an error row; so does a
    likelihood reading whose prompt holds the text ``fail-likelihood`` (tests of error rows).

    ``provider`` is the backend name it reports (``fake`` runs as a local engine; any other name
    runs it as a remote API would be run), ``latency_s`` a wait per call; ``in_flight`` and
    ``max_in_flight`` count overlapping calls, so tests can check concurrency limits.
    """

    context_window = 1_000_000

    def __init__(
        self,
        name: str,
        responder: Responder,
        *,
        provider: str = "fake",
        latency_s: float = 0.0,
        curve: LogisticCurve | None = None,
    ) -> None:
        self.model_id = f"{provider}/{name}"
        local = provider == "fake"
        self.capabilities = Capabilities(
            local=local,
            exact_ids=local,
            max_concurrency=1 if local else None,
            clearable_cache=True,
            likelihood=local,
        )
        self.curve = curve
        self.provider = provider
        self.latency_s = latency_s
        self._responder = responder
        self._tokenizer = FakeTokenizer()
        self.calls = 0
        """Generations served (``likelihood`` readings are counted apart, in ``readings``)."""
        self.readings = 0
        self.cache_clears = 0
        self.in_flight = 0
        self.max_in_flight = 0

    def tokenizer(self) -> FakeTokenizer:
        return self._tokenizer

    def reserve(self, max_prompt_tokens: int, max_new_tokens: int) -> None:
        return None

    async def generate(self, request: GenerateRequest) -> Completion:
        self.calls += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.latency_s:
                await asyncio.sleep(self.latency_s)
            text = self._responder(request)
        except Exception as error:
            return Completion(text="", latency_s=self.latency_s, error=f"{type(error).__name__}: {error}")
        finally:
            self.in_flight -= 1
        end = None if request.stop is None else answer_end(text, request.stop)
        text = text if end is None else text[:end]  # as an engine stops at the answer
        return Completion(
            text=text,
            prompt_tokens=len(request.token_ids),
            completion_tokens=self._tokenizer.count(text),
            latency_s=self.latency_s,
        )

    async def likelihood(self, request: LikelihoodRequest) -> Likelihood:
        """Each form's reading on the fake's known curve (the module's docstring); its tokens share
        the form's log-probability evenly."""
        self.readings += 1
        for message in request.messages:  # a copy in a worker process meets the prompt's pieces here
            self._tokenizer.encode(message["content"])
        text = self._decoded(request.token_ids) or "\n".join(m["content"] for m in request.messages)
        messages = request.messages or ({"role": "user", "content": text},)
        if "fail-likelihood" in text:
            return Likelihood(prompt_tokens=len(request.token_ids), error="RuntimeError: a scripted failure")
        asked = GenerateRequest(tuple(messages), request.token_ids, GenerationParams())
        lexical = lexical_responder()(asked)
        chance = ANSWER_PROBABILITY
        if self.curve is not None:
            _, question = _context_and_question(asked)
            chance = self.curve.chance(question, len(request.token_ids))
        forms = []
        leads = request.scored_from or (0,) * len(request.continuations)
        for form, lead in zip(request.continuations, leads, strict=True):
            wanted = (self._decoded(form) or "").strip()  # pieces it never met: not in the prompt
            found = bool(wanted) and lexical != ABSTAIN and wanted in lexical
            share = math.log(chance if found else MISSING_PROBABILITY) / (len(form) - lead)
            forms.append(tuple(0.0 if index < lead else share for index in range(len(form))))
        return Likelihood(token_logprobs=tuple(forms), prompt_tokens=len(request.token_ids))

    def _decoded(self, ids: tuple[int, ...]) -> str | None:
        """The ids' text, ``None`` where a piece is one this copy of the fake never met (its
        vocabulary grows with what it encodes: a copy in another process starts with less)."""
        try:
            return self._tokenizer.decode(ids)
        except KeyError:
            return None

    def clear_cache(self) -> None:
        """The fake keeps no cache; clears are counted so tests can see the cold replicate ran."""
        self.cache_clears += 1

    def describe(self) -> BackendDescription:
        return {"backend": self.provider, "model": self.model_id, "tokenizer": self._tokenizer.name}

    def close(self) -> None:
        return None


def responder_for(name: str) -> Responder:
    """The responder of ``fake/NAME`` (a patterned name or one of ``RESPONDERS``); bad input else."""
    curve = re.fullmatch(r"curve-([0-9]+)", name)
    if curve is not None and int(curve.group(1)) > 0:
        return curve_responder(LogisticCurve(float(curve.group(1))))
    blind = re.fullmatch(r"blind-([01](?:\.[0-9]+)?)", name)
    if blind is not None and float(blind.group(1)) <= 1.0:
        return blind_responder(float(blind.group(1)))
    drop = re.fullmatch(r"session-drop-([0-9]+)", name)
    if drop is not None and int(drop.group(1)) <= 100:
        return session_drop_responder(int(drop.group(1)) / 100)
    responder = RESPONDERS.get(name)
    if responder is None:
        known = ", ".join([*sorted(RESPONDERS), *PATTERNED])
        raise BadInput(f"model: unknown fake model {name!r} (known: {known})")
    return responder


@register_backend(
    "fake",
    likelihood="reads answer likelihoods on a known curve (tests and examples)",
    hint="fake/NAME: a deterministic string matcher run as a local engine (docs and tests)",
    models=lambda: [f"fake/{name}" for name in [*sorted(RESPONDERS), *PATTERNED]],
)
def fake_backend(name: str, config: ExperimentConfig) -> FakeBackend:
    curve = re.fullmatch(r"curve-([0-9]+)", name)
    known = LogisticCurve(float(curve.group(1))) if curve is not None and int(curve.group(1)) > 0 else None
    return FakeBackend(name, responder_for(name), curve=known)


@register_backend(
    "fake-remote",
    likelihood=CHAT_API_LIKELIHOOD,
    hint="fake-remote/NAME: the same matcher run as a remote API is (concurrent, cached, priced)",
    models=lambda: [f"fake-remote/{name}" for name in sorted(RESPONDERS)],
)
def fake_remote_backend(name: str, config: ExperimentConfig) -> FakeBackend:
    """The same fake run the way a remote API is: concurrently, interleaved, cached, priced."""
    return FakeBackend(name, responder_for(name), provider="fake-remote")
