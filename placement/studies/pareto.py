"""SLO Pareto frontiers: the SLO sweep, the series beside the instance, frontier marking.

Pareto
------
``pareto`` sweeps an SLO (``tpot_ms`` or ``ttft_ms``) of every class (or of
``--class NAME``) and solves each point for the full instance and, beside it,
each homogeneous fleet (one chip type) and each serving mode (aggregated, PD,
PD+AF, and PD with a draft model). Per point it reports cost/h, $/M output
tokens, output tokens/s per chip (all classes' output tokens/s ÷ chips),
tokens/s per user (1000 ÷ the plan's *predicted* TPOT of the swept classes,
the slowest of them — not the SLO), power, chips by type and modes. A point is
on the frontier of its series when no other point of that series has at least
its interactivity at a lower-or-equal $/M token (strictly better in one);
``frontier_throughput`` is the same with throughput per chip.

Relaxing an SLO only adds candidate configurations (every configuration that
meets a tighter SLO meets a looser one), so the optimal cost never rises as
the SLO grows: :func:`monotone_violations` checks this on any result.

Cost of confidence
------------------
``confidence`` levels (``pareto --confidence 0,0.5,0.8,0.9,0.95``) add an axis
named ``confidence``: every SLO point and series is solved at each level
(``solve --confidence``; level 0 is the nominal prediction), so the result
says what planning against the pessimistic end of the error band costs.
Frontiers are marked within each level. Raising the level only slows every
step, so the optimal cost never falls as it rises.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from placement.core.instance.errors import InputError
from placement.core.plans.numbers import usd, value
from placement.modes import MODES
from placement.studies.sweep import (
    MODE_LABELS,
    AxisInfo,
    Job,
    Point,
    SweepResult,
    _execute,
    envelope,
    mark_frontier,
)
from placement.studies.whatif import (
    MAX_SOLVES,
    Axis,
    apply_overrides,
    build_points,
    instance_document,
    parse_assignment,
)
from solvers.backends import DEFAULT_BACKEND

__all__ = [
    "CONFIDENCE_AXIS",
    "PARETO_FIELDS",
    "envelope",
    "mark_frontier",
    "monotone_violations",
    "pareto_series",
    "parse_confidence_levels",
    "run_pareto",
]

#: Pareto sweeps address these class fields (SLOs: relaxing them never raises the optimum).
PARETO_FIELDS = ("tpot_ms", "ttft_ms")
#: The label of the confidence axis (values: levels in [0, 1), 0 the nominal prediction).
CONFIDENCE_AXIS = "confidence"


def parse_confidence_levels(text: str) -> list[float]:
    """``0,0.5,0.9`` → ``[0.0, 0.5, 0.9]``: distinct levels in [0, 1), 0 meaning the nominal prediction.

    Examples
    --------
    >>> parse_confidence_levels("0, 0.5,0.9")
    [0.0, 0.5, 0.9]
    """
    try:
        levels = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise InputError(f"expected comma-separated levels in [0, 1) such as 0,0.5,0.9, got {text!r}",
                         field="--confidence") from None
    bad = [v for v in levels if not 0 <= v < 1]
    if not levels or bad or len(set(levels)) != len(levels):
        raise InputError(f"expected distinct levels in [0, 1) (0: nominal), got {text!r}", field="--confidence")
    return levels


# ---------------------------------------------------------------------------------------------
# series (the variants beside the instance)


def pareto_series(inst) -> list[tuple[str, str, Any]]:
    """(label, kind, instance): the instance, each homogeneous fleet, each mode alone.

    Mode variants drop the draft model (so "PD" is PD without speculative
    decoding); a mode that needs it ("PD+draft", :mod:`placement.modes`) keeps
    it and allows only its option (PD routes, with or without the draft: the
    optimizer picks). Homogeneous fleets keep the draft, which then runs
    co-located on the one chip type.
    """
    from placement.studies.compare import variants

    out = [("heterogeneous", "full", inst)]
    out += [(label.removeprefix("only "), kind, v) for label, kind, v in variants(inst) if kind == "homogeneous"]
    if len(inst.modes) > 1 or inst.draft is not None:
        for m in inst.modes:
            out.append((MODE_LABELS[m], "mode", inst.model_copy(update={"modes": [m], "draft": None})))
        for mode in MODES.values():
            if mode.requires_draft and inst.draft is not None and mode.option in inst.modes:
                out.append((mode.label, "mode", inst.model_copy(update={"modes": [mode.option]})))
    return out


# ---------------------------------------------------------------------------------------------
# running


def run_pareto(
    inst,
    sweeps: list[str],
    *,
    classes: list[str] | None = None,
    overrides: list[str] | None = None,
    source: str = "<instance>",
    backend: str = DEFAULT_BACKEND,
    time_limit_s: float | None = None,
    gap: float | None = None,
    variants: bool = True,
    executor: str = "local",
    workers: int | None = None,
    address: str | None = None,
    progress=None,
    validate_only: bool = False,
    confidence: list[float] | None = None,
) -> SweepResult:
    """Sweep SLOs (``tpot_ms=LO:HI:N``, ``ttft_ms=...``) for the instance and the series beside it.

    ``overrides`` (``PATH=VALUE``, one value each) change the instance first, e.g. a traffic level or fleet.
    ``confidence`` levels (0: nominal) solve every point at each level (the cost of confidence).
    """
    inst, fixed = apply_overrides(inst, overrides or [], source)
    names = [c.name for c in inst.workload.classes]
    focus = list(classes) if classes else names
    for c in focus:
        if c not in names:
            raise InputError(f"unknown class {c!r}; expected one of {', '.join(names)}", field="--class")
    axes = []
    for text in sweeps:
        fld, values, log = parse_assignment(text, option="--sweep")
        if fld not in PARETO_FIELDS:
            raise InputError(f"expected one of {', '.join(PARETO_FIELDS)} (an SLO of the classes), got {fld!r}; "
                             "use 'placement sweep --set PATH=...' for any other field", field="--sweep")
        axes.append(Axis(label=fld, paths=tuple(f"workload.classes.{c}.{fld}" for c in focus), values=tuple(values),
                         log=log, spec=text))
    if not axes and not confidence:
        raise InputError("expected at least one --sweep tpot_ms=LO:HI:N (or ttft_ms=...) or --confidence LEVELS",
                         field="--sweep")
    if len({a.label for a in axes}) != len(axes):
        raise InputError("the same SLO is swept twice", field="--sweep")
    pts = build_points(instance_document(inst), axes, source)
    if confidence:
        pts = [({**values, CONFIDENCE_AXIS: c}, pinst.model_copy(update={"confidence": c or None}))
               for values, pinst in pts for c in confidence]
        axes.append(Axis(label=CONFIDENCE_AXIS, paths=(CONFIDENCE_AXIS,), values=tuple(confidence), log=False,
                         spec=f"{CONFIDENCE_AXIS}={','.join(f'{c:g}' for c in confidence)}"))
    series_names: list[str] = []
    jobs, meta = [], []
    for i, (values, pinst) in enumerate(pts):
        ser = pareto_series(pinst) if variants else [("heterogeneous", "full", pinst)]
        if not series_names:
            series_names = [s[0] for s in ser]
        for label, kind, vinst in ser:
            jobs.append(Job(vinst, backend, time_limit_s, gap, source, tuple(focus)))
            meta.append({"index": i, "series": label, "kind": kind, "values": values})
    if len(jobs) > MAX_SOLVES:
        raise InputError(f"{len(jobs)} solves; expected at most {MAX_SOLVES}", field="--sweep")
    result = SweepResult(command="pareto", instance=inst.name, source=source, backend=backend,
                         axes=[AxisInfo(label=a.label, paths=list(a.paths), values=list(a.values), log=a.log)
                               for a in axes],
                         focus_classes=focus, series=series_names, overrides=fixed,
                         fleet_chips=sorted({d.chip for d in inst.hardware.domains}), points=[])
    if validate_only:
        return result
    result.points = _execute(jobs, meta, executor=executor, workers=workers, address=address, progress=progress)
    if confidence:
        for c in confidence:  # a frontier compares plans made at the same level
            mark_frontier(result.model_copy(update={"points": [p for p in result.points
                                                               if p.values[CONFIDENCE_AXIS] == c]}))
    else:
        mark_frontier(result)
    return result


# ---------------------------------------------------------------------------------------------
# frontier and checks


def monotone_violations(result: SweepResult, label: str | None = None, rel_tol: float = 1e-6) -> list[str]:
    """Places where relaxing (raising) the swept SLO raised the optimal cost, or lost feasibility.

    Points are compared within a series, with every other axis held fixed.
    """
    labels = [a.label for a in result.axes]
    label = label or labels[0]
    out = []
    for s in result.series:
        groups: dict[tuple, list[Point]] = {}
        for p in result.series_points(s):
            key = tuple((k, v) for k, v in sorted(p.values.items()) if k != label)
            groups.setdefault(key, []).append(p)
        for key, pts in groups.items():
            pts = sorted(pts, key=lambda p: p.values[label])
            for a, b in pairwise(pts):
                if a.status == "failed" or b.status == "failed":
                    continue
                if a.ok and not b.ok:
                    out.append(f"{s}: feasible at {label}={value(a.values[label])} but {b.status} at "
                               f"{value(b.values[label])}")
                elif a.ok and b.ok and b.cost_usd_per_hour > a.cost_usd_per_hour * (1 + rel_tol) + 1e-9:
                    out.append(f"{s}: cost rose from ${usd(a.cost_usd_per_hour)}/h at {label}={value(a.values[label])} "
                               f"to ${usd(b.cost_usd_per_hour)}/h at {value(b.values[label])}")
    return out
