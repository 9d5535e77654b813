"""needlehaystack 0.1.0 (the Greg Kamradt harness) on the bundled GGUF, for
``benchmarks/needle_side_by_side.py``. Runs in needlehaystack's own virtual environment (its pinned
dependencies would move the project's), never in the project's: it imports nothing of rotscope.

    /tmp/needle-venv/bin/python benchmarks/needle_harness.py SPEC.json RESULT.json

SPEC.json names the mode (``inprocess``: llama-cpp-python in this process; ``server``: an
OpenAI-compatible server at ``base_url``), the GGUF, the engine's threads and batch, ``max_tokens``,
the lengths, the depths in percent and the cases (needle, question, answer). Each case is one
``LLMNeedleHaystackTester`` over every length × depth, run as the package runs it (its Paul Graham
essays as the haystack, its prompt, its result and context files in the working directory), with:

- ``LlamaModel``: a ``ModelProvider`` whose tokenizer is the GGUF's own vocabulary (llama.cpp), so
  nothing is downloaded (no tiktoken encoding); in-process it calls ``create_chat_completion``, through
  the server it posts the same messages with ``AsyncOpenAI`` as the package's OpenAI provider does.
  Greedy, ``repeat_penalty`` 1.0 (the server's default is 1.1; the in-process engine's 1.0).
- ``AnswerMatch``: an ``Evaluator`` that is a string match (the answer's words in the reply,
  case and punctuation folded), not an LLM judge.
- ``final_context_length_buffer`` set to the tokens of the case's prompt without its context, so a
  prompt's tokens are about its length as rotscope counts a length (the whole prompt); the package's
  default of 200 would leave 56 tokens of haystack at 256.

RESULT.json: a row per call (case, length, depth, reply, the evaluator's score, the prompt and
reply tokens the engine counted) and the seconds spent importing the package and loading the model.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

STARTED = time.perf_counter()

from llama_cpp import Llama  # noqa: E402
from llama_cpp.llama_chat_format import Jinja2ChatFormatter  # noqa: E402
from needlehaystack import LLMNeedleHaystackTester  # noqa: E402
from needlehaystack.evaluators import Evaluator  # noqa: E402
from needlehaystack.providers import ModelProvider  # noqa: E402

IMPORTED = time.perf_counter()
SYSTEM = "You are a helpful AI bot that answers questions for a user. Keep your response short and direct"
ASK = "Don't give information outside the document or repeat your findings"


def folded(text: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", text.lower()).split())


class AnswerMatch(Evaluator):
    """1 when the answer's words occur in the reply as whole words, else 0."""

    CRITERIA: ClassVar[dict[str, str]] = {"answer": "the expected answer occurs in the reply"}

    def __init__(self, answers: list[str]) -> None:
        self.answers = [folded(answer) for answer in answers if folded(answer)]

    def evaluate_response(self, response: str) -> int:
        reply = f" {folded(response)} "
        return int(any(f" {answer} " in reply for answer in self.answers))


class LlamaModel(ModelProvider):
    """The bundled GGUF as needlehaystack's model: its tokenizer for cutting the haystack, and either
    the engine in this process or the server at ``base_url`` for the replies."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.model_name = "smollm2"
        self.max_tokens = int(spec["max_tokens"])
        self.calls: list[dict[str, Any]] = []
        inprocess = spec["mode"] == "inprocess"
        self.llama = Llama(
            model_path=spec["model"],
            n_ctx=int(spec["n_ctx"]),
            n_batch=int(spec["n_batch"]),
            n_ubatch=int(spec["n_batch"]),
            n_threads=int(spec["threads"]),
            n_threads_batch=int(spec["threads"]),
            vocab_only=not inprocess,
            verbose=False,
        )
        # needlehaystack runs each tester in an event loop of its own (asyncio.run per case): an async
        # client is bound to the loop it first ran in, so each loop gets its own
        self.base_url: str | None = None if inprocess else str(spec["base_url"])
        self.clients: dict[int, Any] = {}
        metadata = self.llama.metadata
        model = self.llama._model
        self.formatter = Jinja2ChatFormatter(
            template=metadata["tokenizer.chat_template"],
            eos_token=model.token_get_text(self.llama.token_eos()),
            bos_token=model.token_get_text(self.llama.token_bos()),
        )

    def client(self) -> Any:
        """The async client of the running event loop."""
        import asyncio

        from openai import AsyncOpenAI

        loop = id(asyncio.get_running_loop())
        if loop not in self.clients:
            self.clients[loop] = AsyncOpenAI(
                base_url=self.base_url, api_key="none", timeout=600, max_retries=0
            )
        return self.clients[loop]

    def generate_prompt(self, context: str, retrieval_question: str) -> list[dict[str, str]]:
        # The messages of needlehaystack's own OpenAI provider.
        return [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": context},
            {
                "role": "user",
                "content": f"{retrieval_question} {ASK}",
            },
        ]

    def frame_tokens(self, question: str) -> int:
        """The prompt's tokens without its context, in the model's chat template."""
        prompt = self.formatter(messages=self.generate_prompt("", question)).prompt
        return len(self.llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True))

    async def evaluate_model(self, prompt: Any) -> str:
        if self.base_url is None:
            result: Any = self.llama.create_chat_completion(
                messages=prompt, max_tokens=self.max_tokens, temperature=0.0, seed=0, repeat_penalty=1.0
            )
        else:
            reply = await self.client().chat.completions.create(
                model=self.model_name,
                messages=prompt,
                max_tokens=self.max_tokens,
                temperature=0.0,
                seed=0,
                extra_body={"repeat_penalty": 1.0},
            )
            result = reply.model_dump()
        usage = result.get("usage") or {}
        text = result["choices"][0]["message"]["content"] or ""
        self.calls.append(
            {
                "prompt_tokens": usage.get("prompt_tokens"),
                "completion_tokens": usage.get("completion_tokens"),
                "response": text,
            }
        )
        return str(text)

    def encode_text_to_tokens(self, text: str) -> list[int]:
        return list(self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def decode_tokens(self, tokens: list[int], context_length: int | None = None) -> str:
        return self.llama.detokenize(list(tokens[:context_length])).decode("utf-8", errors="ignore")


def main() -> None:
    spec_path, result_path = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    os.chdir(spec["workdir"])  # its results/ and contexts/ folders
    model = LlamaModel(spec)
    loaded = time.perf_counter()
    rows: list[dict[str, Any]] = []
    for number, case in enumerate(spec["cases"], start=1):
        tester = LLMNeedleHaystackTester(
            model_to_test=model,
            evaluator=AnswerMatch(case["answers"]),
            needle=f"\n{case['needle']}\n",
            retrieval_question=case["question"],
            results_version=number,  # one version per case: its results files tell the cases apart
            context_lengths=spec["lengths"],
            document_depth_percents=spec["depths"],
            final_context_length_buffer=model.frame_tokens(case["question"]),
            print_ongoing_status=False,
        )
        before = len(model.calls)
        tester.start_test()
        for result, call in zip(tester.get_results(), model.calls[before:], strict=True):
            rows.append(
                {
                    "case_id": case["case_id"],
                    "length": int(result["context_length"]),
                    "depth": float(result["depth_percent"]) / 100,
                    "score": int(result["score"]),
                    **call,
                }
            )
    finished = time.perf_counter()
    result_path.write_text(
        json.dumps(
            {
                "import_s": IMPORTED - STARTED,
                "load_s": loaded - IMPORTED,
                "calls_s": finished - loaded,
                "rows": rows,
            }
        ),
        encoding="utf-8",
    )


if __name__ == "__main__":
    main()
