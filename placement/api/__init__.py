"""The library API: one function per command, typed, keyword-only, returning records.

Every command of the CLI that works on an instance or a plan has its function here, with the same options
under library names (``--solver`` → ``backend``, ``--time-limit`` → ``time_limit_s``, ``--set`` →
``changes``/``assignments``); the CLI parses the files and flags, calls these and prints. What a CLI
option does that a caller does itself (``--json``, ``--csv``, ``--plot``, ``--quiet``, ``--out``, reading
the instance or plan file, ``--calibration`` of :func:`~placement.core.instance.loading.load_instance`) is listed
per command in :data:`CLI_ONLY`; ``tests/test_api.py`` holds every other CLI option to its twin here.
docs/api.md is the reference, generated from these docstrings.

Examples
--------
>>> import placement
>>> inst = placement.load_instance("instances/melange-toy.yaml")
>>> plan = placement.solve(inst, backend="highs")
>>> plan.status, placement.check(inst, plan).ok
('optimal', True)
>>> [c.target for c in placement.capacity(inst, classes=["short-in-short-out"], band=False)]
['short-in-short-out']
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from placement.core.instance.context import Context
from placement.core.instance.errors import InputError, VerificationError
from placement.core.instance.loading import with_prices
from placement.core.instance.paths import with_changes
from placement.core.instance.schema import Instance
from placement.core.plans.plan import Plan
from placement.core.verify.api import CheckResult, check
from solvers.backends import DEFAULT_BACKEND

if TYPE_CHECKING:
    from placement.studies.capacity import Capacity
    from placement.studies.compare import Comparison
    from placement.studies.kv_prices import KvPrices
    from placement.studies.marginal import MarginalResult
    from placement.studies.sweep import SweepResult

__all__ = [
    "CLI_ONLY",
    "CheckResult",
    "capacity",
    "check",
    "compare",
    "deployment",
    "html_report",
    "kv_prices",
    "marginal",
    "pareto",
    "replan",
    "solve",
    "sweep",
    "with_changes",
]

#: Per command, the CLI options that have no twin here and why: the caller does these itself.
CLI_ONLY: dict[str, dict[str, str]] = {
    "solve": {"instance": "read by load_instance", "calibration": "load_instance(path, calibration)",
              "json_path": "plan.model_dump_json()", "quiet": "printing"},
    "check": {"instance": "read by load_instance", "plan_path": "read by read_plan",
              "calibration": "load_instance(path, calibration)"},
    "capacity": {"instance": "read by load_instance", "calibration": "load_instance(path, calibration)",
                 "json_path": "record.model_dump()", "quiet": "printing"},
    "compare": {"instance": "read by load_instance", "calibration": "load_instance(path, calibration)",
                "json_path": "record.model_dump()"},
    "sweep": {"instance": "read by load_instance", "plot": "placement.cli.plots.plot_sweep",
              "json_path": "result.model_dump_json()", "csv_path": "placement.studies.sweep.to_csv",
              "quiet": "printing"},
    "pareto": {"instance": "read by load_instance", "plot": "placement.cli.plots.plot_pareto",
               "json_path": "result.model_dump_json()", "csv_path": "placement.studies.sweep.to_csv",
               "quiet": "printing"},
    "marginal": {"instance": "read by load_instance", "plan_path": "read by read_plan",
                 "json_path": "result.model_dump_json()", "csv_path": "placement.studies.marginal.to_csv",
                 "quiet": "printing"},
    "replan": {"instance": "read by load_instance", "plan_path": "read by read_plan",
               "calibration": "load_instance(path, calibration)", "json_path": "plan.model_dump_json()",
               "quiet": "printing"},
    "schedule": {"instance": "read by load_instance", "profile": "read_profile(path) gives periods",
                 "json_path": "result.model_dump_json()"},
    "kv-prices": {"instance": "read by load_instance", "quiet": "printing"},
    "deploy": {"plan_path": "read by read_plan", "out": "write_folder_atomic(out, files)",
               "calibration": "load_instance(path, calibration) for instance"},
    "report": {"plan_path": "read by read_plan", "html": "write the returned page",
               "calibration": "load_instance(path, calibration) for instance"},
}



@contextmanager
def _settings(cache_dir: str | Path | None = None, executor: str = "local", address: str | None = None
              ) -> Iterator[None]:
    """The candidate cache folder and generation executor for one call, as they were after it."""
    from placement.core.replicas.candidate_cache import CACHE_DIR_ENV
    from placement.studies.executor import generation_executor

    was = os.environ.get(CACHE_DIR_ENV)
    if cache_dir is not None:
        os.environ[CACHE_DIR_ENV] = str(cache_dir)
    try:
        with generation_executor(executor, address):
            yield
    finally:
        if cache_dir is not None and was is None:
            del os.environ[CACHE_DIR_ENV]
        elif cache_dir is not None:
            os.environ[CACHE_DIR_ENV] = was


def _share(value: float | None, field: str, low_open: bool, what: str) -> None:
    if value is not None and not (0 < value < 1 if low_open else 0 < value <= 1):
        raise InputError(f"expected {what} in {'(0, 1)' if low_open else '(0, 1]'}, got {value}", field=field)


def solve(instance: Instance, *, backend: str = DEFAULT_BACKEND, objective: str | None = None,
          time_limit_s: float | None = None, memory_limit_bytes: int | None = None, gap: float | None = None,
          compare: bool = False, certify: bool = False, kv_policy: str | None = None, survive: str | None = None,
          survive_slo_factor: float = 1.0, max_pools_per_stage: int | None = None, confidence: float | None = None,
          headroom: float | None = None, prices: str | None = None, cache_dir: str | Path | None = None,
          executor: str = "local", address: str | None = None, source: str = "<instance>",
          began: float | None = None, diagnose: bool = True) -> Plan:
    """The cheapest verified plan (``placement solve``); ``plan.status`` says what happened.

    ``survive`` (``domain:1``, ``switch:1``) plans N+1 (:func:`placement.core.operations.survive.survival`, with every
    other option: ``certify``, ``kv_policy``, large fleets in two levels);
    ``compare`` adds the homogeneous-fleet and single-mode comparisons; ``max_pools_per_stage``,
    ``confidence``, ``headroom`` and ``prices`` set the instance's ``limits.max_pools_per_stage``,
    ``confidence``, ``slo_headroom`` and chip price set (``tco``, ``on-demand``) for this solve; ``cache_dir`` and ``executor``/``address`` hold for this call only.
    ``time_limit_s`` counts from ``began`` (default now); the rest is
    :func:`placement.core.pipeline.solve.solve`'s.

    Raises
    ------
    InputError
        An option out of range, or a failure ``survive`` does not know.
    """
    from placement.core.operations.survive import survival
    from placement.core.pipeline.deadline import left_after
    from placement.core.pipeline.solve import PLACEMENT
    from placement.core.pipeline.solve import solve as solve_instance

    began = time.monotonic() if began is None else began
    _share(confidence, "--confidence", True, "a confidence level")
    _share(headroom, "--headroom", False, "a share of the SLOs")
    instance = with_prices(instance, prices)
    if max_pools_per_stage is not None:
        if max_pools_per_stage < 1:
            raise InputError(f"expected at least 1, got {max_pools_per_stage}", field="--max-pools-per-stage")
        instance = instance.model_copy(update={"limits": instance.limits.model_copy(
            update={"max_pools_per_stage": max_pools_per_stage})})
    update = {k: v for k, v in (("confidence", confidence), ("slo_headroom", headroom)) if v is not None}
    instance = instance.model_copy(update=update) if update else instance
    with_objective = instance if objective is None else instance.model_copy(update={"objective": objective})
    left_after(time_limit_s, began, "reading the instance")
    with _settings(cache_dir, executor, address):
        scenario = PLACEMENT if survive is None else survival(survive, survive_slo_factor)
        plan = solve_instance(instance, backend=backend, objective=objective, time_limit_s=time_limit_s, gap=gap,
                              source=source, began=began, certify=certify, kv_policy=kv_policy, diagnose=diagnose,
                              memory_limit_bytes=memory_limit_bytes, scenario=scenario)
        if compare and plan.verified:
            from placement.studies.compare import with_comparisons

            plan = with_comparisons(plan, with_objective, backend=backend, time_limit_s=time_limit_s,
                                    source=source)
    return plan


def capacity(instance: Instance, *, classes: Sequence[str] | None = None, mix: bool = False, band: bool = True,
             rtol: float = 1e-3, backend: str = DEFAULT_BACKEND, time_limit_s: float | None = None,
             gap: float | None = None, prices: str | None = None, source: str = "<instance>",
             probe_time_limit_s: float | None = 30.0) -> list[Capacity]:
    """The largest rate each class in ``classes`` (default every class, then the mix) — and with ``mix`` the
    instance's mix — is served at on the fleet as given (``placement capacity``,
    :func:`placement.studies.capacity.capacity`; ``probe_time_limit_s``: one probe's budget, ``None`` none)."""
    from placement.studies.capacity import MIX
    from placement.studies.capacity import capacity as search

    targets = [*(classes or []), *([MIX] if mix else [])] or None
    return search(with_prices(instance, prices), targets=targets, backend=backend, rtol=rtol, band=band,
                  time_limit_s=time_limit_s, gap=gap, source=source, probe_time_limit_s=probe_time_limit_s)


def compare(instance: Instance, *, backend: str = DEFAULT_BACKEND, time_limit_s: float | None = None,
            priors: str = "nominal", prices: str | None = None, source: str = "<instance>",
            progress: Callable[[int, int], None] | None = None) -> list[Comparison]:
    """The heterogeneous fleet beside each homogeneous fleet and each single mode (``placement compare``);
    ``priors`` ``low``/``nominal``/``high`` takes every uncalibrated chip's factors at that end of its prior
    (:mod:`costmodels.priors`)."""
    from placement.studies.compare import compare as run
    from placement.studies.priors import with_priors

    if priors not in ("low", "nominal", "high"):
        raise InputError(f"expected low, nominal or high, got {priors!r}", field="--priors")
    return run(with_priors(with_prices(instance, prices), priors), backend=backend, time_limit_s=time_limit_s, source=source,
               progress=progress)


def sweep(instance: Instance, assignments: Sequence[str], *, backend: str = DEFAULT_BACKEND,
          time_limit_s: float | None = None, gap: float | None = None, executor: str = "local",
          address: str | None = None, workers: int | None = None, dry_run: bool = False,
          prices: str | None = None, source: str = "<instance>",
          progress: Callable[[int, int], None] | None = None) -> SweepResult:
    """Solve at every point of the ``PATH=VALUES`` grid (``placement sweep --set``); ``dry_run`` validates
    every point's instance without solving (:func:`placement.studies.sweep.run_sweep`)."""
    from placement.studies.sweep import run_sweep

    return run_sweep(with_prices(instance, prices), list(assignments), source=source, backend=backend, time_limit_s=time_limit_s,
                     gap=gap, executor=executor, workers=workers, address=address, progress=progress,
                     validate_only=dry_run)


def pareto(instance: Instance, sweeps: Sequence[str] = (), *, classes: Sequence[str] | None = None,
           changes: Sequence[str] | None = None, variants: bool = True,
           confidence: Sequence[float] | str | None = None, backend: str = DEFAULT_BACKEND,
           time_limit_s: float | None = None, gap: float | None = None, executor: str = "local",
           address: str | None = None, workers: int | None = None, dry_run: bool = False,
           prices: str | None = None, source: str = "<instance>",
           progress: Callable[[int, int], None] | None = None) -> SweepResult:
    """SLO sweep with Pareto frontiers (``placement pareto``): ``sweeps`` as ``tpot_ms=LO:HI:N``, ``changes``
    ``PATH=VALUE`` fixed for every point, ``confidence`` levels (or ``"0,0.9"``) for the cost of confidence
    (:func:`placement.studies.pareto.run_pareto`)."""
    from placement.studies.pareto import parse_confidence_levels, run_pareto

    levels = parse_confidence_levels(confidence) if isinstance(confidence, str) else confidence
    return run_pareto(with_prices(instance, prices), list(sweeps), classes=list(classes) if classes else None,
                      overrides=list(changes) if changes else None, source=source, backend=backend,
                      time_limit_s=time_limit_s, gap=gap, variants=variants, executor=executor, workers=workers,
                      address=address, progress=progress, validate_only=dry_run,
                      confidence=None if levels is None else list(levels))


def marginal(instance: Instance, plan: Plan | None = None, *, bandwidth_factor: float = 2.0,
             backend: str = DEFAULT_BACKEND, time_limit_s: float | None = None, gap: float | None = None,
             executor: str = "local", address: str | None = None, workers: int | None = None,
             prices: str | None = None, source: str = "<instance>",
             progress: Callable[[int, int], None] | None = None) -> MarginalResult:
    """The value of one more / one fewer domain of each group and of ``bandwidth_factor`` × each link's
    bandwidth (``placement marginal``, :func:`placement.studies.marginal.marginal`)."""
    from placement.studies.marginal import marginal as run

    return run(with_prices(instance, prices), plan, source=source, bandwidth_factor=bandwidth_factor, backend=backend,
               time_limit_s=time_limit_s, gap=gap, executor=executor, workers=workers, address=address,
               progress=progress)


def replan(instance: Instance, plan: Plan, events=None, *, changes: Mapping[str, Any] | None = None,
           backend: str = DEFAULT_BACKEND, time_limit_s: float | None = None, gap: float | None = None,
           certify: bool = False, kv_policy: str | None = None, cache_dir: str | Path | None = None,
           prices: str | None = None, source: str = "<instance>") -> Plan:
    """The cheapest plan from the running ``plan`` after ``events`` (:class:`placement.core.operations.replan.Events`:
    failed domains, $ per move, amortisation hours) on the instance with ``changes``
    (``placement replan --fail --set --move-usd --amortise-h --certify --kv-policy``). The running plan's
    confidence level, SLO headroom and price set hold where the instance asks for none
    (:func:`placement.core.plans.provenance.as_solved`; a note says so); ``prices`` overrides its price set, and
    ``kv_policy`` its KV policy (default: the running plan's). ``certify`` asks the other backend for a
    second opinion, as :func:`solve`'s."""
    from placement.core.operations.replan import replan as run
    from placement.core.plans.provenance import as_solved

    solved, settings = as_solved(instance, plan, "re-planned")
    with _settings(cache_dir):
        new = run(with_changes(with_prices(solved, prices), changes or {}, source=source), plan, events,
                  backend=backend, time_limit_s=time_limit_s, gap=gap, source=source, certify=certify,
                  kv_policy=plan.kv_policy if kv_policy is None else kv_policy)
    held = [s for s in settings if prices is None or "price set" not in s]
    return new.model_copy(update={"notes": [*new.notes, *held]}) if held else new


def kv_prices(instance: Instance, *, prices: str | None = None, source: str = "<instance>") -> list[KvPrices]:
    """Per session class, the implied price of a cached and an uncached input token per KV tier and retention
    window (``placement kv-prices``, :mod:`placement.studies.kv_prices`)."""
    from placement.studies.kv_prices import kv_prices as run

    return run(Context.of(with_prices(instance, prices), source))


def deployment(plan: Plan, *, fmt: str, engine: str = "vllm", instance: Instance | None = None,
           image: str | None = None, chips_per_node: Mapping[str, int] | None = None,
           checkpoint: str | None = None, warn: Callable[[str], None] | None = None) -> dict[str, str]:
    """The deployment folder's files, relative path → text (``placement deploy``). With ``instance`` the plan
    must verify against it first.

    Raises
    ------
    VerificationError
        The plan does not verify against ``instance``.
    """
    from placement.deploy import build

    if instance is not None:
        result = check(instance, plan)
        if not result.ok:
            raise VerificationError(f"the plan does not verify against instance {instance.name!r}: "
                                    f"{result.violations[0]}")
    return build(plan, fmt=fmt, engine=engine, instance=instance, image=image,
                 chips_per_node=None if chips_per_node is None else dict(chips_per_node), checkpoint=checkpoint,
                 warn=warn)


def html_report(plan: Plan, *, instance: Instance | None = None, sweep: SweepResult | None = None) -> str:
    """The HTML report of ``plan`` (``placement report``): with ``instance`` its whole fleet, with ``sweep``
    (a :func:`sweep` or :func:`pareto` result) its chart."""
    from placement.report import render_html

    graph = None if instance is None else Context.of(instance).graph
    return render_html(plan, graph, sweep)
