"""The reasoning family (Context Rot Evaluation): items, the family, its layouts and its analysis.

It registers here, as any family does, with the two things it brings of its own: it plans its own
prompts (a target problem inside filler made of other problems) and its own analysis."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from rotscope.config.experiment import ExperimentConfig
from rotscope.rows import Row
from rotscope.tasks import FamilyHooks, register_task
from rotscope.tasks.reasoning.family import LAYOUT_COPIES, TASK, build_reasoning_cases
from rotscope.tasks.reasoning.layout import plan_reasoning
from rotscope.tasks.reasoning.options import ReasoningConfig
from rotscope.types import Case, FamilyPrompts, Tokenizer

__all__ = ["ReasoningFamily", "analyse", "plan_reasoning"]


def analyse(rows: list[Row]) -> dict[str, Any]:
    """The family's own analysis (``analysis.analyse``), imported when the summary asks for it:
    reading a config imports this package for its options section (``options``), and the analysis
    brings the statistics libraries."""
    from rotscope.tasks.reasoning.analysis import analyse as own

    return own(rows)


@dataclass(frozen=True)
class ReasoningFamily:
    config: ExperimentConfig
    name: str = TASK

    def cases(self) -> Iterable[Case]:
        return build_reasoning_cases()

    def plan_prompts(self, tokenizer: Tokenizer, neutral_corpus: Callable[[], Any]) -> FamilyPrompts:
        source = self.config.section(ReasoningConfig).source
        plan = plan_reasoning(self.config, tokenizer, neutral_corpus)
        return FamilyPrompts(
            rendered=tuple((placed.case, placed.layout, placed.prompt) for placed in plan.placed),
            rejected=tuple(plan.rejected),
            corpus={"source": source, "digest": plan.digest},
            corpus_label=f"reasoning pool ({source})",
        )


@register_task(TASK, hooks=FamilyHooks(analyse=analyse, layout_order=tuple(LAYOUT_COPIES)))
def reasoning_family(config: ExperimentConfig) -> ReasoningFamily:
    return ReasoningFamily(config)
