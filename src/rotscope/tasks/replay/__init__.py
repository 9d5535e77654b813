"""``replay``: recorded production prompts, their marked evidence moved through their own padding
(``records`` reads and takes apart the file, ``layout`` builds and verifies the position matrix)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rotscope.config.experiment import ExperimentConfig
from rotscope.errors import BadInput
from rotscope.tasks import FamilyHooks, register_task
from rotscope.tasks.replay.layout import digest, render_recording
from rotscope.tasks.replay.records import TASK, Recording, read_replay_file
from rotscope.types import Case, FamilyPrompts, Layout, Rejection, RenderedPrompt, Tokenizer

__all__ = ["ReplayFamily", "read_replay_file", "render_recording"]


@dataclass(frozen=True)
class ReplayFamily:
    """Recorded prompts as a family that plans its own prompts (``PlansOwnPrompts``)."""

    config: ExperimentConfig
    name: str = TASK

    def recordings(self) -> list[Recording]:
        if not self.config.replay:
            raise BadInput(
                "replay: the replay task family needs a file of recorded prompts: replay: PATH.jsonl"
            )
        return read_replay_file(Path(self.config.replay).expanduser())[: self.config.limit]

    def cases(self) -> list[Case]:
        return [recording.case for recording in self.recordings()]

    def plan_prompts(self, tokenizer: Tokenizer, neutral_corpus: Callable[[], Any]) -> FamilyPrompts:
        rendered: list[tuple[Case, Layout, RenderedPrompt]] = []
        rejected: list[Rejection] = []
        paddings: list[str] = []
        for recording in self.recordings():
            placed, refused = render_recording(recording, self.config, tokenizer)
            rendered.extend(placed)
            rejected.extend(refused)
            paddings.append(digest(recording.padding))
        return FamilyPrompts(
            rendered=tuple(rendered),
            rejected=tuple(rejected),
            corpus={
                "source": f"recorded padding ({self.config.replay})",
                "digest": digest(",".join(paddings)),
            },
            corpus_label=f"recorded padding ({self.config.replay})",
        )


@register_task(TASK, hooks=FamilyHooks(own_lengths=True))
def replay_family(config: ExperimentConfig) -> ReplayFamily:
    return ReplayFamily(config)
