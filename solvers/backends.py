"""Run a PuLP model on a backend and report status, bound and time uniformly.

* ``"cbc"``: PuLP's bundled CBC binary. Its MPS, solution and log files go
  to a fresh temporary directory per call (removed afterwards, even on
  failure); the log is parsed for the result line and, when CBC stops early,
  the lower bound; a proven optimum has bound = objective.
* ``"highs"``: :class:`pulp.HiGHS`, the in-process highspy API. Status, dual
  bound and gap come from ``Highs.getModelStatus()`` / ``getInfo()``
  (``mip_dual_bound``; ``objective_function_value`` for an LP).
* any other name: :func:`pulp.getSolver`; the bound is the objective when
  optimal, otherwise unknown.

No state is shared between calls, so concurrent solves from threads or
processes are safe.
"""

from __future__ import annotations

import logging
import math
import os
import re
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

import numpy as np
import pulp

from solvers.tolerances import REL_OBJECTIVE_REPORT

__all__ = ["Outcome", "available_backends", "run"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """What a backend run produced; ``bound`` refers to the model's own objective."""

    status: str
    message: str
    has_values: bool
    bound: float | None
    seconds: float
    backend: str


def available_backends() -> list[str]:
    """Backend names usable here: "cbc", "highs" and PuLP's other available solvers.

    Examples
    --------
    >>> "cbc" in available_backends()
    True
    """
    names = pulp.listSolvers(onlyAvailable=True)
    out = [
        alias
        for alias, pulp_name in (("cbc", "PULP_CBC_CMD"), ("highs", "HiGHS"))
        if pulp_name in names
    ]
    return out + [n for n in names if n not in ("PULP_CBC_CMD", "HiGHS")]


def _unavailable(backend: str, why: str) -> Outcome:
    message = (
        f"backend {backend!r} unavailable ({why}); available: {', '.join(available_backends())}"
    )
    return Outcome("error", message, False, None, 0.0, backend)


_banner_lock = threading.Lock()
_banner_done = False


def _quiet_highs_banner(highspy) -> None:
    """Construct the process's first ``Highs`` with file descriptor 1 sent to /dev/null.

    HiGHS prints its banner on stdout (from C++, ignoring ``output_flag``)
    the first time a ``Highs`` is constructed in a process; a caller that
    reads a JSON plan from stdout, or the CLI's ``-q``, must not get it.
    """
    global _banner_done
    with _banner_lock:
        if _banner_done:
            return
        sys.stdout.flush()
        saved = os.dup(1)
        try:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), 1)
                highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        _banner_done = True


class _BatchHiGHS(pulp.HiGHS):
    """:class:`pulp.HiGHS` that talks to highspy in batches.

    PuLP's own ``actualSolve`` calls ``addCol``/``addRow`` once per variable
    and constraint and rescans every constraint in ``lp.variables()`` three
    times; on large models that costs more than the solve. This override
    fills the same ``Highs`` object (``lp.solverModel``) through ``addVars``,
    ``changeColsCost``, ``changeColsIntegrality`` and one ``addRows`` call,
    and reads back only primal values and the PuLP status. Bounds, gap and
    the detailed status are read from ``lp.solverModel`` by the caller.
    ``start`` (variable -> value), if set, is passed as a starting solution;
    ``target``, if set, is HiGHS's ``objective_target`` (stop at a plan this good).
    """

    start: dict | None = None
    target: float | None = None

    def actualSolve(self, lp, **kwargs):
        import highspy

        _quiet_highs_banner(highspy)
        variables = lp.variables()
        self._run(lp, variables, highspy, self.start)
        if self.start and not _consistent(lp.solverModel):
            # HiGHS 1.16 can map a start into its presolved space without the objective offset and
            # then call the start optimal (a 4x too expensive plan of spec-decode-draft's collapsed
            # fleet, reported with gap 0); its answer is then not trusted and the model solved again.
            log.warning("HiGHS mis-read the start (objective %s vs %s of its own solution); solving without it",
                        lp.solverModel.getInfo().objective_function_value, _solution_objective(lp.solverModel))
            self._run(lp, variables, highspy, None)
        h = lp.solverModel
        status = h.getModelStatus()
        ms = highspy.HighsModelStatus
        has_values = h.getInfo().primal_solution_status == 2  # kSolutionStatusFeasible
        if has_values:
            for var, value in zip(variables, h.getSolution().col_value):
                var.varValue = value
        if status == ms.kOptimal:
            lp.assignStatus(pulp.LpStatusOptimal, pulp.LpSolutionOptimal)
        elif status in (ms.kInfeasible, ms.kUnboundedOrInfeasible):
            lp.assignStatus(pulp.LpStatusInfeasible, pulp.LpSolutionInfeasible)
        elif status == ms.kUnbounded:
            lp.assignStatus(pulp.LpStatusUnbounded, pulp.LpSolutionUnbounded)
        elif has_values:
            lp.assignStatus(pulp.LpStatusOptimal, pulp.LpSolutionIntegerFeasible)
        else:
            lp.assignStatus(pulp.LpStatusNotSolved, pulp.LpSolutionNoSolutionFound)
        return lp.status

    def _run(self, lp, variables, highspy, start):
        self.createAndConfigureSolver(lp)
        if self.target is not None:
            lp.solverModel.setOptionValue("objective_target", float(self.target))
        self._pass_model(lp, variables, highspy)
        if start:
            values = np.array([start.get(var, 0.0) for var in variables], dtype=np.float64)
            lp.solverModel.setSolution(len(values), np.arange(len(values), dtype=np.int32), values)
        self.callSolver(lp)

    def _pass_model(self, lp, variables, highspy):
        inf = highspy.kHighsInf
        h = lp.solverModel
        position = {id(v): i for i, v in enumerate(variables)}
        lower = np.array(
            [-inf if v.lowBound is None else v.lowBound for v in variables], dtype=np.float64
        )
        upper = np.array(
            [inf if v.upBound is None else v.upBound for v in variables], dtype=np.float64
        )
        h.addVars(len(variables), lower, upper)
        sign = -1.0 if lp.sense == pulp.LpMaximize else 1.0
        objective = lp.objective or {}
        cols = np.array([position[id(v)] for v in objective], dtype=np.int32)
        if len(cols):
            h.changeColsCost(
                len(cols), cols, np.array([sign * c for c in objective.values()], dtype=np.float64)
            )
        if self.mip:
            ints = np.array(
                [i for i, v in enumerate(variables) if v.cat == pulp.LpInteger], dtype=np.int32
            )
            if len(ints):
                kinds = np.full(len(ints), int(highspy.HighsVarType.kInteger), dtype=np.uint8)
                h.changeColsIntegrality(len(ints), ints, kinds)
        starts, index, value, row_lower, row_upper = [], [], [], [], []
        for constraint in lp._constraints.values():
            starts.append(len(index))
            for var, coef in constraint.items():
                if coef != 0:
                    index.append(position[id(var)])
                    value.append(coef)
            lb, ub = constraint.getLb(), constraint.getUb()
            row_lower.append(-inf if lb is None else lb)
            row_upper.append(inf if ub is None else ub)
        if starts:
            h.addRows(
                len(starts),
                np.array(row_lower, dtype=np.float64),
                np.array(row_upper, dtype=np.float64),
                len(index),
                np.array(starts, dtype=np.int32),
                np.array(index, dtype=np.int32),
                np.array(value, dtype=np.float64),
            )


def _solution_objective(h) -> float:
    lp = h.getLp()
    return float(np.dot(lp.col_cost_, h.getSolution().col_value) + lp.offset_)


def _consistent(h) -> bool:
    """Whether HiGHS's reported objective is that of the solution it returns (when it returns one)."""
    info = h.getInfo()
    if info.primal_solution_status != 2:
        return True
    reported, actual = info.objective_function_value, _solution_objective(h)
    return abs(reported - actual) <= REL_OBJECTIVE_REPORT * max(1.0, abs(actual))


def _make_solver(
    backend: str, mip: bool, time_limit_s, gap, threads, msg: bool, log_path: str | None,
    start: dict | None = None,
    target: float | None = None,
):
    common = dict(mip=mip, timeLimit=time_limit_s, gapRel=gap if mip else None, threads=threads)
    if backend == "cbc":
        cbc = {"msg": False, "logPath": log_path, "warmStart": bool(start), **common}
        try:
            return pulp.PULP_CBC_CMD(_skip_v4_deprecation=True, **cbc)
        except TypeError:  # PuLP without the v4 deprecation switch
            return pulp.PULP_CBC_CMD(**cbc)
    if backend == "highs":
        solver = _BatchHiGHS(msg=msg, **common)
        solver.start, solver.target = start, target
        return solver
    options = {k: val for k, val in common.items() if val is not None}
    try:
        return pulp.getSolver(backend, msg=msg, **options)
    except TypeError:  # this solver does not take gapRel/threads: run it without them
        options = {k: val for k, val in options.items() if k in ("mip", "timeLimit")}
        return pulp.getSolver(backend, msg=msg, **options)


def run(
    m: pulp.LpProblem,
    backend: str,
    *,
    mip: bool,
    time_limit_s: float | None,
    gap: float | None,
    threads: int | None,
    msg: bool,
    start: dict[pulp.LpVariable, float] | None = None,
    target: float | None = None,
) -> Outcome:
    """Solve ``m`` with ``backend``; never raises for solver failures.

    ``start`` (a value for every variable) is handed to HiGHS and CBC as a
    starting solution (other backends ignore it); the solvers check it
    themselves and drop it if it is infeasible. ``target`` stops HiGHS at the
    first plan of at most that objective (other backends ignore it).

    Examples
    --------
    >>> m = pulp.LpProblem("t")
    >>> x = m.add_variable("x", 0, 5, pulp.LpInteger)
    >>> m.addConstraint(pulp.LpConstraint(pulp.LpAffineExpression({x: 2.0}), pulp.LpConstraintGE, "c", 3))
    >>> m.setObjective(pulp.LpAffineExpression({x: 1.0}))
    >>> o = run(m, "highs", mip=True, time_limit_s=None, gap=None, threads=None, msg=False)
    >>> o.status, o.bound
    ('optimal', 2.0)
    >>> run(m, "nope", mip=True, time_limit_s=None, gap=None, threads=None, msg=False).status
    'error'
    """
    # Command-line solvers write the model, solution and log into a private
    # directory that is removed afterwards, even when the solver fails.
    with tempfile.TemporaryDirectory(prefix="placement-solve-") as tmp:
        log_path = os.path.join(tmp, "cbc.log") if backend == "cbc" else None
        try:
            solver = _make_solver(backend, mip, time_limit_s, gap, threads, msg, log_path, start, target)
        except Exception as exc:  # noqa: BLE001 - unknown name or unsupported options
            return _unavailable(backend, (str(exc) or type(exc).__name__).splitlines()[0])
        if not solver.available():
            return _unavailable(backend, "not installed")
        if hasattr(solver, "tmpDir"):
            solver.tmpDir = tmp
        if start and backend == "cbc":  # PuLP writes CBC's MIP start from the initial values
            for var, value in start.items():
                var.setInitialValue(value)
        began = time.perf_counter()
        try:
            m.solve(solver)
        except Exception as exc:  # noqa: BLE001 - solver crashed or refused the model
            seconds = time.perf_counter() - began
            return Outcome("error", f"{backend}: {exc}", False, None, seconds, backend)
        seconds = time.perf_counter() - began
        if backend == "highs":
            return _highs_outcome(m, seconds, mip)
        cbc_log = ""
        if log_path is not None and os.path.exists(log_path):
            with open(log_path, errors="replace") as fh:
                cbc_log = fh.read()
            if msg:
                log.info("%s", cbc_log)
        return _pulp_outcome(m, backend, seconds, time_limit_s, cbc_log)


def _highs_outcome(m: pulp.LpProblem, seconds: float, mip: bool) -> Outcome:
    import highspy

    h = m.solverModel
    status = h.getModelStatus()
    info = h.getInfo()
    text = h.modelStatusToString(status)
    has_values = info.primal_solution_status == 2  # kSolutionStatusFeasible
    bound = info.mip_dual_bound if mip else None
    ms = highspy.HighsModelStatus
    if status == ms.kOptimal:
        name = "optimal"
        if bound is None or not math.isfinite(bound):
            bound = info.objective_function_value
    elif status == ms.kTimeLimit:
        name = "time_limit"
    elif status in (ms.kInfeasible, ms.kUnboundedOrInfeasible):
        name, has_values = "infeasible", False
    elif status == ms.kUnbounded:
        name, has_values = "unbounded", False
    elif has_values:
        name = "feasible"
    else:
        name = "error"
    if bound is not None and not math.isfinite(bound):
        bound = None
    return Outcome(name, f"highs: {text}", has_values, bound, seconds, "highs")


_CBC_RESULT = re.compile(r"^Result - (.*)$", re.MULTILINE)
_CBC_BOUND = re.compile(r"^Lower bound:\s+(\S+)", re.MULTILINE)


def _pulp_outcome(
    m: pulp.LpProblem, backend: str, seconds: float, time_limit_s, cbc_log: str
) -> Outcome:
    status, sol_status = m.status, m.sol_status
    has_values = sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible)
    result = _CBC_RESULT.search(cbc_log)
    text = result.group(1).strip() if result else pulp.LpStatus[status]
    lowered = text.lower()
    if "infeasible" in lowered or status == pulp.LpStatusInfeasible:
        return Outcome("infeasible", f"{backend}: {text}", False, None, seconds, backend)
    if "unbounded" in lowered or status == pulp.LpStatusUnbounded:
        return Outcome("unbounded", f"{backend}: {text}", False, None, seconds, backend)
    bound_match = _CBC_BOUND.search(cbc_log)
    bound = float(bound_match.group(1)) if bound_match else None
    if "time" in lowered or (time_limit_s is not None and status == pulp.LpStatusNotSolved):
        name = "time_limit"
    elif status == pulp.LpStatusOptimal and sol_status == pulp.LpSolutionOptimal:
        name = "optimal"
        if bound is None:
            bound = pulp.value(m.objective)
    elif has_values:
        name = "feasible"
    else:
        name = "error"
    if bound is not None and not math.isfinite(bound):
        bound = None
    return Outcome(name, f"{backend}: {text}", has_values, bound, seconds, backend)
