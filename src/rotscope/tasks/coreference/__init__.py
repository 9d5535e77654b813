"""``coreference`` (OpenAI's MRCR, Michelangelo's multi-round coreference): a chat of many alike
requests for short pieces of writing and the assistant's replies, invented (``content``); the last
turn asks for the ``N``-th reply to one (topic, form) pair, prefixed with a code ("prepend ab12 to
the 2nd limerick about brakels"). Retrieval among look-alikes by ordinal: the pair's other replies
are the competitors, ordinals before and after the asked one.

The chat is rendered with the model's chat template as session prompts are (``layout``); the
asked reply is the ``answer`` piece, a whole assistant turn at the grid's depth (the share of the
chat's tokens before it, the pair's exchanges left out), its competitors ``decoy`` pieces before
and after it, the pair's requests ``support`` pieces, each a whole turn with its own span.
The reply is scored by ``scoring.reply``: exact after the code, MRCR's similarity ratio
recorded as partial credit, categories for the wrong ordinal and a neighbour. With ``controls``
the chat without the pair's exchanges is the evidence-absent control (the right reply is an
abstention).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rotscope.config.experiment import ExperimentConfig
from rotscope.errors import BadInput
from rotscope.prompt.builder import PlacementError
from rotscope.tasks import register_task
from rotscope.tasks.coreference.content import COPIES, TASK, Conversation, build_conversation
from rotscope.tasks.coreference.layout import Filler, render_chat
from rotscope.types import Case, FamilyPrompts, Layout, Rejection, RenderedPrompt, Tokenizer

__all__ = ["CONTROL_POSITION", "CoreferenceFamily", "build_conversations"]

MAX_CASES = 1000
CONTROL_POSITION = "absent"
SOURCE = "generated chat (coreference)"


def build_conversations(count: int, copies: int = COPIES) -> list[Conversation]:
    """``count`` cases, seeded; the ordinal asked rotates over ``1..copies``."""
    if count > MAX_CASES:
        raise BadInput(f"cases_per_task: {TASK} makes at most {MAX_CASES} cases, got {count}")
    return [
        build_conversation(f"coref-{index:03d}-o{index % copies + 1}", index % copies + 1, copies=copies)
        for index in range(count)
    ]


@dataclass(frozen=True)
class CoreferenceFamily:
    """The family, planning its own prompts (``PlansOwnPrompts``): its haystack is its own chat."""

    config: ExperimentConfig
    name: str = TASK

    def conversations(self) -> list[Conversation]:
        made = build_conversations(self.config.cases_per_task)
        return made[self.config.case_offset :][: self.config.limit]

    def cases(self) -> list[Case]:
        return [conversation.case for conversation in self.conversations()]

    def plan_prompts(self, tokenizer: Tokenizer, neutral_corpus: Callable[[], Any]) -> FamilyPrompts:
        config = self.config
        if config.offsets():
            raise BadInput(f"depths: token offsets (@N) are not supported by {TASK}; use fractions or names")
        conversations = self.conversations()
        material = "\n".join(c.seed + "".join(e.reply for e in c.own) for c in conversations)
        digest = hashlib.sha256(material.encode()).hexdigest()[:16]
        rendered: list[tuple[Case, Layout, RenderedPrompt]] = []
        rejected: list[Rejection] = []
        cache: dict[tuple[str, int], Filler] = {}
        for conversation in conversations:
            layouts = [
                (Layout(length, depth, name), False)
                for length in config.lengths
                for depth, name in config.positions()
            ]
            if config.controls:
                layouts.extend((Layout(length, 0.0, CONTROL_POSITION), True) for length in config.lengths)
            for layout, control in layouts:
                try:
                    chat = render_chat(
                        conversation, layout, tokenizer, config, digest, control=control, cache=cache
                    )
                except PlacementError as error:
                    case = conversation.case.absent_control() if control else conversation.case
                    rejected.append(Rejection.of(case, layout, str(error)))
                    continue
                rendered.append((chat.case, layout, chat.prompt))
        return FamilyPrompts(
            rendered=tuple(rendered),
            rejected=tuple(rejected),
            corpus={"source": SOURCE, "digest": digest, "cases": len(conversations)},
            corpus_label=SOURCE,
        )


@register_task(TASK, most_cases=lambda: MAX_CASES)
def coreference_family(config: ExperimentConfig) -> CoreferenceFamily:
    return CoreferenceFamily(config)
