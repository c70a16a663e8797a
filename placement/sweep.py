"""Trade-off exploration: what-if sweeps over any instance field, and SLO Pareto frontiers.

A sweep is many independent solves of modified copies of one instance. Every
point's instance is built and validated (:func:`placement.loading.parse_instance`)
**before any solve**, so a bad path, an empty range or a wrong type fails at
once; the solves then run in parallel on :func:`placement.executor.run_map`
(a local process pool, or a Ray cluster) and come back in input order. A point
that fails is reported with status ``failed`` and its error — never dropped.
Results do not depend on the executor or the number of workers (no timings
are stored in them; a ``--time-limit`` that is hit is the one exception).

Paths
-----
A path names one field of the instance, dotted::

    workload.classes.NAME.FIELD      a traffic class by name (e.g. workload.classes.chat.rate_rps)
    hardware.domains.NAME.FIELD      a domain group by name (e.g. hardware.domains.lpx.count)
    hardware.chips.CHIP.FIELD        a chip's record: a catalogue chip is copied into hardware.chips
                                     with the field changed (e.g. hardware.chips.bertha.usd_per_hour)
    hardware.links.SRC/DST.FIELD     a scale-out link by its two switches (or hardware.links.0.FIELD)
    limits.power_kw, objective, ...  plain fields; a list element by position (draft.acceptance.0)
    model.FIELD, draft.model.FIELD   a catalogue model is copied into the instance with the field changed

Every segment is checked against the schema: an unknown field or name fails
with the list of what exists there.

Values
------
Right of ``=`` is one of::

    LO:HI:N        N evenly spaced values from LO to HI, both included  (10:100:10 -> 10, 20, ..., 100)
    LO:HI:N:log    N geometrically spaced values from LO to HI          (1:1000:4:log -> 1, 10, 100, 1000)
    LO:HI:logR     LO, LO·R, LO·R², ... up to HI (R > 1)                (10:1000:log10 -> 10, 100, 1000)
    v1,v2,...      the listed values: numbers, true/false, none, or words (e.g. chip or model names)
    v              one value

``N`` is a whole number ≥ 1; ``N = 1`` only when ``LO = HI``; ``LO = HI``
only when ``N = 1``; LO > HI gives a descending range; log ranges need
LO, HI > 0 (and LO ≤ HI for logR). Values are rounded to 12
significant digits and whole numbers are written as integers. Several
``--set`` options form a grid (every combination), the first varying slowest.

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

Examples
--------
>>> parse_values("10:100:4")
([10, 40, 70, 100], False)
>>> parse_values("10:1000:log10")
([10, 100, 1000], True)
>>> parse_values("1:8:4:log")
([1, 2, 4, 8], True)
>>> parse_values("h100,b200,none")
(['h100', 'b200', None], False)
>>> parse_values("5:1:0")
Traceback (most recent call last):
...
placement.errors.InputError: 5:1:0: empty range: expected N >= 1 points, got 0
"""

from __future__ import annotations

import copy
import csv
import io
import math
import re
import types
import typing
from dataclasses import dataclass
from itertools import pairwise, product
from pathlib import Path
from typing import Annotated, Any, Union

import typer
from pydantic import BaseModel, ConfigDict, Field

from placement.errors import InputError

__all__ = [
    "MAX_SOLVES",
    "Axis",
    "Point",
    "SweepResult",
    "build_points",
    "envelope",
    "mark_frontier",
    "monotone_violations",
    "pareto_series",
    "parse_assignment",
    "parse_values",
    "run_pareto",
    "run_sweep",
    "set_path",
    "summarise_plan",
    "to_csv",
]

#: More solves than this in one command is almost certainly a typo in a range.
MAX_SOLVES = 20_000
#: Pareto sweeps address these class fields (SLOs: relaxing them never raises the optimum).
PARETO_FIELDS = ("tpot_ms", "ttft_ms")
MODE_LABELS = {"aggregated": "aggregated", "pd": "PD", "pd-af": "PD+AF", "pd+draft": "PD+draft"}

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"


# ---------------------------------------------------------------------------------------------
# values


def _tidy(v: float) -> int | float:
    """Round to 12 significant digits; whole numbers become ints."""
    if v == 0:
        return 0
    r = float(f"{v:.12g}")
    if r.is_integer() and abs(r) < 1e15:
        return int(r)
    return r


def _number(text: str, spec: str, what: str) -> float:
    if not re.fullmatch(_NUM, text.strip()):
        raise InputError(f"expected a number for {what}, got {text!r}", field=spec)
    v = float(text)
    if not math.isfinite(v):
        raise InputError(f"expected a finite number for {what}, got {text!r}", field=spec)
    return v


def _scalar(text: str) -> Any:
    t = text.strip()
    if t == "":
        raise ValueError("empty value")
    low = t.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    if re.fullmatch(_NUM, t):
        v = float(t)
        if not math.isfinite(v):
            raise ValueError(f"non-finite number {t!r}")
        return _tidy(v)
    return t


def parse_values(spec: str) -> tuple[list[Any], bool]:
    """The values of a range or list (see the module docstring); ``(values, log)``.

    Raises
    ------
    InputError
        Naming the spec, for malformed, empty or degenerate ranges.
    """
    s = spec.strip()
    if not s:
        raise InputError("empty value: expected LO:HI:N, LO:HI:N:log, LO:HI:logR, v1,v2,... or one value", field=spec)
    parts = s.split(":")
    if len(parts) == 1:
        items = s.split(",")
        try:
            return [_scalar(x) for x in items], False
        except ValueError as e:
            raise InputError(f"bad value list: {e}; expected v1,v2,...", field=spec) from None
    if len(parts) not in (3, 4):
        raise InputError("expected LO:HI:N, LO:HI:N:log or LO:HI:logR", field=spec)
    a = _number(parts[0], spec, "LO")
    b = _number(parts[1], spec, "HI")
    third = parts[2].strip()
    m = re.fullmatch(r"log(" + _NUM + r")", third)
    if len(parts) == 3 and m:
        ratio = float(m.group(1))
        if not ratio > 1 or not math.isfinite(ratio):
            raise InputError(f"expected a ratio R > 1 in logR, got {m.group(1)}", field=spec)
        if not 0 < a <= b:
            raise InputError(f"empty range: LO:HI:logR needs 0 < LO <= HI, got LO={a:g}, HI={b:g}", field=spec)
        out, k = [], 0
        while True:
            v = a * ratio**k
            if v > b * (1 + 1e-9):
                break
            out.append(_tidy(v))
            k += 1
            if k > MAX_SOLVES:
                raise InputError(f"more than {MAX_SOLVES} values", field=spec)
        return out, True
    if not re.fullmatch(r"\d+", third):
        raise InputError(f"expected a whole number of points N (or logR), got {third!r}", field=spec)
    n = int(third)
    log = False
    if len(parts) == 4:
        if parts[3].strip().lower() != "log":
            raise InputError(f"expected 'log' as the fourth part, got {parts[3]!r}", field=spec)
        log = True
    if n < 1:
        raise InputError(f"empty range: expected N >= 1 points, got {n}", field=spec)
    if n > MAX_SOLVES:
        raise InputError(f"expected at most {MAX_SOLVES} points, got {n}", field=spec)
    if n == 1 and a != b:
        raise InputError(f"one point from {a:g} to {b:g} is ambiguous: use N >= 2, or give one value", field=spec)
    if a == b and n > 1:
        raise InputError(f"empty range: LO = HI = {a:g} with N = {n} gives the same value {n} times", field=spec)
    if n == 1:
        return [_tidy(a)], log
    if log:
        if not (a > 0 and b > 0):
            raise InputError(f"a log range needs LO > 0 and HI > 0, got LO={a:g}, HI={b:g}", field=spec)
        la, lb = math.log(a), math.log(b)
        return [_tidy(math.exp(la + (lb - la) * i / (n - 1))) for i in range(n)], True
    return [_tidy(a + (b - a) * i / (n - 1)) for i in range(n)], False


def parse_assignment(text: str, option: str = "--set") -> tuple[str, list[Any], bool]:
    """``PATH=VALUES`` -> ``(path, values, log)``."""
    if "=" not in text:
        raise InputError(f"expected PATH=VALUES (e.g. workload.classes.chat.rate_rps=10:100:5), got {text!r}",
                         field=option)
    path, spec = text.split("=", 1)
    path = path.strip()
    if not path:
        raise InputError(f"empty path in {text!r}", field=option)
    try:
        values, log = parse_values(spec)
    except InputError as e:
        raise InputError(e.detail, field=f"{option} {text}") from None
    return path, values, log


# ---------------------------------------------------------------------------------------------
# paths


def _unwrap(ann: Any) -> list[Any]:
    """The alternatives of an annotation (Annotated and Optional/Union flattened)."""
    origin = typing.get_origin(ann)
    if origin is Annotated:
        return _unwrap(typing.get_args(ann)[0])
    if origin in (Union, types.UnionType):
        out = []
        for a in typing.get_args(ann):
            if a is not type(None):
                out.extend(_unwrap(a))
        return out
    return [ann]


def _model_in(ann: Any) -> type[BaseModel] | None:
    for a in _unwrap(ann):
        if isinstance(a, type) and issubclass(a, BaseModel):
            return a
    return None


def _container(ann: Any) -> tuple[str, Any]:
    """('list', element) | ('dict', value) | ('model', cls) | ('scalar', None)."""
    for a in _unwrap(ann):
        origin = typing.get_origin(a)
        if origin is list:
            return "list", typing.get_args(a)[0]
        if origin is dict:
            return "dict", typing.get_args(a)[1]
    m = _model_in(ann)
    return ("model", m) if m is not None else ("scalar", None)


def _fields(model: type[BaseModel]) -> dict[str, Any]:
    """Document key -> field info (aliases as written in files, and names)."""
    out = {}
    for name, info in model.model_fields.items():
        out[info.alias or name] = info
        out[name] = info
    return out


def _catalogue_record(kind: str, name: str, path: str) -> dict:
    if kind == "chip":
        from topology.chips import load_chip_catalog

        table = load_chip_catalog()
    else:
        from costmodels.models import load_model_catalog

        table = load_model_catalog()
    if name not in table:
        raise InputError(f"unknown {kind} {name!r}; expected one of {', '.join(sorted(table))}", field=path)
    return table[name].model_dump(mode="json", by_alias=True)


def _find_in_list(items: list, seg: str, elem_model: type[BaseModel] | None, where: str, path: str) -> int:
    """Index of a list element addressed by name, SRC/DST (links) or position."""
    if elem_model is not None and "name" in elem_model.model_fields:
        for i, x in enumerate(items):
            if isinstance(x, dict) and x.get("name") == seg:
                return i
    if elem_model is not None and {"source", "target"} <= set(elem_model.model_fields) and "/" in seg:
        src, dst = seg.split("/", 1)
        for i, x in enumerate(items):
            if isinstance(x, dict) and {x.get("source"), x.get("target")} == {src, dst}:
                return i
    if re.fullmatch(r"\d+", seg):
        i = int(seg)
        if i < len(items):
            return i
        raise InputError(f"{where} has {len(items)} entries; index {i} is out of range", field=path)
    names = [str(x.get("name")) for x in items if isinstance(x, dict) and "name" in x]
    if elem_model is not None and {"source", "target"} <= set(elem_model.model_fields):
        names = [f"{x.get('source')}/{x.get('target')}" for x in items if isinstance(x, dict)]
    hint = f"expected one of {', '.join(names)}" if names else f"expected a position 0..{len(items) - 1}"
    raise InputError(f"{where} has no entry {seg!r}; {hint}", field=path)


def set_path(doc: dict, path: str, value: Any) -> None:
    """Set the field at ``path`` of an instance document (a dict, changed in place).

    Catalogue chips named under ``hardware.chips`` and catalogue models named
    by ``model``/``draft.model`` are copied into the document first. Raises
    :class:`InputError` for a path that does not exist in the schema.

    Examples
    --------
    >>> d = {"workload": {"classes": [{"name": "chat", "tpot_ms": 50}]}}
    >>> set_path(d, "workload.classes.chat.tpot_ms", 20); d["workload"]["classes"][0]["tpot_ms"]
    20
    >>> set_path(d, "workload.classes.chat.tpot", 20)
    Traceback (most recent call last):
    ...
    placement.errors.InputError: workload.classes.chat.tpot: unknown field 'tpot' in workload.classes.chat; expected one of cached_prefix_tokens, name, output_tokens, prefix_cached_on_decode, prompt_tokens, rate_rps, tpot_ms, ttft_ms
    """
    from placement.schema import Instance

    segs = path.split(".")
    if any(s == "" for s in segs):
        raise InputError("empty segment in path (two dots in a row, or a leading/trailing dot)", field=path)
    node: Any = doc
    model: type[BaseModel] | None = Instance
    where = ""
    i = 0
    while True:
        seg = segs[i]
        last = i == len(segs) - 1
        here = f"{where}.{seg}" if where else seg
        if not isinstance(node, dict):
            raise InputError(f"{where} is a {type(node).__name__}, not a record: it has no field {seg!r}", field=path)
        ann: Any = None
        if model is not None:
            fields = _fields(model)
            if seg not in fields:
                names = sorted({info.alias or n for n, info in model.model_fields.items()})
                raise InputError(f"unknown field {seg!r} in {where or 'the instance'}; expected one of "
                                 f"{', '.join(names)}", field=path)
            info = fields[seg]
            ann = info.annotation
            # the key as the document spells it: as found, else the alias files use (measured "class")
            key = seg if seg in node else (info.alias or seg)
        else:
            key = seg
        if last:
            node[key] = value
            return
        kind, sub = _container(ann) if model is not None else ("scalar", None)
        if kind == "scalar" and model is not None:
            raise InputError(f"{here} is a single value, not a record: it has no field {segs[i + 1]!r}", field=path)
        child = node.get(key)
        if child is None:
            if model is None:
                raise InputError(f"{here} is not set; cannot set a field inside it", field=path)
            info = _fields(model)[seg]
            if kind == "model" and info.default is not None and not info.is_required():
                child = node[key] = {}
            elif kind == "list" and not info.is_required():
                child = node[key] = []
            elif kind == "dict":
                child = node[key] = {}
            else:
                raise InputError(f"{here} is not set in this instance; give the whole record in the instance "
                                 "file before sweeping a field inside it", field=path)
        if isinstance(child, str) and kind == "model" and sub is not None and sub.__name__ == "ModelSpec":
            child = node[key] = _catalogue_record("model", child, path)
        if kind == "list":
            elem_model = _model_in(sub)
            nxt = segs[i + 1]
            if here == "hardware.chips":
                idx = next((j for j, c in enumerate(child) if isinstance(c, dict) and c.get("name") == nxt), None)
                if idx is None:
                    child.append(_catalogue_record("chip", nxt, path))
                    idx = len(child) - 1
            else:
                idx = _find_in_list(child, nxt, elem_model, here, path)
            if i + 1 == len(segs) - 1:
                child[idx] = value
                return
            node, model, where = child[idx], elem_model, f"{here}.{nxt}"
            if isinstance(node, str) and elem_model is None:
                raise InputError(f"{where} is a value, not a record", field=path)
            i += 2
            continue
        if kind == "dict":
            elem_model = _model_in(sub)
            nxt = segs[i + 1]
            if i + 1 == len(segs) - 1:
                child[nxt] = value
                return
            if nxt not in child:
                raise InputError(f"{here} has no key {nxt!r}; expected one of {', '.join(map(str, child))}",
                                 field=path)
            node, model, where = child[nxt], elem_model, f"{here}.{nxt}"
            i += 2
            continue
        node, model, where = child, sub, here
        i += 1


# ---------------------------------------------------------------------------------------------
# axes and points


@dataclass(frozen=True)
class Axis:
    """One swept quantity: its label, the paths it sets (all to the same value) and its values."""

    label: str
    paths: tuple[str, ...]
    values: tuple[Any, ...]
    log: bool = False
    spec: str = ""


class AxisInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str
    paths: list[str]
    values: list[Any]
    log: bool


class Point(BaseModel):
    """One solve of a sweep: the values set, the series, and what the plan says."""

    model_config = ConfigDict(extra="forbid")

    index: int = Field(description="position of the values in the sweep grid")
    series: str = Field(description="'heterogeneous' (the instance) or a variant beside it")
    kind: str = Field(description="full | homogeneous | mode")
    values: dict[str, Any]
    status: str = Field(description="optimal | feasible | time_limit | infeasible | error | failed")
    verified: bool = False
    cost_usd_per_hour: float | None = None
    usd_per_million_output_tokens: float | None = None
    power_w: float | None = None
    chips: int | None = None
    chips_by_type: dict[str, int] = Field(default_factory=dict)
    output_tokens_per_s: float | None = None
    tokens_per_s_per_chip: float | None = None
    tpot_ms: float | None = Field(default=None, description="predicted TPOT, slowest of the focus classes")
    ttft_ms: float | None = Field(default=None, description="predicted TTFT, slowest of the focus classes")
    tokens_per_s_per_user: float | None = Field(default=None, description="1000 / tpot_ms")
    modes: dict[str, float] = Field(default_factory=dict, description="mode -> share of output tokens")
    class_modes: dict[str, dict[str, float]] = Field(default_factory=dict)
    class_tpot_ms: dict[str, float | None] = Field(default_factory=dict)
    stages: dict[str, dict[str, int]] = Field(default_factory=dict, description="stage -> chip -> chips")
    frontier: bool = Field(default=False, description="on its series' $/M-token frontier")
    frontier_throughput: bool = Field(default=False, description="on its series' tokens/s-per-chip frontier")
    envelope: bool = Field(default=False, description="on the heterogeneous instance's $/M-token frontier")
    envelope_throughput: bool = Field(default=False,
                                      description="on the heterogeneous instance's tokens/s-per-chip frontier")
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status in ("optimal", "feasible", "time_limit") and self.verified


class SweepResult(BaseModel):
    """Every point of a sweep (or Pareto sweep), in grid order then series order."""

    model_config = ConfigDict(extra="forbid")

    command: str
    instance: str
    source: str
    backend: str
    axes: list[AxisInfo]
    focus_classes: list[str]
    series: list[str]
    fleet_chips: list[str] = Field(default_factory=list, description="chip types of the instance's fleet")
    overrides: dict[str, Any] = Field(default_factory=dict, description="fields fixed for every point (--set)")
    points: list[Point]
    warnings: list[str] = Field(default_factory=list)

    def series_points(self, series: str) -> list[Point]:
        return [p for p in self.points if p.series == series]

    def canonical_json(self) -> str:
        """Everything but the source path: byte-identical across executors and runs."""
        return self.model_dump_json(exclude={"source"})


def _round(x: float | None, digits: int = 9) -> float | None:
    if x is None:
        return None
    return float(f"{x:.{digits}g}")


def summarise_plan(plan, focus: list[str] | None = None,
                   tokens_by_class: dict[str, float] | None = None) -> dict:
    """The per-point numbers of a plan (a plain dict, small enough to ship back from a worker).

    ``modes`` are shares of output tokens when ``tokens_by_class`` (class ->
    output tokens/s) is given, of requests otherwise.
    """
    ok = plan.status in ("optimal", "feasible", "time_limit") and plan.verified
    message = "; ".join(x for x in [plan.message or "", *plan.diagnosis] if x)
    out: dict[str, Any] = {"status": plan.status, "verified": plan.verified, "message": message}
    if not ok:
        return out
    focus = focus or [c.name for c in plan.classes]
    weight = {c.name: (tokens_by_class or {}).get(c.name, c.rate_rps) for c in plan.classes}
    total = sum(weight.values()) or 1.0
    modes: dict[str, float] = {}
    for c in plan.classes:
        for m, share in c.modes.items():
            modes[m] = modes.get(m, 0.0) + share * weight[c.name] / total
    tpots = [c.tpot_ms for c in plan.classes if c.name in focus and c.tpot_ms is not None]
    ttfts = [c.ttft_ms for c in plan.classes if c.name in focus and c.ttft_ms is not None]
    tpot = max(tpots) if tpots else None
    stages: dict[str, dict[str, int]] = {}
    for p in plan.pools:
        stages.setdefault(p.stage, {})
        stages[p.stage][p.chip] = stages[p.stage].get(p.chip, 0) + p.chips
    tokens = plan.output_tokens_per_s or 0.0
    out.update(
        cost_usd_per_hour=_round(plan.cost_usd_per_hour),
        usd_per_million_output_tokens=_round(plan.usd_per_million_output_tokens),
        power_w=_round(plan.power_w),
        chips=plan.chips,
        chips_by_type=dict(sorted(plan.chips_by_type.items())),
        output_tokens_per_s=_round(tokens),
        tokens_per_s_per_chip=_round(tokens / plan.chips) if plan.chips else None,
        tpot_ms=_round(tpot),
        ttft_ms=_round(max(ttfts)) if ttfts else None,
        tokens_per_s_per_user=_round(1000.0 / tpot) if tpot else None,
        modes={m: _round(v) for m, v in sorted(modes.items())},
        class_modes={c.name: {m: _round(v) for m, v in sorted(c.modes.items())} for c in plan.classes},
        class_tpot_ms={c.name: _round(c.tpot_ms) for c in plan.classes},
        stages={s: dict(sorted(v.items())) for s, v in sorted(stages.items())},
    )
    return out


@dataclass(frozen=True)
class Job:
    """What a worker needs to solve one point (picklable)."""

    instance: Any
    backend: str
    time_limit_s: float | None
    gap: float | None
    source: str
    focus: tuple[str, ...]


def solve_job(job: Job) -> dict:
    """Solve one point and summarise it (runs in a worker)."""
    from placement.solve import solve

    plan = solve(job.instance, backend=job.backend, time_limit_s=job.time_limit_s, gap=job.gap, source=job.source)
    tokens = {c.name: c.rate_rps * c.output_tokens for c in job.instance.workload.classes}
    return summarise_plan(plan, list(job.focus), tokens)


def instance_document(inst) -> dict:
    """An instance as a plain document that :func:`parse_instance` reads back to an equal instance."""
    return inst.model_dump(mode="json", by_alias=True, exclude_unset=True)


def build_points(base: dict, axes: list[Axis], source: str) -> list[tuple[dict[str, Any], Any]]:
    """Every grid point's values and validated Instance — before any solve.

    Raises
    ------
    InputError
        Naming the path and value of the first point that is not a valid instance.
    """
    from placement.context import Context
    from placement.loading import parse_instance

    total = math.prod(len(a.values) for a in axes) if axes else 1
    if total > MAX_SOLVES:
        raise InputError(f"the grid has {total} points; expected at most {MAX_SOLVES} (check the ranges)",
                         field="--set")
    # Check every path once on the base document, so an unknown path fails before the grid is built.
    for a in axes:
        for p in a.paths:
            set_path(copy.deepcopy(base), p, a.values[0])
    out = []
    for combo in product(*[a.values for a in axes]):
        doc = copy.deepcopy(base)
        for a, v in zip(axes, combo):
            for p in a.paths:
                set_path(doc, p, v)
        where = ", ".join(f"{a.label}={v}" for a, v in zip(axes, combo))
        try:
            inst = parse_instance(doc, source=source)
            Context.of(inst, source)
        except InputError as e:
            raise InputError(f"with {where}: {e.detail}", file=source, field=e.field) from None
        out.append(({a.label: v for a, v in zip(axes, combo)}, inst))
    return out


def apply_overrides(inst, overrides: list[str], source: str, option: str = "--set"):
    """The instance with ``PATH=VALUE`` overrides (one value each) applied and validated."""
    from placement.loading import parse_instance

    if not overrides:
        return inst, {}
    doc = instance_document(inst)
    fixed: dict[str, Any] = {}
    for text in overrides:
        path, values, _ = parse_assignment(text, option=option)
        if len(values) != 1:
            raise InputError(f"expected one value (a fixed override), got {len(values)}; sweep SLOs with --sweep, "
                             "or use 'placement sweep' for a grid over any field", field=f"{option} {text}")
        set_path(doc, path, values[0])
        fixed[path] = values[0]
    try:
        return parse_instance(doc, source=source), fixed
    except InputError as e:
        where = ", ".join(f"{k}={v}" for k, v in fixed.items())
        raise InputError(f"with {where}: {e.detail}", file=source, field=e.field) from None


def price_warnings(inst, axes: list[Axis]) -> list[str]:
    """Swept chip fields that the instance overrides or never uses."""
    out = []
    used = {d.chip for d in inst.hardware.domains}
    for a in axes:
        for p in a.paths:
            segs = p.split(".")
            if len(segs) >= 4 and segs[:2] == ["hardware", "chips"]:
                chip, fld = segs[2], segs[3]
                if chip not in used:
                    out.append(f"{p}: no domain group uses chip {chip!r}; the sweep cannot change the plan")
                if fld == "usd_per_hour":
                    for d in inst.hardware.domains:
                        if d.chip == chip and d.usd_per_hour_per_chip is not None:
                            out.append(f"{p}: domain group {d.name!r} sets usd_per_hour_per_chip, which overrides "
                                       f"the chip's price there; sweep hardware.domains.{d.name}."
                                       "usd_per_hour_per_chip instead")
    return out


# ---------------------------------------------------------------------------------------------
# series (the variants beside the instance)


def pareto_series(inst) -> list[tuple[str, str, Any]]:
    """(label, kind, instance): the instance, each homogeneous fleet, each mode alone.

    Mode variants drop the draft model (so "PD" is PD without speculative
    decoding); "PD+draft" keeps it and allows only PD routes, with or without
    the draft (the optimizer picks). Homogeneous fleets keep the draft, which
    then runs co-located on the one chip type.
    """
    from placement.compare import variants

    out = [("heterogeneous", "full", inst)]
    out += [(label.removeprefix("only "), kind, v) for label, kind, v in variants(inst) if kind == "homogeneous"]
    if len(inst.modes) > 1 or inst.draft is not None:
        for m in inst.modes:
            out.append((MODE_LABELS[m], "mode", inst.model_copy(update={"modes": [m], "draft": None})))
        if inst.draft is not None and "pd" in inst.modes:
            out.append((MODE_LABELS["pd+draft"], "mode", inst.model_copy(update={"modes": ["pd"]})))
    return out


# ---------------------------------------------------------------------------------------------
# running


def _execute(jobs: list[Job], meta: list[dict], *, executor: str, workers: int | None, address: str | None,
             progress) -> list[Point]:
    from placement.executor import run_map

    outcomes = run_map(solve_job, jobs, executor=executor, workers=workers, address=address, progress=progress)
    points = []
    for m, o in zip(meta, outcomes):
        if o.ok:
            points.append(Point(**m, **o.value))
        else:
            points.append(Point(**m, status="failed", message=o.error or "failed"))
    return points


def run_sweep(
    inst,
    assignments: list[str],
    *,
    source: str = "<instance>",
    backend: str = "cbc",
    time_limit_s: float | None = None,
    gap: float | None = None,
    executor: str = "local",
    workers: int | None = None,
    address: str | None = None,
    progress=None,
    validate_only: bool = False,
) -> SweepResult:
    """Solve the instance at every point of the ``PATH=VALUES`` grid."""
    axes = []
    for text in assignments:
        path, values, log = parse_assignment(text)
        axes.append(Axis(label=path, paths=(path,), values=tuple(values), log=log, spec=text))
    if not axes:
        raise InputError("expected at least one --set PATH=VALUES", field="--set")
    labels = [a.label for a in axes]
    if len(set(labels)) != len(labels):
        raise InputError("the same path is set twice", field="--set")
    pts = build_points(instance_document(inst), axes, source)
    jobs, meta = [], []
    for i, (values, pinst) in enumerate(pts):
        jobs.append(Job(pinst, backend, time_limit_s, gap, source, tuple(c.name for c in pinst.workload.classes)))
        meta.append({"index": i, "series": "heterogeneous", "kind": "full", "values": values})
    result = SweepResult(command="sweep", instance=inst.name, source=source, backend=backend,
                         axes=[AxisInfo(label=a.label, paths=list(a.paths), values=list(a.values), log=a.log)
                               for a in axes],
                         focus_classes=[c.name for c in inst.workload.classes], series=["heterogeneous"],
                         fleet_chips=sorted({d.chip for d in inst.hardware.domains}),
                         points=[], warnings=price_warnings(inst, axes))
    if validate_only:
        return result
    result.points = _execute(jobs, meta, executor=executor, workers=workers, address=address, progress=progress)
    mark_frontier(result)
    return result


def run_pareto(
    inst,
    sweeps: list[str],
    *,
    classes: list[str] | None = None,
    overrides: list[str] | None = None,
    source: str = "<instance>",
    backend: str = "cbc",
    time_limit_s: float | None = None,
    gap: float | None = None,
    variants: bool = True,
    executor: str = "local",
    workers: int | None = None,
    address: str | None = None,
    progress=None,
    validate_only: bool = False,
) -> SweepResult:
    """Sweep SLOs (``tpot_ms=LO:HI:N``, ``ttft_ms=...``) for the instance and the series beside it.

    ``overrides`` (``PATH=VALUE``, one value each) change the instance first, e.g. a traffic level or fleet.
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
    if not axes:
        raise InputError("expected at least one --sweep tpot_ms=LO:HI:N (or ttft_ms=...)", field="--sweep")
    if len({a.label for a in axes}) != len(axes):
        raise InputError("the same SLO is swept twice", field="--sweep")
    pts = build_points(instance_document(inst), axes, source)
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
    mark_frontier(result)
    return result


# ---------------------------------------------------------------------------------------------
# frontier and checks


def _frontier(pts: list[Point], y: str, higher_better: bool) -> set[int]:
    keep = set()
    cand = [(i, p) for i, p in enumerate(pts) if p.ok and p.tokens_per_s_per_user is not None
            and getattr(p, y) is not None]
    for i, p in cand:
        x, v = p.tokens_per_s_per_user, getattr(p, y)
        dominated = False
        for j, q in cand:
            if i == j:
                continue
            qx, qv = q.tokens_per_s_per_user, getattr(q, y)
            better = (qv >= v) if higher_better else (qv <= v)
            strictly = qx > x or ((qv > v) if higher_better else (qv < v))
            if qx >= x and better and strictly:
                dominated = True
                break
        if not dominated:
            keep.add(i)
    return keep


def mark_frontier(result: SweepResult) -> None:
    """Flag Pareto-optimal points: interactivity vs $/M tokens, and vs tokens/s per chip.

    ``frontier*`` — within each series. ``envelope*`` — the frontier of the heterogeneous instance
    itself, taken over the plans of *every* series: a homogeneous fleet or a single mode is a
    restriction of the instance (fewer domain groups, fewer routes), so each of their plans is also a
    plan of the instance at the same SLOs. The SLO sweep only finds the cheapest plan at each SLO, and
    a restricted variant may reach an interactivity the sweep's grid skipped; the envelope keeps it.
    """
    for s in result.series:
        pts = result.series_points(s)
        cost = _frontier(pts, "usd_per_million_output_tokens", higher_better=False)
        thr = _frontier(pts, "tokens_per_s_per_chip", higher_better=True)
        for i, p in enumerate(pts):
            p.frontier = i in cost
            p.frontier_throughput = i in thr
    if any(p.kind == "full" for p in result.points):
        pts = result.points
        cost = _frontier(pts, "usd_per_million_output_tokens", higher_better=False)
        thr = _frontier(pts, "tokens_per_s_per_chip", higher_better=True)
        for i, p in enumerate(pts):
            p.envelope = i in cost
            p.envelope_throughput = i in thr


def envelope(result: SweepResult, throughput: bool = False) -> list[Point]:
    """The heterogeneous instance's frontier (see :func:`mark_frontier`), by rising interactivity,
    one point per distinct (interactivity, value) — the instance's own point when it is one of them."""
    flag = "envelope_throughput" if throughput else "envelope"
    y = "tokens_per_s_per_chip" if throughput else "usd_per_million_output_tokens"
    seen: dict[tuple, Point] = {}
    for p in result.points:
        if getattr(p, flag):
            key = (p.tokens_per_s_per_user, getattr(p, y))
            if key not in seen or (p.kind == "full" and seen[key].kind != "full"):
                seen[key] = p
    return [seen[k] for k in sorted(seen)]


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
                    out.append(f"{s}: feasible at {label}={a.values[label]} but {b.status} at {b.values[label]}")
                elif a.ok and b.ok and b.cost_usd_per_hour > a.cost_usd_per_hour * (1 + rel_tol) + 1e-9:
                    out.append(f"{s}: cost rose from {a.cost_usd_per_hour:g} at {label}={a.values[label]} to "
                               f"{b.cost_usd_per_hour:g} at {b.values[label]}")
    return out


# ---------------------------------------------------------------------------------------------
# outputs


def to_csv(result: SweepResult) -> str:
    """One row per point: values, status, numbers, chips by type, mode shares."""
    chips = sorted({c for p in result.points for c in p.chips_by_type})
    modes = sorted({m for p in result.points for m in p.modes})
    classes = sorted({c for p in result.points for c in p.class_tpot_ms})
    head = (["index", "series", "kind"] + [a.label for a in result.axes]
            + ["status", "verified", "cost_usd_per_hour", "usd_per_million_output_tokens", "power_w", "chips",
               "output_tokens_per_s", "tokens_per_s_per_chip", "tpot_ms", "ttft_ms", "tokens_per_s_per_user",
               "frontier", "frontier_throughput"]
            + [f"chips:{c}" for c in chips] + [f"mode:{m}" for m in modes]
            + [f"tpot_ms:{c}" for c in classes] + ["message"])
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(head)

    def f(x):
        return "" if x is None else x

    for p in result.points:
        w.writerow([p.index, p.series, p.kind] + [f(p.values.get(a.label)) for a in result.axes]
                   + [p.status, p.verified, f(p.cost_usd_per_hour), f(p.usd_per_million_output_tokens),
                      f(p.power_w), f(p.chips), f(p.output_tokens_per_s), f(p.tokens_per_s_per_chip), f(p.tpot_ms),
                      f(p.ttft_ms), f(p.tokens_per_s_per_user), p.frontier, p.frontier_throughput]
                   + [p.chips_by_type.get(c, 0) for c in chips] + [p.modes.get(m, 0) for m in modes]
                   + [f(p.class_tpot_ms.get(c)) for c in classes] + [p.message])
    return buf.getvalue()


def _fmt(x, spec=".3g") -> str:
    return "-" if x is None else format(x, spec)


def _mix(d: dict[str, Any], pct: bool = False) -> str:
    if pct:
        return ", ".join(f"{MODE_LABELS.get(k, k)} {v:.0%}" for k, v in d.items() if v > 0)
    return ", ".join(f"{v}×{k}" for k, v in d.items())


def print_result(console, result: SweepResult) -> None:
    from rich.table import Table
    from rich.text import Text

    title = (f"{result.command} of {result.instance}: " + ", ".join(f"{a.label} × {len(a.values)}"
                                                                   for a in result.axes)
             + (f" (classes {', '.join(result.focus_classes)})" if result.command == "pareto" else ""))
    t = Table(title=title)
    cols = (["series"] if len(result.series) > 1 else []) + [a.label.split(".")[-1] if result.command == "pareto"
                                                              else a.label for a in result.axes]
    pareto = result.command == "pareto"
    cols += ["status", "$/h", "$/M tok", "tok/s/chip", "tok/s/user", "kW", "chips by type", "modes"]
    cols += ["frontier"] if pareto else []
    for c in cols:
        t.add_column(c, overflow="fold")
    for p in result.points:
        row = ([p.series] if len(result.series) > 1 else []) + [str(p.values.get(a.label)) for a in result.axes]
        if p.ok:
            row += [p.status, _fmt(p.cost_usd_per_hour, ",.2f"), _fmt(p.usd_per_million_output_tokens, ".3f"),
                    _fmt(p.tokens_per_s_per_chip, ",.1f"), _fmt(p.tokens_per_s_per_user, ",.1f"),
                    _fmt(None if p.power_w is None else p.power_w / 1e3, ",.1f"), _mix(p.chips_by_type),
                    _mix(p.modes, pct=True)]
            row += [("★" if p.frontier else "") + ("◆" if p.frontier_throughput else "")
                    + (" H" if p.envelope else "")] if pareto else []
        else:
            row += [Text(p.status, style="red" if p.status in ("failed", "error") else "")] + [""] * 6
            row += [Text(p.message[:100])] + ([""] if pareto else [])
        t.add_row(*row)
    console.print(t)
    if pareto:
        console.print("★ cheapest $/M tokens at its interactivity (cost frontier of its series); "
                      "◆ most tokens/s per chip at its interactivity (throughput frontier of its series); "
                      "H on the heterogeneous instance's cost frontier (over every series' plans: each is also "
                      "a plan of the instance)", highlight=False)
    failed = [p for p in result.points if p.status in ("failed", "error")]
    if failed:
        console.print(f"[red]{len(failed)} point(s) failed[/red]; they are listed above and in the outputs")
    for w in result.warnings:
        console.print(Text("warning: " + w, style="yellow"))


# ---------------------------------------------------------------------------------------------
# CLI (registered by placement.cli)

_Exec = Annotated[str, typer.Option("--executor", help="local (process pool) | ray")]
_Addr = Annotated[str | None, typer.Option("--address", help="Ray cluster address (auto, ray://host:10001)")]
_Workers = Annotated[int | None, typer.Option("--workers", help="parallel workers (default: CPU count)")]
_Solver = Annotated[str, typer.Option("--solver", help="cbc | highs | any PuLP backend name")]
_TL = Annotated[float | None, typer.Option("--time-limit", help="seconds per solve (breaks determinism if hit)")]
_Gap = Annotated[float | None, typer.Option("--gap", help="relative MIP gap per solve")]
_Plot = Annotated[Path | None, typer.Option("--plot", help="write a PNG chart here")]
_Json = Annotated[Path | None, typer.Option("--json", help="write every point as JSON here")]
_Csv = Annotated[Path | None, typer.Option("--csv", help="write every point as CSV here")]
_Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="no table")]
_Dry = Annotated[bool, typer.Option("--dry-run", help="validate every point, solve nothing")]
_Inst = Annotated[Path, typer.Argument(help="instance file (YAML or JSON)")]


def plain_errors(fn):
    """Print a :class:`PlacementError` verbatim (no rich markup or emoji: specs such as 5:100:20
    must not turn into pictures) and exit with its code; ``placement.cli.guarded`` handles the rest."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from placement.errors import PlacementError

        try:
            return fn(*args, **kwargs)
        except PlacementError as e:
            from placement.cli import err

            err.print("error: " + str(e), markup=False, emoji=False, highlight=False, soft_wrap=True)
            raise typer.Exit(e.exit_code) from None

    return wrapper


def _check_common(executor: str, workers: int | None, time_limit: float | None, gap: float | None,
                  outputs: list[Path | None]) -> None:
    from placement.executor import EXECUTORS

    if executor not in EXECUTORS:
        raise InputError(f"expected one of {', '.join(EXECUTORS)}, got {executor!r}", field="--executor")
    if workers is not None and workers < 1:
        raise InputError(f"expected workers >= 1, got {workers}", field="--workers")
    if time_limit is not None and time_limit <= 0:
        raise InputError(f"expected seconds > 0, got {time_limit}", field="--time-limit")
    if gap is not None and not 0 <= gap < 1:
        raise InputError(f"expected a relative gap in [0, 1), got {gap}", field="--gap")
    for p in outputs:
        if p is not None and not p.parent.exists():
            raise InputError(f"folder {p.parent} does not exist", file=str(p))


class progress_bar:
    """A rich progress bar on stderr, as a ``progress(done, total)`` callback."""

    def __init__(self, description: str, total: int):
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        from placement.cli import err

        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TimeRemainingColumn(), console=err, transient=False)
        self.total = total
        self.task = self.progress.add_task(description, total=total)

    def __enter__(self):
        self.progress.__enter__()
        return self

    def __exit__(self, *exc):
        return self.progress.__exit__(*exc)

    def __call__(self, done: int, total: int) -> None:
        self.progress.update(self.task, completed=done, total=total)


def _write_outputs(result: SweepResult, json_path, csv_path, plot_path, plot_fn) -> None:
    from placement.output import write_atomic

    if json_path is not None:
        write_atomic(json_path, result.model_dump_json(indent=2))
    if csv_path is not None:
        write_atomic(csv_path, to_csv(result))
    if plot_path is not None:
        plot_fn(result, plot_path)


def _finish(result: SweepResult) -> None:
    from placement.errors import EXIT_SOLVER

    if any(p.status in ("failed", "error") for p in result.points):
        raise typer.Exit(EXIT_SOLVER)


@plain_errors
def pareto_cli(
    instance: _Inst,
    sweep: Annotated[list[str], typer.Option("--sweep", help="tpot_ms=LO:HI:N | ttft_ms=LO:HI:N (repeatable; grammar as for sweep --set)")],
    class_: Annotated[list[str] | None, typer.Option("--class", help="sweep only this class (repeatable)")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="PATH=VALUE fixed for every point, e.g. "
                                                                 "workload.classes.chat.rate_rps=1600 (repeatable)")] = None,
    variants: Annotated[bool, typer.Option("--variants/--no-variants",
                                           help="also solve each homogeneous fleet and each mode")] = True,
    plot: _Plot = None,
    json_path: _Json = None,
    csv_path: _Csv = None,
    solver: _Solver = "cbc",
    time_limit: _TL = None,
    gap: _Gap = None,
    executor: _Exec = "local",
    address: _Addr = None,
    workers: _Workers = None,
    quiet: _Quiet = False,
    dry_run: _Dry = False,
) -> None:
    """SLO sweep: cost, throughput per chip and interactivity per point, with Pareto frontiers."""
    from placement.cli import out
    from placement.loading import load_instance
    from placement.plots import plot_pareto

    _check_common(executor, workers, time_limit, gap, [plot, json_path, csv_path])
    inst = load_instance(instance)
    kw = {"classes": class_ or None, "overrides": set_ or None, "source": str(instance), "backend": solver, "time_limit_s": time_limit, "gap": gap,
              "variants": variants, "executor": executor, "workers": workers, "address": address}
    plan = run_pareto(inst, sweep, validate_only=True, **kw)
    n = math.prod(len(a.values) for a in plan.axes) * len(plan.series)
    if dry_run:
        out.print(f"[green]ok[/green] {n} solves ({len(plan.series)} series: {', '.join(plan.series)}); "
                  "every point is a valid instance", highlight=False)
        return
    with progress_bar(f"pareto {inst.name}", n) as bar:
        result = run_pareto(inst, sweep, progress=bar, **kw)
    _write_outputs(result, json_path, csv_path, plot, plot_pareto)
    if not quiet:
        print_result(out, result)
    _finish(result)


@plain_errors
def sweep_cli(
    instance: _Inst,
    set_: Annotated[list[str], typer.Option("--set", help="PATH=VALUES, e.g. workload.classes.chat.rate_rps="
                                                          "10:1000:log10 (repeatable: a grid)")],
    plot: _Plot = None,
    json_path: _Json = None,
    csv_path: _Csv = None,
    solver: _Solver = "cbc",
    time_limit: _TL = None,
    gap: _Gap = None,
    executor: _Exec = "local",
    address: _Addr = None,
    workers: _Workers = None,
    quiet: _Quiet = False,
    dry_run: _Dry = False,
) -> None:
    """What-if: solve the instance across a grid of values of any of its fields."""
    from placement.cli import err, out
    from placement.loading import load_instance
    from placement.plots import plot_sweep

    _check_common(executor, workers, time_limit, gap, [plot, json_path, csv_path])
    inst = load_instance(instance)
    kw = {"source": str(instance), "backend": solver, "time_limit_s": time_limit, "gap": gap, "executor": executor,
              "workers": workers, "address": address}
    plan = run_sweep(inst, set_, validate_only=True, **kw)
    n = math.prod(len(a.values) for a in plan.axes)
    if dry_run:
        out.print(f"[green]ok[/green] {n} points; every point is a valid instance", highlight=False)
        for w in plan.warnings:
            err.print(f"[yellow]warning:[/yellow] {w}", highlight=False)
        return
    with progress_bar(f"sweep {inst.name}", n) as bar:
        result = run_sweep(inst, set_, progress=bar, **kw)
    _write_outputs(result, json_path, csv_path, plot, plot_sweep)
    if not quiet:
        print_result(out, result)
    _finish(result)
