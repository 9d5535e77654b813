"""The gold answer's likelihood on the call path (docs/statistics.md, "Scores"): which score a run
keeps (``run_score``), the answer forms a work item reads, tokenized by the model's own tokenizer
(``likelihood_request``), and the row columns a reading gives (``likelihood_columns``)."""

from __future__ import annotations

import math
from typing import Literal

from rotscope.answer_kinds import answer_readings as kind_readings
from rotscope.errors import BadInput
from rotscope.rows import ResultValues
from rotscope.types import Backend, Likelihood, LikelihoodRequest, ReadsLikelihood, Tokenizer, WorkItem

RunScore = Literal["accuracy", "likelihood", "both"]
"""What a run keeps per row: the reply's score (``accuracy``), the gold answer's likelihood read
in a prefill with no generation (``likelihood``), or both from the same engine (``both``)."""
RUN_SCORES: tuple[RunScore, ...] = ("accuracy", "likelihood", "both")


def run_score(asked: str | None, backend: Backend) -> RunScore:
    """The score a run keeps: ``asked`` (``run --score``, the key ``score:``), else ``both`` where
    the backend reads likelihoods and ``accuracy`` where it cannot. Bad input, before any call,
    where a likelihood is asked of a backend that cannot read one."""
    # a backend that declares the capability but has no ``likelihood`` (a wrapper copying its
    # engine's capabilities) cannot read one either
    capable = backend.capabilities.likelihood and isinstance(backend, ReadsLikelihood)
    if asked is None:
        return "both" if capable else "accuracy"
    if asked not in RUN_SCORES:
        raise BadInput(f"score: {asked!r} is not one of {', '.join(RUN_SCORES)}")
    if asked != "accuracy" and not capable:
        name = backend.describe().get("backend") or backend.model_id.split("/")[0]
        reason = getattr(backend, "likelihood_refusal", None)  # a backend that knows why (serve/)
        because = f": {reason}" if reason else " (rotscope models lists those that can)"
        raise BadInput(
            f"--score {asked}: the {name} backend cannot read an answer's likelihood{because}; "
            "run it with --score accuracy"
        )
    return asked


def answer_readings(item: WorkItem) -> tuple[tuple[str, str], ...]:
    """The (lead-in, answer) readings of the item (``answer_kinds.answer_readings``; an
    evidence-absent control reads its case's), none for a prompt of several questions."""
    if item.case.parts:
        return ()
    return kind_readings(item.case)


def tokenized_reading(lead: str, answer: str, tokenizer: Tokenizer) -> tuple[tuple[int, ...], int]:
    """The reading's tokens as the model's tokenizer splits the whole reply (no special tokens: the
    prompt already ends with the template's turn header), and how many of them are the lead-in: its
    own tokens where the whole reply starts with them, else the tokens the two share (a merge across
    the boundary counts as answer)."""
    whole = tuple(tokenizer.encode(lead + answer))
    if not lead:
        return whole, 0
    alone = tokenizer.encode(lead)
    shared = 0
    while shared < min(len(alone), len(whole)) and alone[shared] == whole[shared]:
        shared += 1
    return whole, min(shared, len(whole) - 1)


def likelihood_request(item: WorkItem, tokenizer: Tokenizer) -> LikelihoodRequest | None:
    """The item's prompt with each reading tokenized after it; ``None``: nothing to read."""
    readings = [tokenized_reading(lead, answer, tokenizer) for lead, answer in answer_readings(item)]
    readings = [(ids, lead) for ids, lead in readings if ids]
    if not readings:
        return None
    return LikelihoodRequest(
        item.prompt.token_ids,
        tuple(ids for ids, _ in readings),
        item.prompt.messages,
        scored_from=tuple(lead for _, lead in readings),
    )


def likelihood_columns(read: Likelihood | None, scored_from: tuple[int, ...] = ()) -> ResultValues:
    """The row's likelihood columns from a reading: the best reading's answer log-probability (its
    tokens after the lead-in, summed), their count and the first one's probability; all ``None``
    where nothing was read or it failed."""
    if read is None or read.error is not None or not read.token_logprobs:
        return {"answer_logprob": None, "answer_tokens": None, "first_token_prob": None}
    starts = scored_from or (0,) * len(read.token_logprobs)
    answers = [form[start:] for form, start in zip(read.token_logprobs, starts, strict=True)]
    best = max(range(len(answers)), key=lambda index: sum(answers[index]))
    tokens = answers[best]
    return {
        "answer_logprob": sum(tokens),
        "answer_tokens": len(tokens),
        "first_token_prob": math.exp(tokens[0]) if tokens else None,
    }
