"""Which deviations from a frozen plan a paired session's subject makes on purpose: the candidate's
subject is the point of the pair; the baseline's only when the plan pre-registered its definition
(the plan was frozen from an experiment file whose ``subjects:`` held it). A rotscope upgrade since
the plan (``UPGRADE_FIELDS``) is accepted for the baseline too when it is today's code: both
subjects of a pair are assembled by the same installed code in one process, so they stay comparable."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rotscope._version import __version__
from rotscope.config.experiment import ExperimentConfig
from rotscope.config.options import without_unset_later_sections
from rotscope.config.subjects import find_subject
from rotscope.plan.digests import assembler_digest
from rotscope.plan.manifest import UPGRADE_FIELDS, Deviation


def intended_by(
    config: ExperimentConfig, plan: Mapping[str, Any] | None, role: str
) -> Callable[[Deviation], bool]:
    """What a subject itself changes from the plan: for the candidate its model, its subject group
    and the fields its overrides set (the point of the pair); for the baseline the same only when
    the plan pre-registered its subject's definition, else nothing but which subject it is and a
    rotscope upgrade to today's assembler (``today``)."""
    subject = find_subject(config, config.subject) if config.subject else None
    planned = ((plan or {}).get("config") or {}).get("subjects") or []
    registered = subject is not None and any(
        dump in planned for dump in _as_planned(subject.model_dump(mode="json"))
    )
    fields = {"config.subject", "config.subjects"}
    if role == "candidate" or registered:
        fields.add("config.model")
        if subject is not None:
            fields |= {f"config.{name}" for name in subject.override_fields()}

    now: dict[str, str] = {}

    def intended(deviation: Deviation) -> bool:
        own = deviation.field.startswith("subject.") and (role == "candidate" or registered)
        if deviation.field in UPGRADE_FIELDS and not now:
            now.update(today())
        upgraded = deviation.field in UPGRADE_FIELDS and deviation.actual == now[deviation.field]
        return own or upgraded or deviation.field in fields

    return intended


def _as_planned(subject: dict[str, Any]) -> list[dict[str, Any]]:
    """A subject's definition as a manifest stores it (empty overrides of a later section left out,
    ``rotscope.config.spec.SectionSpec.identity_when_set``), and as it is, for a plan frozen with
    them."""
    stored = without_unset_later_sections(ExperimentConfig, {"subjects": [dict(subject)]})["subjects"][0]
    return [stored, subject]


def today() -> dict[str, str]:
    """The values of ``UPGRADE_FIELDS`` for the code installed now (what assembles both subjects)."""
    return {"subject.assembler_digest": assembler_digest(), "subject.rotscope_version": __version__}


def upgrade_line(plan: Mapping[str, Any] | None) -> str | None:
    """The line a paired session starts with when the plan was frozen by other prompt-shaping code
    than today's (accepted and recorded for both subjects); ``None`` when it was not."""
    frozen = (plan or {}).get("subject") or {}
    now = today()
    if plan is None or frozen.get("assembler_digest") == now["subject.assembler_digest"]:
        return None
    return (
        f"the plan was frozen by rotscope {frozen.get('rotscope_version')} "
        f"(assembler {frozen.get('assembler_digest')}); both subjects are assembled by rotscope "
        f"{now['subject.rotscope_version']} (assembler {now['subject.assembler_digest']}): recorded "
        "as an accepted plan deviation"
    )
