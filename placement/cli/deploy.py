"""``placement deploy PLAN --format k8s|dynamo|llm-d --engine vllm|sglang|trtllm --out DIR``.

Writes the deployment folder of :func:`placement.deploy.build` (see ``docs/deploy.md``): manifests
per pool and domain group, vendor-neutral records for chips no engine runs, ``bench.sh`` and a
README. ``--instance`` makes the deployment a verified one: the plan must answer that instance (its
name and SHA-256) and pass ``placement check`` against it, and ``bench.sh`` gets the classes' prompt
and output lengths. The folder is written whole or not at all, replacing an earlier deploy's
(:func:`placement.core.output.write_folder_atomic`).
"""

import re
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from placement.cli.options import CalibrationOpt, PlanArg
from placement.core.errors import InputError, VerificationError

__all__ = ["DeployFormat", "Engine", "check_image", "deploy_command", "parse_chips_per_node"]

#: A container image reference (the distribution/reference grammar): ``[domain[:port]/]path[:tag][@digest]``,
#: e.g. ``nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.4.1``.
_PATH_PART = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::[0-9]+)?"
_IMAGE = re.compile(rf"(?:{_DOMAIN}/)?{_PATH_PART}(?:/{_PATH_PART})*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?"
                    r"(?:@sha256:[0-9a-f]{64})?")


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


def parse_chips_per_node(value: str | None) -> dict[str, int]:
    """``"h100=8,rubin=4"`` → ``{"h100": 8, "rubin": 4}``; errors name ``--chips-per-node``.

    Examples
    --------
    >>> parse_chips_per_node("h100=8, rubin=4")
    {'h100': 8, 'rubin': 4}
    >>> parse_chips_per_node("h100")
    Traceback (most recent call last):
    ...
    placement.core.errors.InputError: --chips-per-node: expected chip=N (N >= 1), got 'h100'
    """
    from placement.core.schema import NAME_PATTERN

    out: dict[str, int] = {}
    for item in (v.strip() for v in (value or "").split(",")):
        if not item:
            continue
        chip, _, n = item.partition("=")
        if not n.strip().isdigit() or int(n) < 1 or not re.fullmatch(NAME_PATTERN, chip.strip()):
            raise InputError(f"expected chip=N (N >= 1), got {item!r}", field="--chips-per-node")
        out[chip.strip()] = int(n)
    return out


def check_image(image: str | None) -> None:
    """Refuse an ``--image`` that is not a container image reference (``registry/path:tag``).

    Examples
    --------
    >>> check_image("nvcr.io/nvidia/ai-dynamo/vllm-runtime:latest")
    >>> check_image("vllm/vllm-openai:v0.9; rm -rf /")
    Traceback (most recent call last):
    ...
    placement.core.errors.InputError: --image: expected a container image reference (registry/path:tag), got 'vllm/vllm-openai:v0.9; rm -rf /'
    """
    if image is not None and not (len(image) <= 255 and _IMAGE.fullmatch(image)):
        raise InputError(f"expected a container image reference (registry/path:tag), got {image!r}",
                         field="--image")


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
    from placement.core.output import write_folder_atomic
    from placement.core.plan import read_plan
    from placement.deploy import build, written_here

    per_node = parse_chips_per_node(chips_per_node)
    check_image(image)
    if str(out) == "-":
        raise InputError("deploy writes a folder of files; expected a folder path", field="--out")
    plan = read_plan(plan_path)
    inst = None
    if instance is not None:
        from placement.core.api import check
        from placement.core.provenance import read_plan_instance

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
