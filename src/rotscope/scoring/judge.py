"""The optional judge: a model that grades the replies deterministic scoring cannot decide.

Undecided means: scored ``incorrect`` with category ``wrong_answer`` (a non-empty reply that names
no accepted answer, no trap value, is no abstention and is not copied from the context, so it may
be a paraphrase of the answer), or ``hallucinated`` (a reply to an evidence-absent control that
matches no abstention pattern, so it may be an abstention in other words). Every other outcome is
decided by the string rules and never sent to the judge.

The prompt is fixed and versioned; its SHA-256 is stored with every judged row, so two runs whose
judged rows disagree can be traced to a prompt change.
"""

from __future__ import annotations

import hashlib
import re
from typing import Literal

from rotscope.rows import ResultValues
from rotscope.scoring.deterministic import parse_labelled_answers
from rotscope.types import Backend, Case, Completion, GenerateRequest, GenerationParams, Score

JUDGE_PROMPT_VERSION = "rotscope-judge-v1"
JUDGE_PROMPT = """You grade one reply to a question about a document you cannot see.

Question: {question}
Expected answer: {expected}
Reply: {reply}

Answer with one word. CORRECT if the reply gives the expected answer, in any wording.
ABSTAINED if the reply says the document does not contain the answer. INCORRECT otherwise."""
JUDGE_PROMPT_SHA256 = hashlib.sha256(f"{JUDGE_PROMPT_VERSION}\n{JUDGE_PROMPT}".encode()).hexdigest()
ABSENT_EXPECTED = "the document does not contain the answer"
UNDECIDED_CATEGORIES = frozenset({"wrong_answer", "hallucinated"})

Verdict = Literal["correct", "incorrect", "abstained"]
_VERDICT = re.compile(r"\b(CORRECT|INCORRECT|ABSTAINED)\b", re.IGNORECASE)


def undecided(result: Score) -> bool:
    """Whether deterministic scoring could not decide this reply (see the module docstring)."""
    return result.outcome == "incorrect" and result.category in UNDECIDED_CATEGORIES


def judge_messages(part: Case, reply: str) -> tuple[dict[str, str], ...]:
    expected = ABSENT_EXPECTED if part.oracle.abstain else part.oracle.answer
    content = JUDGE_PROMPT.format(question=part.question, expected=expected, reply=reply.strip())
    return ({"role": "user", "content": content},)


def parse_verdict(text: str) -> Verdict | None:
    """The first verdict word of the judge's reply, or ``None`` when it gave none."""
    match = _VERDICT.search(text)
    return None if match is None else match.group(1).lower()  # type: ignore[return-value]


def judged_score(part: Case, verdict: Verdict, undecided_score: Score) -> Score:
    """The score a verdict gives. For a control, saying the answer is absent is the right reply."""
    if verdict == "incorrect":
        return undecided_score
    if part.oracle.abstain:
        return Score("correct")
    return Score("correct") if verdict == "correct" else Score("abstained", "abstained")


def part_reply(case: Case, label: str, completion: Completion) -> str:
    """The reply to one question: the whole text, or its labelled line in a multi-question reply."""
    if not case.parts:
        return completion.text
    answers = parse_labelled_answers(completion.text, [name for name, _ in case.scored_parts()])
    return (answers or {}).get(label, completion.text)


def judge_request(backend: Backend, messages: tuple[dict[str, str], ...], max_tokens: int) -> GenerateRequest:
    tokenizer = backend.tokenizer()
    ids = tuple(tokenizer.encode(tokenizer.render_chat(messages), special=True))
    return GenerateRequest(messages, ids, GenerationParams(temperature=0.0, max_tokens=max_tokens, seed=0))


def judge_columns(model: str, completion: Completion, verdict: Verdict | None) -> ResultValues:
    """What a judged row stores: the verdict (``unparsed`` or ``failed`` when there is none), the
    judge model, the prompt's hash and the judge's raw reply or error."""
    shown = "failed" if completion.error is not None else verdict or "unparsed"
    return {
        "judge_verdict": shown,
        "judge_model": model,
        "judge_prompt_sha256": JUDGE_PROMPT_SHA256,
        "judge_response": completion.error or completion.text,
    }
