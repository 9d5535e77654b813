"""rotscope's verified prompts as Inspect samples: one sample per work item, its messages the very
messages a rotscope run sends, its metadata the layout and the exact token spans of its evidence.

Spans are token positions under the tokenizer the prompts were rendered with, named in every
sample's metadata and in the task's: they are exact for a model with that tokenizer (a rotscope
model, ``--model rotscope/...``) and approximate for any other."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageSystem, ChatMessageUser

from rotscope.config.experiment import ExperimentConfig, build_config, read_config_file
from rotscope.errors import BadInput
from rotscope.integrations.inspect.cells import cell_label
from rotscope.integrations.inspect.verified import remember
from rotscope.types import WorkItem

SPANS_NOTE = (
    "Token spans are exact for a model with this tokenizer only (--model rotscope/<the same model>); "
    "for any other model they are positions under this tokenizer, not the model's."
)


def numbers(value: str | int | float | Sequence[Any], field: str) -> list[Any]:
    """A task argument given as ``256,512`` on the command line, a number, or a list; numeric
    strings become numbers, names (``midpoint``) stay names."""
    items: Sequence[Any] = (
        value.split(",") if isinstance(value, str) else (value if isinstance(value, Sequence) else [value])
    )
    parsed: list[Any] = []
    for item in items:
        text = str(item).strip()
        if not text:
            raise BadInput(f"-T {field}: empty entry in {value!r}")
        try:
            parsed.append(int(text))
        except ValueError:
            try:
                parsed.append(float(text))
            except ValueError:
                parsed.append(text)
    return parsed


def task_config(family: str | None, tokenizer_model: str, **fields: Any) -> ExperimentConfig:
    """The experiment an Inspect task plans: ``fields`` set over ``config`` (an experiment file)
    when one is given; ``family`` names the task family unless the file does."""
    config_file = fields.pop("config", None)
    data: dict[str, Any] = read_config_file(Path(config_file)) if config_file else {}
    data.setdefault("name", f"inspect-{family or 'experiment'}")
    if family is not None:
        data["tasks"] = [family]
    for field in ("lengths", "depths"):
        if fields.get(field) is not None:
            data[field] = numbers(fields.pop(field), field)
    data.update({key: value for key, value in fields.items() if value is not None})
    data["model"] = tokenizer_model
    return build_config(data, config_file or "task arguments")


def to_messages(messages: Sequence[Mapping[str, str]]) -> list[ChatMessage]:
    kinds: dict[str, type[ChatMessageSystem | ChatMessageUser | ChatMessageAssistant]] = {
        "system": ChatMessageSystem,
        "user": ChatMessageUser,
        "assistant": ChatMessageAssistant,
    }
    return [kinds[message["role"]](content=message["content"]) for message in messages]


def item_metadata(item: WorkItem, tokenizer: Mapping[str, str]) -> dict[str, Any]:
    """A sample's metadata; ``tokenizer`` names the tokenizer its spans are positions under."""
    layout, case = item.layout, item.case
    return {
        "task": case.task,
        "case_id": case.case_id,
        "instance_id": item.instance_id,
        "control": case.control,
        "length": layout.length_tokens,
        "prompt_tokens": item.prompt.prompt_tokens,
        "haystack_tokens": item.prompt.haystack_tokens,
        "depth": layout.depth,
        "position": layout.position,
        "cell": cell_label(case.task, layout.length_tokens, layout.depth, layout.position, layout.filler),
        "trial": item.trial,
        "spans": [
            {
                "evidence_id": span.evidence_id,
                "token_start": span.token_start,
                "token_end": span.token_end,
                "depth": span.depth,
            }
            for span in item.prompt.spans
        ],
        "question": case.question,
        "expected": case.oracle.answer,
        **tokenizer,
        "item_id": item.item_id,
    }


def samples(items: Sequence[WorkItem], tokenizer: Mapping[str, str]) -> MemoryDataset:
    """One sample per work item; the verified ids are remembered for the rotscope provider."""
    built = []
    for item in items:
        remember(item.prompt, item.params.max_tokens)
        built.append(
            Sample(
                id=item.item_id,
                input=to_messages(item.prompt.messages),
                target=[item.case.oracle.answer, *item.case.oracle.aliases]
                if item.case.oracle.answer
                else "",
                metadata=item_metadata(item, tokenizer),
            )
        )
    return MemoryDataset(built, name="rotscope")
