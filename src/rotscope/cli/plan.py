"""rotscope plan."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from rotscope.cli.common import _build, _guarded, app, console
from rotscope.config.experiment import ExperimentConfig, build_config
from rotscope.errors import BadInput

if TYPE_CHECKING:
    from rotscope.gate.record import Power
    from rotscope.gate.sizing import Design, Truth
    from rotscope.types import Manifest
    from rotscope.types.manifest import ManifestGrid


def _positions(experiment: ExperimentConfig, grid: ManifestGrid) -> str:
    """The plan's positions, as the run's planning line names them: a family that places its items
    at layouts of its own (reasoning) uses none of the grid's depths."""
    from rotscope.execution.workflows.planned import own_layout_tasks

    own = own_layout_tasks(experiment)
    placed = f"{', '.join(own)} at layouts of its own"
    if own and len(own) == len(experiment.tasks):
        return placed
    positions = f"{len(grid['positions'])} positions"
    return f"{positions} ({placed})" if own else positions


@app.command("plan")
def plan_command(
    config: Annotated[Path, typer.Argument(help="Experiment YAML.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Plan file (JSON) to write.")],
    power: Annotated[
        float | None,
        typer.Option(
            "--power",
            help="Pick cases_per_task so that an identical candidate PASSes with this probability "
            "(generated families); a case file with fewer cases exits 2.",
        ),
    ] = None,
    pilot: Annotated[
        Path | None,
        typer.Option(
            "--pilot",
            help="A pilot run folder: simulate the gate's power at its accuracy instead of an assumed 0.90.",
        ),
    ] = None,
) -> None:
    """Freeze a pre-registration manifest: digests, grid, seeds, decoding and the gate's analysis,
    with what the gate can decide at its size (simulated through the gate's own tests)."""
    from rotscope.execution.workflows.dry_run import planned_manifest
    from rotscope.gate.view import power_lines
    from rotscope.plan.manifest import write_manifest
    from rotscope.report.placement import placement_lines

    def body() -> None:
        if power is not None and not 0.0 < power < 1.0:
            raise BadInput(f"--power {power}: a probability between 0 and 1 (e.g. 0.8)")
        truth = _truth(pilot)
        experiment = _build(config, {})
        manifest, plan = planned_manifest(experiment)
        if power is not None:
            experiment, manifest, plan = _sized(experiment, plan, power, config, truth)
        digest = write_manifest(manifest, output)
        grid = manifest["grid"]
        console.print(
            f"plan {digest} -> {output}: {manifest['planned']['work_items']} work items, tasks "
            f"{','.join(grid['tasks'])}, lengths {grid['lengths']}, {_positions(experiment, grid)}, "
            f"{grid['repetitions']} repetition(s); cases {manifest['cases']['digest']}, filler "
            f"{manifest['filler']['digest']}, template {manifest['subject']['template_digest']}",
            markup=False,
        )
        for line in power_lines(_plan_power(experiment, plan, truth)):
            console.print(line, markup=False, soft_wrap=True)
        for line in placement_lines(plan.items):
            console.print(line, markup=False, soft_wrap=True)

    _guarded(body)


def _truth(pilot: Path | None) -> Truth:
    """The truth the gate's power is simulated under: the pilot run's accuracy, else the assumed
    0.90, said either way (issue 48: a plan sized at an unstated 0.90 promised what the real
    accuracy did not give)."""
    from rotscope.gate.pilot import pilot_accuracy
    from rotscope.gate.sizing import Truth

    if pilot is None:
        truth = Truth()
        console.print(
            f"gate power assumes baseline accuracy {truth.accuracy:.2f} (no --pilot run given); its "
            "guarantees hold there only",
            markup=False,
        )
        return truth
    found = pilot_accuracy(pilot)
    console.print(f"gate power at {found.describe()}", markup=False)
    return Truth(accuracy=min(max(found.accuracy, 0.01), 0.99))


def _plan_power(experiment: ExperimentConfig, plan: Any, truth: Truth) -> Power:
    from rotscope.gate.judgement import rule_of
    from rotscope.gate.sizing import Design, gate_power
    from rotscope.plan.slices import gate_slices

    design = Design.from_slices(gate_slices(plan, experiment.gate.slice_fields))
    return gate_power(design, rule_of(experiment.gate), truth=_shared(truth, experiment, design))


def _shared(truth: Truth, experiment: ExperimentConfig, design: Design) -> Truth:
    """``truth`` with the experiment's haystack variants where its cases share them (fewer variants
    than cases per task): the gate clusters on them, so the plan's power must too."""
    from dataclasses import replace

    variants = experiment.filler.variants
    cases = min(design.cases_per_task().values(), default=0)
    return replace(truth, variants=variants) if variants is not None and 1 < variants < cases else truth


def _sized(
    experiment: ExperimentConfig, plan: Any, power: float, config: Path, truth: Truth
) -> tuple[ExperimentConfig, Manifest, Any]:
    """``experiment`` with the ``cases_per_task`` at which an identical candidate PASSes with
    probability ``power``; ``BadInput`` where a task cannot have that many cases."""
    from rotscope.execution.workflows.dry_run import planned_manifest
    from rotscope.gate.judgement import rule_of
    from rotscope.gate.sizing import Design, cases_for_pass
    from rotscope.plan.slices import gate_slices

    design = Design.from_slices(gate_slices(plan, experiment.gate.slice_fields))
    if not design.keys:
        raise BadInput("plan --power: the plan fills no gate slice")
    shared = _shared(truth, experiment, design)
    # the score t on G clusters never exceeds sqrt(G - 1): below 6 it cannot show non-inferiority
    hopeless = 1 < shared.variants < 6
    needed = None if hopeless else cases_for_pass(design, rule_of(experiment.gate), power, truth=shared)
    if needed is None and shared.variants:
        raise BadInput(
            f"plan --power {power:.2f}: the cases share {shared.variants} haystack variants, and the gate "
            "clusters on them: so few clusters cannot show non-inferiority at any number of cases; give "
            "each case its own haystack (filler.variants)"
        )
    if needed is None:
        raise BadInput(
            f"plan --power {power:.2f}: no number of cases up to 1,000 per task reaches it at margin "
            f"{experiment.gate.margin} over {len(design.keys)} slices; widen gate.margin or use fewer slices"
        )
    if experiment.limit is not None and experiment.limit < needed:
        raise BadInput(
            f"plan --power {power:.2f}: {needed} cases per task needed, but limit {experiment.limit} keeps "
            "fewer; raise or drop limit"
        )
    sized = build_config({**experiment.model_dump(mode="json"), "cases_per_task": needed}, str(config))
    manifest, sized_plan = planned_manifest(sized)
    have = Design.from_slices(gate_slices(sized_plan, sized.gate.slice_fields)).cases_per_task()
    short = {task: count for task, count in have.items() if count < needed}
    if short:
        task, count = next(iter(short.items()))
        raise BadInput(
            f"plan --power {power:.2f}: an identical candidate PASSes with that probability from {needed} "
            f"cases per task; task {task} has {count} (add {needed - count} cases)"
        )
    if have == design.cases_per_task():  # no generated family: the case files already suffice
        console.print(
            f"{needed} cases per task let an identical candidate PASS with probability at least {power:.2f} "
            f"at baseline accuracy {truth.accuracy:.2f}; "
            f"the plan has {', '.join(f'{task} {count}' for task, count in have.items())}",
            markup=False,
        )
        return experiment, *planned_manifest(experiment)
    console.print(
        f"cases_per_task {needed}: an identical candidate PASSes with probability at least {power:.2f} at "
        f"baseline accuracy {truth.accuracy:.2f}; "
        f"runs under this plan need cases_per_task: {needed} in {config}",
        markup=False,
    )
    return sized, manifest, sized_plan
