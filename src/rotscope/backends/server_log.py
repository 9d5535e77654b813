"""The prompt tokens a llama-cpp-python server kept per request, read from its verbose log
(``remote.server_log``): its usage reports no cached tokens, but its log says, per request, how much
of the prompt it kept and how much it evaluated.

Each request the server answers ends its prompt evaluation with llama.cpp's timing line
(``llama_perf_context_print: prompt eval time = ... / N tokens``), preceded by
``Llama.generate: K prefix-match hit, remaining N prompt tokens to eval`` when it kept ``K``
tokens. Both are written before the reply is sent, so once a reply has come back, the last record
in what the log gained since the previous reply is that request's. Lines only match requests one at
a time: the backend that reads them takes one call at a time (``limits.openai.concurrency: 1``).
A record whose kept and evaluated tokens do not add up to the prompt tokens the reply reports is
someone else's (another client, a retried request): the count is then unknown, never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rotscope.errors import BadInput

PREFIX_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")
PROMPT_EVAL = re.compile(r"prompt eval time =\s*[\d.]+ ms /\s*(\d+) tokens")


@dataclass(frozen=True)
class Record:
    """One request's prompt as the server's log tells it."""

    kept: int
    evaluated: int


def records(text: str) -> list[Record]:
    """The requests in ``text``, in order: a timing line closes one, the prefix hit before it (if
    any, since the previous timing line) says what it kept."""
    found: list[Record] = []
    kept = 0
    for line in text.splitlines():
        hit = PREFIX_HIT.search(line)
        if hit is not None:
            kept = int(hit.group(1))
            continue
        evaluated = PROMPT_EVAL.search(line)
        if evaluated is not None:
            found.append(Record(kept, int(evaluated.group(1))))
            kept = 0
    return found


class ServerLog:
    """Reads the log from where it ended when the run started: each ``cached_tokens`` call takes
    what was written since the previous one."""

    def __init__(self, path: Path) -> None:
        if not path.is_file():
            raise BadInput(f"remote.server_log: {path} is not a file (redirect the server's output to it)")
        self.path = path
        self._offset = path.stat().st_size

    def cached_tokens(self, prompt_tokens: int) -> int | None:
        """The tokens the server kept for the request just answered, ``None`` when the log holds no
        record of it that adds up to its ``prompt_tokens``."""
        try:
            with self.path.open("rb") as log:
                if self.path.stat().st_size < self._offset:  # rotated or truncated: a new log
                    self._offset = 0
                log.seek(self._offset)
                written = log.read()
        except OSError:
            return None
        end = written.rfind(b"\n") + 1  # a line still being written is read next time
        self._offset += end
        found = records(written[:end].decode("utf-8", errors="replace"))
        if not found or found[-1].kept + found[-1].evaluated != prompt_tokens:
            return None
        return found[-1].kept
