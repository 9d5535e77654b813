"""The invented conversation of a ``coreference`` case: requests for short pieces of writing
("Write a limerick about brakels.") and the assistant's replies, all generated and seeded.

Each case draws a small pool of invented topics and forms. One (topic, form) pair is the case's:
``copies`` exchanges ask for it, and the question asks for the ``ordinal``-th of their replies.
Every other exchange asks for another pair of the pool (the same topic in another form, the same
form about another topic), so the requests look alike and only the ordinal tells the asked reply
from its competitors. Replies fill a form's line templates with words and invented names, so no
reply can be recalled from a model's knowledge.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from rotscope._util.similarity import COPY_RATIO, ratio
from rotscope.types import Case, Evidence, Oracle

TASK = "coreference"
COPIES = 3
"""Exchanges that ask for the case's own (topic, form): the asked reply and its competitors."""
POOL_TOPICS = 3
POOL_FORMS = 3
_FORMS = {
    "short poem": ("The {topic} {verb} beneath a {adj} {noun},", "while {name} {verb} the {noun} of {place};",
                   "{Adj} {noun}s {verb} until {time}."),
    "limerick": ("Some {topic} who lived near {place}", "once {verb} a {adj} {noun} with {name},",
                 "and {verb} it home before {time}."),
    "short story": ("{name} found the {topic} by the {adj} {noun} at {time}.",
                    "They had {verb} every {noun} in {place}.", "By morning the {noun} was {adj} again."),
    "riddle": ("I am {adj} like the {topic} and {verb} like a {noun};",
               "{name} of {place} keeps me in a {adj} {noun}.", "What am I, that wakes at {time}?"),
    "letter": ("Dear {name}, the {topic} {verb} our {adj} {noun} today.",
               "In {place} the {noun}s are {adj}, and we wait for {time}.",
               "Yours, the keeper of the {noun}"),
    "fable": ("A {adj} {noun} once {verb} the {topic} of {place}.",
              "{name} warned them, but they {verb} it anyway.",
              "Moral: a {noun} {verb} at {time} stays {adj}."),
}  # fmt: skip
FORMS = tuple(_FORMS)
_REQUESTS = (
    "Write a {form} about {topic}.",
    "Please write a {form} about {topic}.",
    "Could you write a {form} about {topic}?",
    "I would like a {form} about {topic}.",
)
_ADJECTIVES = ("silver", "quiet", "crooked", "amber", "hollow", "restless", "velvet", "frozen", "gentle",
               "distant", "copper", "narrow", "bitter", "golden", "tidal", "patient")  # fmt: skip
_NOUNS = ("lantern", "harbour", "orchard", "staircase", "kettle", "meadow", "compass", "ribbon",
          "chimney", "bridge", "garden", "window", "river", "drum", "basket", "mirror")  # fmt: skip
_VERBS = ("wandered", "hummed", "gathered", "whispered", "counted", "painted", "carried",
          "folded", "traded", "chased", "mended", "buried", "polished", "borrowed", "followed",
          "scattered")  # fmt: skip
_TIMES = (
    "dawn",
    "dusk",
    "midnight",
    "noon",
    "the first frost",
    "the spring fair",
    "the long rain",
    "harvest",
)
_ONSETS = ("b", "br", "d", "dr", "f", "g", "gl", "k", "m", "n", "p", "pl", "s", "t", "tr", "v", "z")
_VOWELS = ("a", "e", "i", "o", "u")
_CODAS = ("", "l", "n", "r", "sk", "m", "nd", "x")
_PREFIX_LETTERS = "bcdfghjkmnpqrstvwxz"
_TRIES = 200


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th`` ... ``11th``, ``12th``, ``13th``, ``21st``."""
    suffix = "th" if 10 < n % 100 < 14 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


@dataclass(frozen=True)
class Exchange:
    """A user's request and the assistant's reply."""

    topic: str
    form: str
    request: str
    reply: str


class Writer:
    """Invented topics, names and replies for one case, seeded; no reply written twice."""

    def __init__(self, seed: str) -> None:
        self.rng = random.Random(seed)
        self.replies: set[str] = set()

    def word(self, syllables: int) -> str:
        rng = self.rng
        return "".join(
            rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(syllables)
        )

    def prefix(self) -> str:
        """A code of four letters and digits (MRCR prepends a random string)."""
        rng = self.rng
        letters = rng.choice(_PREFIX_LETTERS), rng.choice(_PREFIX_LETTERS)
        return f"{letters[0]}{rng.randint(0, 9)}{letters[1]}{rng.randint(0, 9)}"

    def exchange(self, topic: str, form: str, lines: int = 3) -> Exchange:
        """A request for ``form`` about ``topic`` and a new reply of the form's first ``lines``."""
        rng = self.rng
        for _ in range(_TRIES):
            adjective = rng.choice(_ADJECTIVES)
            slots = {
                "topic": topic,
                "name": self.word(2).capitalize(),
                "place": self.word(2).capitalize(),
                "time": rng.choice(_TIMES),
            }
            written = []
            for template in _FORMS[form][:lines]:
                line = template.replace("{Adj}", adjective.capitalize())
                for slot, choices in (("adj", _ADJECTIVES), ("noun", _NOUNS), ("verb", _VERBS)):
                    while "{" + slot + "}" in line:
                        line = line.replace("{" + slot + "}", rng.choice(choices), 1)
                written.append(line.format(**slots))
            reply = "\n".join(written)
            if reply not in self.replies:
                self.replies.add(reply)
                request = rng.choice(_REQUESTS).format(form=form, topic=topic)
                return Exchange(topic, form, request, reply)
        raise ValueError(f"{TASK}: could not write a new {form} about {topic}")

    def distinct(self, topic: str, form: str, copies: int) -> tuple[Exchange, ...]:
        """``copies`` exchanges of one pair whose replies are not alike (a ratio under ``COPY_RATIO``)."""
        own: list[Exchange] = []
        for _ in range(_TRIES):
            drawn = self.exchange(topic, form)
            if all(ratio(drawn.reply, e.reply) < COPY_RATIO for e in own):
                own.append(drawn)
                if len(own) == copies:
                    return tuple(own)
        raise ValueError(f"{TASK}: could not write {copies} distinct {form}s about {topic}")


@dataclass(frozen=True)
class Conversation:
    """A case and what its haystack is drawn from: the pool of topics and forms, the exchanges that
    ask for the case's pair (in order), and the seed of its other exchanges."""

    case: Case
    topics: tuple[str, ...]
    forms: tuple[str, ...]
    own: tuple[Exchange, ...]
    ordinal: int
    seed: str

    @property
    def pair(self) -> tuple[str, str]:
        return self.own[0].topic, self.own[0].form

    def filler(self) -> Iterator[Exchange]:
        """Endless exchanges about the pool's other pairs, seeded, none repeating a reply; their
        replies have one to three lines, so the chat can be arranged to put a reply at a depth."""
        writer = Writer(f"{self.seed}:filler")
        writer.replies.update(exchange.reply for exchange in self.own)
        pairs = [(t, f) for t in self.topics for f in self.forms if (t, f) != self.pair]
        while True:
            topic, form = writer.rng.choice(pairs)
            yield writer.exchange(topic, form, writer.rng.randint(1, 3))


def question(prefix: str, number: int, form: str, topic: str) -> str:
    return (
        f"Prepend the code {prefix} to the {ordinal(number)} {form} about {topic} in this conversation "
        f"(counting from its start) and reply with the code followed by that {form} exactly as it was "
        f"written, and nothing else. If this conversation holds no {form} about {topic}, reply: "
        "not in the context."
    )


def build_conversation(case_id: str, number: int, *, copies: int = COPIES, seed: str = TASK) -> Conversation:
    """A case asking for the ``number``-th of ``copies`` replies to the case's (topic, form).

    Raises ``ValueError`` on bad data: an ordinal that does not exist, replies of the pair that
    repeat, contain or closely resemble each other (a copy of a competitor would score as the
    target), a code or a pair that the conversation's other text holds."""
    if copies < 1 or not 1 <= number <= copies:
        raise ValueError(f"{TASK} case {case_id}: ordinal {number} does not exist among {copies} replies")
    writer = Writer(f"{seed}:{case_id}")
    topics = tuple(dict.fromkeys(writer.word(2) + "s" for _ in range(POOL_TOPICS * 4)))[:POOL_TOPICS]
    forms = tuple(writer.rng.sample(FORMS, POOL_FORMS))
    if len(topics) < POOL_TOPICS:
        raise ValueError(f"{TASK} case {case_id}: could not invent {POOL_TOPICS} distinct topics")
    topic, form = writer.rng.choice(topics), writer.rng.choice(forms)
    own = writer.distinct(topic, form, copies)
    replies = [exchange.reply for exchange in own]
    for i, a in enumerate(replies):
        for b in replies[i + 1 :]:
            if a in b or b in a or ratio(a, b) >= COPY_RATIO:
                raise ValueError(
                    f"{TASK} case {case_id}: two replies of the pair are too alike to tell apart"
                )
    prefix = writer.prefix()
    if any(prefix in text for exchange in own for text in (exchange.request, exchange.reply)):
        raise ValueError(f"{TASK} case {case_id}: the code {prefix} occurs in the conversation")
    target = own[number - 1]
    evidence = tuple(
        piece
        for n, exchange in enumerate(own, start=1)
        for piece in (
            Evidence(f"request-{n}", exchange.request, "support", turn="user"),
            Evidence(f"reply-{n}", exchange.reply, "answer" if n == number else "decoy", turn="assistant"),
        )
    )
    case = Case(
        case_id=case_id,
        task=TASK,
        evidence=evidence,
        question=question(prefix, number, form, topic),
        oracle=Oracle(
            answer=target.reply,
            kind="reply",
            items=(prefix,),
            traps=tuple(("wrong_ordinal", e.reply) for e in own if e is not target),
        ),
        guarded=(prefix,),
        slices=(("ordinal", str(number)), ("copies", str(copies))),
    )
    return Conversation(case, topics, forms, own, number, f"{seed}:{case_id}")
