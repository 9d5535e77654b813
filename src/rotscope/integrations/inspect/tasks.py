"""rotscope's task families as Inspect tasks: ``inspect eval rotscope/niah -T lengths=256,512
--model rotscope/fake/lexical``. Task arguments (``-T``) are experiment fields: ``lengths``,
``depths``, ``limit``, ``seed``, ``trials``; ``config`` an experiment file to start from;
``tokenizer`` the rotscope model whose tokenizer renders the prompts and places the spans."""

from __future__ import annotations

from typing import Any

from inspect_ai import Task, task
from inspect_ai.model import GenerateConfig, get_model
from inspect_ai.solver import generate

from rotscope.backends import create_backend
from rotscope.config.experiment import BUNDLED_MODEL
from rotscope.errors import BadInput
from rotscope.integrations.inspect.dataset import SPANS_NOTE, samples, task_config
from rotscope.integrations.inspect.provider import RotscopeModelAPI
from rotscope.integrations.inspect.scorer import deterministic
from rotscope.plan.workitems import build_plan


def inspect_model_tokenizer() -> str:
    """The rotscope model of the Inspect model when it is one (``--model rotscope/X``: X), so the
    spans are the model's own; else the bundled model's tokenizer, stated in the task metadata."""
    try:
        api = get_model().api
    except Exception:  # no active model (a task built outside an eval)
        return BUNDLED_MODEL
    return api.model_name if isinstance(api, RotscopeModelAPI) else BUNDLED_MODEL


def task_argument_error(error: BadInput) -> Exception:
    """Bad task arguments (``-T lengths=256,99999999999``) as the error Inspect's command line
    prints as its one message (``PrerequisiteError``), not a traceback of its task group with the
    cause at its bottom; rotscope's own ``BadInput`` where this Inspect has no such class."""
    try:
        from inspect_ai._util.error import PrerequisiteError
    except ImportError:  # pragma: no cover - an Inspect without it: the traceback, cause last
        return error
    prerequisite = PrerequisiteError(f"rotscope: {error}")
    prerequisite.args = (f"rotscope: {error}",)  # str() of it, for a caller of inspect_ai.eval()
    return prerequisite


def rotscope_task(family: str | None, tokenizer: str | None, fields: dict[str, Any]) -> Task:
    tokenizer_model = tokenizer or inspect_model_tokenizer()
    try:
        config = task_config(family, tokenizer_model, **fields)
        backend = create_backend(config)
    except BadInput as error:
        raise task_argument_error(error) from None
    try:
        items = build_plan(config, backend).items  # verified; rejected prompts are never samples
        used = backend.tokenizer()
        named = {"tokenizer_model": tokenizer_model, "tokenizer": used.name}
        named["tokenizer_digest"] = used.digest()
    except BadInput as error:
        raise task_argument_error(error) from None
    finally:
        backend.close()
    name = config.tasks[0] if family is None and len(config.tasks) == 1 else family or config.name
    return Task(
        dataset=samples(items, named),
        solver=generate(),
        scorer=deterministic({item.item_id: item for item in items}),
        config=GenerateConfig(
            temperature=config.generation.temperature,
            max_tokens=config.generation.max_tokens,  # unset: each item's own (``verified_budget``)
            seed=config.generation.seed,
        ),
        name=name,
        metadata={
            "rotscope_tasks": config.tasks,
            **named,
            "spans": SPANS_NOTE,
            "lengths": config.lengths,
            "depths": config.depths,
        },
    )


@task
def niah(
    lengths: str | list[int] | None = None,
    depths: str | list[Any] | None = None,
    limit: int | None = None,
    seed: int | None = None,
    trials: int | None = None,
    tokenizer: str | None = None,
    config: str | None = None,
) -> Task:
    """Needle in a haystack, rendered on a model's own tokens with exact spans."""
    fields = {"lengths": lengths, "depths": depths, "limit": limit, "seed": seed, "trials": trials}
    return rotscope_task("niah", tokenizer, {**fields, "config": config})


@task
def nolima(
    lengths: str | list[int] | None = None,
    depths: str | list[Any] | None = None,
    limit: int | None = None,
    seed: int | None = None,
    trials: int | None = None,
    tokenizer: str | None = None,
    config: str | None = None,
) -> Task:
    """NoLiMa-style probes: the question shares no words with the needle."""
    fields = {"lengths": lengths, "depths": depths, "limit": limit, "seed": seed, "trials": trials}
    return rotscope_task("nolima", tokenizer, {**fields, "config": config})


@task
def experiment(config: str, tokenizer: str | None = None) -> Task:
    """Any rotscope experiment file (``-T config=exp.yaml``): its tasks, grid and filler."""
    return rotscope_task(None, tokenizer, {"config": config})
