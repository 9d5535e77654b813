"""Which deviations from a frozen plan a paired session's subject makes on purpose: the candidate's
subject is the point of the pair; the baseline's only when the plan pre-registered its definition
(the plan was frozen from an experiment file whose ``subjects:`` held it)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rotscope.config import ExperimentConfig
from rotscope.plan.manifest import Deviation
from rotscope.subjects import find_subject


def intended_by(
    config: ExperimentConfig, plan: Mapping[str, Any] | None, role: str
) -> Callable[[Deviation], bool]:
    """What a subject itself changes from the plan: for the candidate its model, its subject group
    and the fields its overrides set (the point of the pair); for the baseline the same only when
    the plan pre-registered its subject's definition, else nothing but which subject it is."""
    subject = find_subject(config, config.subject) if config.subject else None
    planned = ((plan or {}).get("config") or {}).get("subjects") or []
    registered = subject is not None and subject.model_dump(mode="json") in planned
    fields = {"config.subject", "config.subjects"}
    if role == "candidate" or registered:
        fields.add("config.model")
        if subject is not None:
            fields |= {f"config.{name}" for name in subject.override_fields()}

    def intended(deviation: Deviation) -> bool:
        own = deviation.field.startswith("subject.") and (role == "candidate" or registered)
        return own or deviation.field in fields

    return intended
