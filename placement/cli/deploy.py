"""``placement deploy PLAN --format k8s|dynamo|llm-d --engine vllm|sglang|trtllm --out DIR``.

Writes the deployment folder of :func:`placement.deploy.build` (see ``docs/deploy.md``): manifests
per pool and domain group, vendor-neutral records for chips no engine runs, ``bench.sh`` and a
README. ``--instance`` checks the plan answers that instance (its SHA-256) and gives ``bench.sh``
the classes' prompt and output lengths.
"""

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from placement.cli.options import PlanArg
from placement.core.errors import InputError

__all__ = ["DeployFormat", "Engine", "deploy_command", "parse_chips_per_node"]


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
    out: dict[str, int] = {}
    for item in (v.strip() for v in (value or "").split(",")):
        if not item:
            continue
        chip, _, n = item.partition("=")
        if not n.strip().isdigit() or int(n) < 1:
            raise InputError(f"expected chip=N (N >= 1), got {item!r}", field="--chips-per-node")
        out[chip.strip()] = int(n)
    return out


def deploy_command(
    plan_path: PlanArg,
    fmt: Annotated[DeployFormat, typer.Option("--format", help="k8s | dynamo | llm-d")],
    out: Annotated[Path, typer.Option("--out", help="folder to write (created if missing)")],
    engine: Annotated[Engine, typer.Option("--engine", help="vllm | sglang | trtllm")] = Engine.vllm,
    instance: Annotated[Path | None, typer.Option("--instance", help="the plan's instance: checked against "
                                                  "the plan's hash; gives bench.sh the token lengths")] = None,
    image: Annotated[str | None, typer.Option("--image", help="container image (default: the engine's)")] = None,
    chips_per_node: Annotated[str | None, typer.Option("--chips-per-node", help="accelerators per node, "
                                                       "e.g. h100=8,rubin=4 (defaults in docs/deploy.md)")] = None,
) -> None:
    """Deployment manifests for a plan: engine arguments, Kubernetes/Dynamo/llm-d documents, bench.sh."""
    from placement.cli.consoles import out as console
    from placement.core.output import write_atomic
    from placement.core.plan import read_plan
    from placement.deploy import build

    per_node = parse_chips_per_node(chips_per_node)
    if str(out) == "-":
        raise InputError("deploy writes a folder of files; expected a folder path", field="--out")
    if out.exists() and not out.is_dir():
        raise InputError("exists and is not a folder; expected a folder path", file=str(out), field="--out")
    plan = read_plan(plan_path)
    inst = None
    if instance is not None:
        from placement.core.plan import read_plan_instance
        from placement.core.provenance import instance_sha256

        inst = read_plan_instance(plan, plan_path, instance)
        if plan.provenance is not None and plan.provenance.instance_sha256 != instance_sha256(inst):
            raise InputError(f"plan was solved for another version of {inst.name!r} (instance SHA-256 "
                             f"{plan.provenance.instance_sha256[:12]}…, this file {instance_sha256(inst)[:12]}…); "
                             "re-solve or give the matching instance", file=str(plan_path),
                             field="provenance.instance_sha256")
    files = build(plan, fmt=str(fmt), engine=str(engine), instance=inst, image=image, chips_per_node=per_node)
    out.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, text)
    (out / "bench.sh").chmod(0o755)
    neutral = "vendor-neutral.yaml" in files
    console.print(f"[green]wrote[/green] {len(files)} files to {out} ({fmt}, {engine})"
                  + (": some pools run on chips no engine targets, see vendor-neutral.yaml and README.md"
                     if neutral else ""), highlight=False, soft_wrap=True)
