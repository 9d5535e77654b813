"""The gold answer's likelihood from a server (``serve/NAME``): the request that reads one answer
form's token log-probabilities after the verified prompt, and the parse of the server's reply.

Each form goes as its own prompt, the verified ids with the form's ids after them, generating one
token: vLLM's ``POST /v1/completions`` with its ``prompt_logprobs: 0`` (each prompt token's own
log-probability, keyed by token id), SGLang's ``POST /generate`` with ``input_ids``,
``return_logprob`` and ``logprob_start_len`` (``meta_info.input_token_logprobs``, triples of
log-probability, token id and text). The form's values are the last ``len(form)`` entries, each
checked to be the form's own token id; the prompt count the server reports must be the ids sent.

llama.cpp's ``llama-server`` gives log-probabilities of generated tokens only (``n_probs``; its
``/v1/completions`` refuses ``echo``: "Only no echo is supported"), so a ``llamacpp`` server reads
none (``NO_LIKELIHOOD``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from rotscope.backends.retry import Transient
from rotscope.backends.serve.options import ServerKind

NO_LIKELIHOOD: Mapping[ServerKind, str] = {
    "llamacpp": (
        "llama.cpp's llama-server returns log-probabilities of generated tokens only (its "
        "/v1/completions refuses echo), not of the answer's tokens after the prompt"
    ),
}
"""Why a server kind cannot read an answer's likelihood."""


def reads_likelihood(kind: ServerKind | None) -> bool:
    """Whether a ``kind`` server reads likelihoods; an unknown kind may (decided once detected)."""
    return kind not in NO_LIKELIHOOD


def likelihood_body(
    kind: ServerKind, name: str, prompt: Sequence[int], form: Sequence[int]
) -> tuple[str, dict[str, Any]]:
    """The path and JSON body that read ``form``'s log-probabilities after ``prompt`` on a ``kind``
    server (vLLM or SGLang); ``ValueError`` for a kind that cannot."""
    if kind in NO_LIKELIHOOD:
        raise ValueError(NO_LIKELIHOOD[kind])
    ids = [*prompt, *form]
    if kind == "sglang":
        return "/generate", {
            "input_ids": ids,
            "sampling_params": {"max_new_tokens": 1, "temperature": 0.0},
            "return_logprob": True,
            "logprob_start_len": max(len(prompt) - 1, 0),
        }
    return "/v1/completions", {
        "model": name,
        "prompt": ids,
        "max_tokens": 1,
        "temperature": 0.0,
        "prompt_logprobs": 0,
    }


class ReadingRefused(Exception):
    """A whole reply that is no reading of the verified prompt (another prompt count, a form's
    token missing): an error row, not retried."""


def _value(entry: object) -> float | None:
    return float(entry) if isinstance(entry, int | float) and not isinstance(entry, bool) else None


def _vllm_values(data: Any, prompt: int, form: Sequence[int]) -> tuple[list[float | None], object]:
    """The value vLLM's ``prompt_logprobs`` give each form token at its position (an entry per
    prompt position, ``None`` for the first; its keys are token ids as text), and the reported
    prompt count."""
    positions = data["choices"][0].get("prompt_logprobs") or []
    values: list[float | None] = []
    for index, token in enumerate(form):
        entry = positions[prompt + index] if prompt + index < len(positions) else None
        value = entry.get(str(token)) if isinstance(entry, dict) else None
        values.append(_value(value.get("logprob") if isinstance(value, dict) else value))
    return values, (data.get("usage") or {}).get("prompt_tokens")


def _sglang_entries(data: Any) -> tuple[list[tuple[float | None, int | None]], object]:
    meta = data["meta_info"]
    entries = [
        (_value(entry[0]), int(entry[1]) if len(entry) > 1 and entry[1] is not None else None)
        for entry in meta.get("input_token_logprobs") or []
    ]
    return entries, meta.get("prompt_tokens")


def parse_likelihood(kind: ServerKind, content: bytes, prompt: int, form: Sequence[int]) -> tuple[float, ...]:
    """``form``'s token log-probabilities from a reply to ``likelihood_body``: ``Transient`` for
    a body that is no reply at all, ``ReadingRefused`` for one that reads another prompt or lacks
    a form token's value."""
    try:
        data = json.loads(content)
        if kind == "sglang":
            entries, reported = _sglang_entries(data)
            values: list[float | None] = []
            for (logprob, token), wanted in zip(entries[len(entries) - len(form) :], form, strict=False):
                values.append(logprob if token == wanted else None)
        else:
            values, reported = _vllm_values(data, prompt, form)
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise Transient(f"malformed response ({len(content)} bytes)") from None
    sent = prompt + len(form)
    if reported != sent:
        said = "no prompt-token count" if reported is None else f"{reported} prompt tokens"
        raise ReadingRefused(
            f"the server reports {said}, {sent} token ids were sent (it tokenized or cut the "
            "prompt itself): not the verified prompt"
        )
    if len(values) != len(form) or any(value is None for value in values):
        raise ReadingRefused(
            f"the server returned no log-probability for some of the answer's {len(form)} tokens"
        )
    return tuple(float(value) for value in values if value is not None)


__all__ = [
    "NO_LIKELIHOOD",
    "ReadingRefused",
    "likelihood_body",
    "parse_likelihood",
    "reads_likelihood",
]
