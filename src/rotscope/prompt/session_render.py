"""Session turns as chat messages in the model's own template, and the rendered text parsed back.

``to_messages`` maps turns to messages: a tool result keeps the ``tool`` role where the chat
template names tools, and is otherwise a plain user turn that says which tool it came from.
``parse_turns`` recovers each message's content from rendered text by the template's own fixed
parts (rendered around placeholders), so a check that role boundaries survived needs no
knowledge of a template. ``fit_session`` cuts turns to a token length at turn boundaries, the
remainder filled by the next turn truncated. A chat haystack of any family renders through these.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rotscope.errors import BadInput
from rotscope.filler.session import KIND, Turn
from rotscope.types import Tokenizer

SESSION_FILLER = KIND
"""``Layout.filler`` of a prompt on session filler (``None``: the static corpus)."""
TRUNCATED = "\n[output truncated]"
"""Ends a turn cut short to fill a length, as an agent harness marks a clipped tool result."""
_PLACEHOLDER = "\u2063ROTSCOPE-TURN-{}\u2063"


def supports_tools(tokenizer: Tokenizer) -> bool:
    """Whether the tokenizer's chat template names tools (a ``tool`` role it was trained on)."""
    template = getattr(tokenizer, "template", None)
    return isinstance(template, str) and "tool" in template


@dataclass(frozen=True)
class SessionMessage:
    """A turn as sent: its chat message, and what kind of turn it is (``tool``, ``user``...)."""

    role: str
    content: str
    kind: str

    def message(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


def to_message(turn: Turn, tools: bool) -> SessionMessage:
    if turn.role != "tool" or tools:
        return SessionMessage(turn.role, turn.content, turn.role)
    label = f" ({turn.name})" if turn.name else ""
    return SessionMessage("user", f"Tool result{label}:\n{turn.content}", "tool")


def render(tokenizer: Tokenizer, messages: Sequence[SessionMessage]) -> str:
    return tokenizer.render_chat([message.message() for message in messages])


def count(tokenizer: Tokenizer, messages: Sequence[SessionMessage]) -> int:
    return len(tokenizer.encode(render(tokenizer, messages), special=True))


def template_parts(tokenizer: Tokenizer, roles: Sequence[str]) -> list[str]:
    """The template's fixed text before, between and after messages of these roles."""
    placeholders = [SessionMessage(role, _PLACEHOLDER.format(i), role) for i, role in enumerate(roles)]
    text = render(tokenizer, placeholders)
    parts = []
    for i in range(len(roles)):
        before, found, text = text.partition(_PLACEHOLDER.format(i))
        if not found:
            raise BadInput(
                f"{tokenizer.name}: the chat template does not place message {i} ({roles[i]}) once"
            )
        parts.append(before)
    return [*parts, text]


def parse_turns(tokenizer: Tokenizer, text: str, roles: Sequence[str]) -> list[str] | None:
    """The contents of messages of ``roles`` read back from rendered ``text``, or ``None`` when the
    text does not have the template's shape (a content that holds a turn marker breaks it)."""
    parts = template_parts(tokenizer, roles)
    if not text.startswith(parts[0]):
        return None
    position = len(parts[0])
    contents = []
    for part in parts[1:]:
        end = text.find(part, position) if part else len(text)
        if end < 0:
            return None
        contents.append(text[position:end])
        position = end + len(part)
    return contents if position == len(text) else None


def content_starts(parts: Sequence[str], contents: Sequence[str]) -> list[int]:
    """Where each content starts in the text the template makes of them (``template_parts``)."""
    starts, position = [], len(parts[0])
    for content, part in zip(contents, parts[1:], strict=True):
        starts.append(position)
        position += len(content) + len(part)
    return starts


def holds_marker(tokenizer: Tokenizer, content: str) -> bool:
    """Whether ``content`` holds a special token's text (a turn marker such as ``<|im_start|>``):
    rendered, it would open or close a turn of its own."""
    return tokenizer.encode(content, special=True) != tokenizer.encode(content)


def _cut_points(content: str) -> list[int]:
    """Where a turn may be cut: after each word and each mark (a line of test dots is many)."""
    return [match.end() for match in re.finditer(r"\w+|[^\w\s]", content)]


def _largest(fits: Callable[[int], bool], low: int, high: int) -> int:
    """The largest ``n`` in ``[low, high]`` with ``fits(n)`` (monotone), or ``low - 1``."""
    best = low - 1
    while low <= high:
        middle = (low + high) // 2
        if fits(middle):
            best, low = middle, middle + 1
        else:
            high = middle - 1
    return best


def fit_session(
    tokenizer: Tokenizer,
    turns: Sequence[SessionMessage],
    final: SessionMessage,
    budget: int,
    *,
    origin: str,
) -> list[SessionMessage]:
    """The longest run of whole turns whose prompt (with ``final`` after it) holds at most
    ``budget`` tokens, then the next turn truncated at a word to fill what is left.

    Sizes are estimated from each content's own token count, then settled by counting the whole
    rendered prompt, so a long session costs a few full encodings, not one per turn."""

    def total(messages: Sequence[SessionMessage]) -> int:
        return count(tokenizer, [*messages, final])

    sizes = [tokenizer.count(turn.content) for turn in turns]
    overhead = total(turns[:1]) - total([]) - sizes[0] if turns else 0
    base = total([])
    if base > budget:
        raise BadInput(f"filler: the question turn alone is longer than {budget} tokens")
    estimate, used = 0, base
    while estimate < len(turns) and used + sizes[estimate] + overhead <= budget:
        used += sizes[estimate] + overhead
        estimate += 1
    whole = estimate
    while whole > 0 and total(turns[:whole]) > budget:
        whole -= 1
    while whole < len(turns) and total(turns[: whole + 1]) <= budget:
        whole += 1
    kept = list(turns[:whole])
    if whole == len(turns):
        raise BadInput(
            f"filler: session {origin} has {total(kept) - base} tokens but a length needs {budget}; "
            "use a longer transcript or set filler.allow_repeat: true"
        )
    nxt = turns[whole]
    points = _cut_points(nxt.content)

    def truncated(n: int) -> SessionMessage:
        return SessionMessage(nxt.role, nxt.content[: points[n - 1]] + TRUNCATED, nxt.kind)

    if not points:
        return kept
    room = budget - total(kept)
    shortest = total([*kept, truncated(1)]) - total(kept) - tokenizer.count(truncated(1).content)
    words = _largest(lambda n: tokenizer.count(truncated(n).content) + shortest <= room, 1, len(points))
    while words >= 1 and total([*kept, truncated(words)]) > budget:
        words -= 1
    return [*kept, truncated(words)] if words >= 1 else kept
