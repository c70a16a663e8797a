"""Option types of the command line, shared by every command, and their checks.

Closed sets of words are enums, so that typer turns them into click choices: a wrong word
fails at parse time with exit code 2 and the list of choices, and shell completion offers them.
The enums repeat tuples of the library (``EXECUTORS``, ``STAGES``, ``PRECISIONS``, ``FAMILIES``, the price sets)
rather than importing them, because those live beside NumPy and the cost models and
``placement --help`` must not load them; ``tests/test_architecture.py`` checks they agree.

Checks of values typer cannot express (a gap in [0, 1), seconds > 0, an output folder that
exists) raise :class:`~placement.core.instance.errors.InputError` naming the option.

Examples
--------
>>> Executor("ray"), str(Stage.decode_ffn)
(<Executor.ray: 'ray'>, 'decode-ffn')
>>> check_run_options(time_limit_s=-1)
Traceback (most recent call last):
...
placement.core.instance.errors.InputError: --time-limit: expected a finite number of seconds > 0, got -1
>>> check_run_options(time_limit_s=float("nan"))
Traceback (most recent call last):
...
placement.core.instance.errors.InputError: --time-limit: expected a finite number of seconds > 0, got nan
"""

import math
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from placement.core.instance.errors import InputError

__all__ = [
    "DEFAULT_SOLVER",
    "SOLVER_HELP",
    "Addr",
    "CalibrationOpt",
    "CatalogKind",
    "CertifyOpt",
    "CsvPath",
    "DryRun",
    "Executor",
    "ExecutorOpt",
    "Family",
    "Gap",
    "InstanceArg",
    "JsonPath",
    "KvPolicy",
    "PlanArg",
    "PlotAxis",
    "PlotPath",
    "Precision",
    "Prices",
    "PricesOpt",
    "Quiet",
    "SolverOpt",
    "Stage",
    "TimeLimit",
    "Workers",
    "check_outputs",
    "check_run_options",
    "comma_list",
    "memory_limit_bytes",
    "objective_name",
]


class Executor(StrEnum):
    """Where the solves of a study run (:data:`placement.studies.executor.EXECUTORS`)."""

    local = "local"
    ray = "ray"


def objective_name(value: str | None) -> str | None:
    """Callback of ``--objective``: a registered objective (:mod:`placement.core.instance.objectives`, read when the
    option is given, so that ``--help`` loads none of the core), else a usage error naming them."""
    if value is None:
        return None
    from placement.core.instance.objectives import OBJECTIVES

    if value not in OBJECTIVES:
        raise typer.BadParameter(f"expected one of {', '.join(OBJECTIVES)}, got {value!r}")
    return value


class KvPolicy(StrEnum):
    """Where session classes may keep KV between calls (:data:`placement.core.kv.kvmodel.POLICY_MODES`)."""

    tiered = "tiered"
    hbm_only = "hbm-only"
    none = "none"


class Stage(StrEnum):
    """A stage of the model (:data:`costmodels.roofline.STAGES`)."""

    prefill = "prefill"
    decode = "decode"
    decode_attention = "decode-attention"
    decode_ffn = "decode-ffn"
    draft = "draft"


class Precision(StrEnum):
    """Number formats (:data:`topology.chips.PRECISIONS`)."""

    bf16 = "bf16"
    fp8 = "fp8"
    fp4 = "fp4"


class Family(StrEnum):
    """Generated fleet families (:data:`topology.generators.FAMILIES`)."""

    leaf_spine = "leaf-spine"
    rail = "rail"
    mixed = "mixed"
    uniform = "uniform"


class PlotAxis(StrEnum):
    """The x axis of the ``bench`` scaling plot."""

    domains = "domains"
    groups = "groups"


class Prices(StrEnum):
    """Chip price sets (:func:`topology.prices.load_price_sets`)."""

    tco = "tco"
    on_demand = "on-demand"


class CatalogKind(StrEnum):
    """What ``catalog`` lists."""

    chips = "chips"
    models = "models"
    prices = "prices"


InstanceArg = Annotated[Path, typer.Argument(help="instance file (YAML or JSON)")]
#: A calibration overlay (``placement calibrate --out``) in place of the instance's own ``calibration``.
CalibrationOpt = Annotated[Path | None, typer.Option(
    "--calibration", help="a calibration overlay (placement calibrate): the chips it lists take the factors and "
    "error bands fitted on your measurements (replaces the instance's calibration)")]
#: The chip price set a planning command prices with (the instance's ``prices``).
PricesOpt = Annotated[Prices | None, typer.Option(
    "--prices", help="chip prices: tco (owner's total cost of ownership, the default) | on-demand (public cloud "
    "rental, 2026); sourced per chip in topology/catalog/prices.yaml (sets the instance's prices)")]
PlanArg = Annotated[Path, typer.Argument(metavar="PLAN", help="plan JSON written by solve --json")]
#: A second backend's opinion on a plan's claims (solve, replan).
CertifyOpt = Annotated[bool, typer.Option("--certify", help="solve the model again with the other backend "
                                          "(cbc <-> highs) and compare objectives and bounds; exit 4 if "
                                          "they disagree (the better verified plan is still written)")]
#: The CLI's default backend: solvers.backends.DEFAULT_BACKEND, named here so that ``--help`` needs no solver
#: import (tests/test_limits.py checks that the two agree).
DEFAULT_SOLVER = "highs"
SOLVER_HELP = f"{DEFAULT_SOLVER} (default) | cbc | any PuLP backend name"
SolverOpt = Annotated[str, typer.Option("--solver", help=SOLVER_HELP)]
TimeLimit = Annotated[float | None, typer.Option("--time-limit",
                                                 help="seconds per solve (breaks determinism if hit)")]
Gap = Annotated[float | None, typer.Option("--gap", help="relative MIP gap per solve, e.g. 0.001")]
ExecutorOpt = Annotated[Executor, typer.Option("--executor", help="local (process pool) | ray")]
Addr = Annotated[str | None, typer.Option("--address", help="Ray cluster address (auto, ray://host:10001)")]
Workers = Annotated[int | None, typer.Option("--workers", help="parallel workers (default: CPU count)")]
PlotPath = Annotated[Path | None, typer.Option("--plot", help="write a PNG chart here")]
JsonPath = Annotated[Path | None, typer.Option("--json", help="write every result as JSON here")]
CsvPath = Annotated[Path | None, typer.Option("--csv", help="write every result as CSV here")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="no table")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="validate every point, solve nothing")]


def check_run_options(*, time_limit_s: float | None = None, gap: float | None = None,
                      workers: int | None = None) -> None:
    """Raise :class:`InputError` naming the option unless 0 < seconds < inf, gap in [0, 1), workers ≥ 1."""
    if time_limit_s is not None and not (math.isfinite(time_limit_s) and time_limit_s > 0):
        raise InputError(f"expected a finite number of seconds > 0, got {time_limit_s:g}", field="--time-limit")
    if gap is not None and not 0 <= gap < 1:
        raise InputError(f"expected a relative gap in [0, 1), got {gap}", field="--gap")
    if workers is not None and workers < 1:
        raise InputError(f"expected workers >= 1, got {workers}", field="--workers")


def memory_limit_bytes(text: str | None) -> int | None:
    """Bytes of ``--memory-limit`` (``8G``, ``512M``, ``1048576``), or None; :class:`InputError` naming it if bad.

    Examples
    --------
    >>> memory_limit_bytes("8G"), memory_limit_bytes(None)
    (8589934592, None)
    >>> memory_limit_bytes("8 apples")
    Traceback (most recent call last):
    ...
    placement.core.instance.errors.InputError: --memory-limit: expected a size such as 8G, 512M or 1048576 (bytes), got '8 apples'
    """
    if text is None:
        return None
    from solvers.limits import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise InputError(str(exc), field="--memory-limit") from None


def check_outputs(*paths: Path | None) -> None:
    """Raise :class:`InputError` naming the file when an output's folder does not exist (before any solve).

    Examples
    --------
    >>> check_outputs(None, Path("no/such/folder/plan.json"))
    Traceback (most recent call last):
    ...
    placement.core.instance.errors.InputError: no/such/folder/plan.json: folder no/such/folder does not exist
    """
    for p in paths:
        if p is not None and not p.parent.exists():
            raise InputError(f"folder {p.parent} does not exist", file=str(p))


def comma_list(value: str | None) -> list[str]:
    """``"a, b,,c"`` → ``["a", "b", "c"]``; None or empty → ``[]``.

    Examples
    --------
    >>> comma_list("cbc, highs,"), comma_list(None)
    (['cbc', 'highs'], [])
    """
    return [v.strip() for v in value.split(",") if v.strip()] if value else []
