"""``placement deploy PLAN --format k8s|dynamo|llm-d --engine vllm|sglang|trtllm --out DIR``.

Writes the deployment folder of :func:`placement.deploy.build` (see ``docs/deploy.md``): manifests
per pool and domain group, vendor-neutral records for chips no engine runs, ``bench.sh`` and a
README. ``--instance`` makes the deployment a verified one: the plan must answer that instance (its
name and SHA-256) and pass ``placement check`` against it, and ``bench.sh`` gets the classes' prompt
and output lengths. The folder is written whole or not at all, replacing an earlier deploy's
(:func:`placement.core.plans.output.write_folder_atomic`).
"""

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from placement.cli.options import CalibrationOpt, PlanArg
from placement.core.instance.errors import InputError, VerificationError

__all__ = ["DeployFormat", "Engine", "deploy_command"]


class DeployFormat(StrEnum):
    """What ``deploy`` writes (:data:`placement.deploy.FORMATS`)."""

    k8s = "k8s"
    dynamo = "dynamo"
    llm_d = "llm-d"


class Engine(StrEnum):
    """The serving engine of the runnable pools (:data:`placement.deploy.engines.ENGINES`)."""

    vllm = "vllm"
    sglang = "sglang"
    trtllm = "trtllm"


def deploy_command(
    plan_path: PlanArg,
    fmt: Annotated[DeployFormat, typer.Option("--format", help="k8s | dynamo | llm-d")],
    out: Annotated[Path, typer.Option("--out", help="folder to write (created if missing; an earlier deploy's is "
                                      "replaced)")],
    engine: Annotated[Engine, typer.Option("--engine", help="vllm | sglang | trtllm")] = Engine.vllm,
    instance: Annotated[Path | None, typer.Option("--instance", help="the plan's instance: the plan must match "
                                                  "its hash and verify against it; gives bench.sh the token "
                                                  "lengths")] = None,
    image: Annotated[str | None, typer.Option("--image", help="container image (default: the engine's)")] = None,
    chips_per_node: Annotated[str | None, typer.Option("--chips-per-node", help="accelerators per node, "
                                                       "e.g. h100=8,rubin=4 (defaults in docs/deploy.md)")] = None,
    checkpoint: Annotated[str | None, typer.Option("--checkpoint", help="Hugging Face repository the engines load "
                                                   "(default: the model's sourced checkpoint in the plan's weight "
                                                   "precision)")] = None,
    calibration: CalibrationOpt = None,
) -> None:
    """Deployment manifests for a plan: engine arguments, Kubernetes/Dynamo/llm-d documents, bench.sh."""
    from placement.cli.consoles import err
    from placement.cli.consoles import out as console
    from placement.core.plans.output import write_folder_atomic
    from placement.core.plans.plan import read_plan
    from placement.deploy import build, written_here
    from placement.deploy.names import check_image, parse_chips_per_node

    per_node = parse_chips_per_node(chips_per_node)
    check_image(image)
    if str(out) == "-":
        raise InputError("deploy writes a folder of files; expected a folder path", field="--out")
    plan = read_plan(plan_path)
    inst = None
    if instance is not None:
        from placement.core.plans.provenance import read_plan_instance
        from placement.core.verify.api import check

        inst = read_plan_instance(plan, plan_path, instance, calibration)
        result = check(inst, plan, source=str(instance), plan_source=str(plan_path))
        for w in result.warnings:
            err.print(f"warning: {w}", highlight=False, markup=False, soft_wrap=True)
        if not result.ok:
            n = len(result.violations)
            more = f" (and {n - 1} more: placement check lists them)" if n > 1 else ""
            raise VerificationError(f"{plan_path}: the plan does not verify against {instance}: "
                                    f"{result.violations[0]}{more}")
    files = build(plan, fmt=str(fmt), engine=str(engine), instance=inst, image=image, chips_per_node=per_node,
                  checkpoint=checkpoint,
                  warn=lambda w: err.print(f"warning: {w}", highlight=False, markup=False, soft_wrap=True))
    write_folder_atomic(out, files, owned=written_here, executable={"bench.sh"}, field="--out")
    neutral = "vendor-neutral.yaml" in files
    console.print(f"[green]wrote[/green] {len(files)} files to {out} ({fmt}, {engine})"
                  + (": some pools run on chips no engine targets, see vendor-neutral.yaml and README.md"
                     if neutral else ""), highlight=False, soft_wrap=True)
