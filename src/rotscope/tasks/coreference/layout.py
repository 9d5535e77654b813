"""A ``coreference`` case as a chat at a length and depth, rendered and verified as session
prompts are (``prompt.session_render``, ``prompt.session``): the model's chat template, its turns
parsed back, each request and reply of the case's pair a whole turn with its exact token span.

**Depth** is the asked reply's: the share of the chat's tokens before it, the pair's requests and
replies left out (the other exchanges and the template's markers are the chat's filler). The other
exchanges are drawn and cut to length at a turn as session filler is (a last reply may be cut
short, a request never is), then arranged around the pair's exchanges so the asked reply lands
nearest the layout's depth (within ``depth_tolerance``, checked by ``verify_session``) and each
competitor nearest a seeded depth on its side of it (the depth reached is what its span records).
Every prompt is also checked to ask what its case asks: the pair's requests, found in the turns by
their topic and form, are the case's, and the reply after the asked one is the case's answer.
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from rotscope.config.experiment import ExperimentConfig
from rotscope.prompt.builder import PlacementError
from rotscope.prompt.session import Located, content_tokens, session_prompt, verify_session
from rotscope.prompt.session_render import SessionMessage, content_starts, count, fit_session, template_parts
from rotscope.tasks.coreference.content import Conversation, Exchange, ordinal
from rotscope.types import Case, Layout, RenderedPrompt, Tokenizer

_CHARS_PER_TOKEN = 6
"""Characters of exchanges drawn per token of a length: more than any tokenizer needs."""
_LOOKAHEAD = 12
"""Later exchanges that may fill the room of a request left out."""


Filler = tuple[list[list[SessionMessage]], list[int], int]
"""A length's other exchanges (as pairs of turns), their measured tokens, and the template's
tokens around one message."""


@dataclass(frozen=True)
class ChatPrompt:
    """A verified prompt and the case as scored there (its oracle's traps add the replies of the
    exchanges just before and after the asked one, which depend on the layout)."""

    case: Case
    prompt: RenderedPrompt


def _messages(exchange: Exchange) -> list[SessionMessage]:
    return [
        SessionMessage("user", exchange.request, "user"),
        SessionMessage("assistant", exchange.reply, "assistant"),
    ]


def _filler(
    conversation: Conversation, tokenizer: Tokenizer, final: SessionMessage, budget: int
) -> list[list[SessionMessage]]:
    """The chat's other exchanges cut to ``budget`` tokens (with ``final`` after them), as pairs;
    a cut that falls in a request leaves it out (user and assistant turns keep alternating) and
    fills its room with a later whole exchange where one fits it better than nothing."""
    turns: list[SessionMessage] = []
    chars = 0
    for exchange in conversation.filler():
        turns.extend(_messages(exchange))
        chars += len(exchange.request) + len(exchange.reply)
        if chars >= budget * _CHARS_PER_TOKEN:
            break
    kept = fit_session(tokenizer, turns, final, budget, origin=f"coreference {conversation.case.case_id}")
    if kept and kept[-1].role == "user":
        # the cut fell in a request: left out, its room goes to the next whole exchange whose size
        # fills it best, where one fills it better than nothing
        cut = len(kept) - 1
        kept = kept[:cut]
        room = budget - count(tokenizer, [*kept, final])
        marker = _marker_tokens(tokenizer, final)
        sizes = {
            at: tokenizer.count(turns[at].content) + tokenizer.count(turns[at + 1].content) + 2 * marker
            for at in range(cut, min(cut + 2 * _LOOKAHEAD, len(turns) - 1), 2)
        }
        best = min(sizes, key=lambda at: abs(room - sizes[at]), default=None)
        if best is not None and abs(room - sizes[best]) < room:
            kept.extend(turns[best : best + 2])
    return [kept[i : i + 2] for i in range(0, len(kept), 2)]


def _depths(conversation: Conversation, layout: Layout) -> list[float]:
    """The asked depth of each reply of the pair, in order: the asked one at the layout's depth,
    the earlier ones at seeded depths before it, the later ones after."""
    rng = random.Random(f"{conversation.seed}:{layout.length_tokens}:{layout.depth}")
    depth, before = layout.depth, conversation.ordinal - 1
    after = len(conversation.own) - conversation.ordinal
    return [
        *sorted(rng.uniform(0.0, depth) for _ in range(before)),
        depth,
        *sorted(rng.uniform(depth, 1.0) for _ in range(after)),
    ]


def _subset(sizes: list[int], items: list[int], goal: float) -> list[int]:
    """The items (indexes into ``sizes``) whose sizes sum nearest ``goal``: a subset sum over
    bit masks of the sums reachable with the first k items, then walked back."""
    masks = [1]
    for item in items:
        masks.append(masks[-1] | masks[-1] << sizes[item])
    wanted = max(0, round(goal))
    best = min((t for t in range(2 * wanted + 1) if masks[-1] >> t & 1), key=lambda t: abs(t - wanted))
    chosen = []
    for k in range(len(items), 0, -1):
        if not masks[k - 1] >> best & 1:  # not reachable without item k - 1: it was taken
            chosen.append(items[k - 1])
            best -= sizes[items[k - 1]]
    return sorted(chosen)


def _arrange(sizes: list[int], before_reply: list[int], depths: list[float]) -> list[list[int]]:
    """The other exchanges (by index) in the segments before, between and after the pair's
    exchanges, so that each reply of the pair lands nearest its depth: ``sizes`` are the other
    exchanges' tokens, ``before_reply`` the tokens of each pair exchange that are no piece (its
    template markers). Each segment in turn takes the exchanges left whose sizes sum nearest its
    share (no error carries over); the last takes the rest. A segment keeps the chat's order."""
    total = sum(sizes) + sum(before_reply)
    left = list(range(len(sizes)))
    segments: list[list[int]] = []
    placed = 0
    for index, depth in enumerate(depths):
        taken = _subset(sizes, left, depth * total - sum(before_reply[: index + 1]) - placed)
        left = [i for i in left if i not in taken]
        placed += sum(sizes[i] for i in taken)
        segments.append(taken)
    return [*segments, left]


def render_chat(
    conversation: Conversation,
    layout: Layout,
    tokenizer: Tokenizer,
    config: ExperimentConfig,
    digest: str,
    *,
    control: bool = False,
    cache: dict[tuple[str, int], Filler] | None = None,
) -> ChatPrompt:
    """The verified chat of ``conversation`` at ``layout`` (with ``control``: its evidence-absent
    control, the pair's exchanges left out), or ``PlacementError`` with the reasons. ``cache``
    keeps each case's other exchanges per length, for its other depths."""
    cache = {} if cache is None else cache
    case = conversation.case.absent_control() if control else conversation.case
    final = SessionMessage("user", case.question, "user")
    own = [] if control else list(conversation.own)
    own_messages = [message for exchange in own for message in _messages(exchange)]
    cost = count(tokenizer, [*own_messages, final]) - count(tokenizer, [final]) if own else 0
    key = (case.case_id, layout.length_tokens)
    if key not in cache:  # the other exchanges of a length serve each of its depths
        exchanges = _filler(conversation, tokenizer, final, layout.length_tokens - cost)
        cache[key] = (exchanges, _sizes(tokenizer, exchanges, final), _marker_tokens(tokenizer, final))
    exchanges, sizes, marker = cache[key]
    before_reply = [2 * marker for _ in own]
    depths = _depths(conversation, layout) if own else []
    segments = _arrange(sizes, before_reply, depths)
    messages: list[SessionMessage] = []
    located: list[Located] = []
    for number, segment in enumerate(segments, start=1):
        for index in segment:
            messages.extend(exchanges[index])
        if number <= len(own):
            exchange = own[number - 1]
            messages.extend(_messages(exchange))
            located.append(Located(f"request-{number}", len(messages) - 2, 0, exchange.request))
            located.append(Located(f"reply-{number}", len(messages) - 1, 0, exchange.reply))
    messages.append(final)
    starts = content_starts(
        template_parts(tokenizer, [m.role for m in messages]), [m.content for m in messages]
    )
    prompt = session_prompt(tokenizer, messages, located, starts, digest)
    if own:
        case = _with_neighbours(case, messages, located[2 * conversation.ordinal - 1].message)
    # the asked exchange is checked at the layout's depth; a competitor is wherever the chat put
    # it nearest its seeded depth (its measured depth), on its side of the asked one
    reached = {span.evidence_id: span.depth for span in prompt.spans}
    asked = {f"{kind}-{conversation.ordinal}": layout.depth for kind in ("request", "reply")}
    problems = verify_session(
        prompt, case, layout, tokenizer, config.length_tolerance, config.depth_tolerance, reached | asked
    )
    problems.extend(ordinal_problems(prompt.messages, conversation) if own else [])
    if problems:
        raise PlacementError(f"case {case.case_id} at {layout}: " + "; ".join(dict.fromkeys(problems)))
    return ChatPrompt(case, prompt)


def ordinal_problems(messages: Sequence[dict[str, str]], conversation: Conversation) -> list[str]:
    """Why the chat does not ask what the case asks: the pair's requests, found by their topic and
    form in the user turns, must be the case's ``copies``, and the reply after the ``ordinal``-th
    of them must be the case's answer."""
    topic, form = conversation.pair
    asking = re.compile(rf"\b{re.escape(form)} about {re.escape(topic)}\b")
    found = [
        messages[index + 1]["content"]
        for index, message in enumerate(messages[:-2])
        if message["role"] == "user" and asking.search(message["content"])
    ]
    if len(found) != len(conversation.own):
        return [f"the chat asks {len(found)} times for a {form} about {topic}, not {len(conversation.own)}"]
    if found[conversation.ordinal - 1] != conversation.case.oracle.answer:
        return [f"the reply to the {ordinal(conversation.ordinal)} request is not the case's answer"]
    return []


def _sizes(tokenizer: Tokenizer, exchanges: list[list[SessionMessage]], final: SessionMessage) -> list[int]:
    """The tokens of each exchange in the chat of ``exchanges`` and ``final``, measured."""
    messages = [*(message for pair in exchanges for message in pair), final]
    parts = template_parts(tokenizer, [message.role for message in messages])
    starts = content_tokens(tokenizer, messages, content_starts(parts, [m.content for m in messages]))
    firsts = [*(starts[i] for i in range(0, len(messages) - 1, 2)), starts[-1]]
    return [b - a for a, b in itertools.pairwise(firsts)]


def _marker_tokens(tokenizer: Tokenizer, final: SessionMessage) -> int:
    """About how many tokens the chat template adds around one message's content."""
    probe = SessionMessage("user", "x", "user")
    return count(tokenizer, [probe, final]) - count(tokenizer, [final]) - tokenizer.count("x")


def _with_neighbours(case: Case, messages: list[SessionMessage], target: int) -> Case:
    """``case`` with the replies just before and after the asked one as ``neighbour`` traps (a
    neighbour that is a competitor stays a ``wrong_ordinal`` trap)."""
    known = {value for _, value in case.oracle.traps}
    neighbours = [
        messages[index].content
        for index in (target - 2, target + 2)
        if 0 <= index < len(messages) - 1 and messages[index].role == "assistant"
    ]
    traps = (*case.oracle.traps, *(("neighbour", text) for text in neighbours if text not in known))
    return replace(case, oracle=replace(case.oracle, traps=traps))
