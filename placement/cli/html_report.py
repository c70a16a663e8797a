"""Command ``report``: a plan (and optionally its instance and a study) as one self-contained HTML page.

The page is :func:`placement.report.render_html`'s. With ``--instance`` the fleet is drawn from the
instance's graph (every domain group and switch, with its chips) and the plan must be for that
instance (its name and, when the plan records it, its SHA-256); without, from the plan's links and pools. ``--sweep`` takes the JSON of ``pareto --json``
or ``sweep --json``.
"""

from pathlib import Path
from typing import Annotated

import typer

from placement.cli.options import CalibrationOpt, PlanArg

__all__ = ["report_command"]


def report_command(
    plan_path: PlanArg,
    html: Annotated[Path, typer.Option("--html", help="write the HTML page here (- for standard output)")],
    instance: Annotated[Path | None, typer.Option("--instance", help="the plan's instance: draw its whole "
                                                  "fleet (default: the fleet seen by the plan)")] = None,
    sweep: Annotated[Path | None, typer.Option("--sweep", help="JSON written by pareto --json or sweep --json: "
                                               "add its chart")] = None,
    calibration: CalibrationOpt = None,
) -> None:
    """Write an HTML report of a plan: fleet and placement, cost and power, latency vs SLOs, sweep chart."""
    from pydantic import ValidationError

    from placement.cli.consoles import err
    from placement.core.instance.errors import InputError
    from placement.core.instance.loading import read_document
    from placement.core.plans.output import check_writable, refuse_inputs, write_atomic
    from placement.core.plans.plan import read_plan
    from placement.report import render_html
    from placement.studies.sweep import SweepResult

    check_writable(html)
    refuse_inputs({"--html": html}, [p for p in (plan_path, instance, sweep) if p is not None])
    plan = read_plan(plan_path)
    graph = None
    if instance is not None:
        from placement.core.instance.context import Context
        from placement.core.plans.provenance import read_plan_instance

        graph = Context.of(read_plan_instance(plan, plan_path, instance, calibration), str(instance)).graph
    study = None
    if sweep is not None:
        try:
            study = SweepResult.model_validate(read_document(sweep))
        except ValidationError as e:
            first = e.errors(include_url=False)[0]
            raise InputError(f"{first['msg'].lower()} (expected the JSON of pareto --json or sweep --json)",
                             file=str(sweep), field=".".join(str(x) for x in first["loc"])) from None
    write_atomic(html, render_html(plan, graph, study))
    if str(html) != "-":
        err.print(f"wrote {html}", highlight=False)
