"""Which experiments may take ``placement.separations``: only families whose cases have facts to
combine (``prompt.separation.fact_ids``), in static filler; anything else is one line of bad input
before anything is rendered."""

from __future__ import annotations

from rotscope.config.experiment import ExperimentConfig
from rotscope.errors import BadInput
from rotscope.prompt.separation import combines_facts
from rotscope.prompt.session_render import SESSION_FILLER
from rotscope.tasks import get_task
from rotscope.types import Case, PlansOwnPrompts

TAKES_SEPARATIONS = ("latent", "join", "multihop")
"""The built-in families whose cases combine facts (a case file's cases do where they have support
pieces); named in the refusal."""


def check_separations(config: ExperimentConfig, cases: list[Case]) -> None:
    """Bad input where ``placement.separations`` is given to an experiment one of whose tasks has no
    facts to combine, or in session filler (its turns are placed by ``prompt.session``)."""
    if not config.placement.separations:
        return
    if config.filler.kind == SESSION_FILLER:
        raise BadInput("placement.separations: not available in session filler (filler.kind: session)")
    for task in config.tasks:
        own = isinstance(get_task(task, config), PlansOwnPrompts)
        if own or not combines_facts(case for case in cases if case.task == task and not case.control):
            raise BadInput(
                f"placement.separations: task {task} has no facts to combine (separations are an axis "
                f"of {', '.join(TAKES_SEPARATIONS)}, and of case files whose cases have support pieces)"
            )
