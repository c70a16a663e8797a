"""Run a PuLP model on a backend and report status, bound and time uniformly.

* ``"cbc"``: PuLP's bundled CBC binary. Its log goes to a unique temporary
  file (PuLP's own temp files are uuid-named), which is parsed for the result
  line, the lower bound and the gap when CBC stops early; a proven optimum has
  bound = objective.
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
import tempfile
import time
from dataclasses import dataclass

import pulp

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
    out = [alias for alias, pulp_name in (("cbc", "PULP_CBC_CMD"), ("highs", "HiGHS")) if pulp_name in names]
    return out + [n for n in names if n not in ("PULP_CBC_CMD", "HiGHS")]


def _unavailable(backend: str, why: str) -> Outcome:
    message = f"backend {backend!r} unavailable ({why}); available: {', '.join(available_backends())}"
    return Outcome("error", message, False, None, 0.0, backend)


def _make_solver(backend: str, mip: bool, time_limit_s, gap, threads, msg: bool, log_path: str | None):
    common = dict(mip=mip, timeLimit=time_limit_s, gapRel=gap if mip else None, threads=threads)
    if backend == "cbc":
        try:
            return pulp.PULP_CBC_CMD(msg=False, logPath=log_path, _skip_v4_deprecation=True, **common)
        except TypeError:  # PuLP without the v4 deprecation switch
            return pulp.PULP_CBC_CMD(msg=False, logPath=log_path, **common)
    if backend == "highs":
        return pulp.HiGHS(msg=msg, **common)
    return pulp.getSolver(backend, msg=msg, **common)


def run(
    m: pulp.LpProblem,
    backend: str,
    *,
    mip: bool,
    time_limit_s: float | None,
    gap: float | None,
    threads: int | None,
    msg: bool,
) -> Outcome:
    """Solve ``m`` with ``backend``; never raises for solver failures.

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
    log_path = None
    if backend == "cbc":
        fd, log_path = tempfile.mkstemp(prefix="placement-cbc-", suffix=".log")
        os.close(fd)
    try:
        try:
            solver = _make_solver(backend, mip, time_limit_s, gap, threads, msg, log_path)
        except Exception as exc:  # unknown name or unsupported options
            return _unavailable(backend, str(exc) or type(exc).__name__)
        if not solver.available():
            return _unavailable(backend, "not installed")
        start = time.perf_counter()
        try:
            m.solve(solver)
        except Exception as exc:  # solver crashed or refused the model
            return Outcome("error", f"{backend}: {exc}", False, None, time.perf_counter() - start, backend)
        seconds = time.perf_counter() - start
        if backend == "highs":
            return _highs_outcome(m, seconds)
        cbc_log = ""
        if log_path is not None:
            with open(log_path, errors="replace") as fh:
                cbc_log = fh.read()
            if msg:
                log.info("%s", cbc_log)
        return _pulp_outcome(m, backend, seconds, time_limit_s, cbc_log)
    finally:
        if log_path is not None:
            try:
                os.remove(log_path)
            except FileNotFoundError:
                pass


def _highs_outcome(m: pulp.LpProblem, seconds: float) -> Outcome:
    import highspy

    h = m.solverModel
    status = h.getModelStatus()
    info = h.getInfo()
    text = h.modelStatusToString(status)
    has_values = info.primal_solution_status == 2  # kSolutionStatusFeasible
    is_mip = any(v.cat == pulp.LpInteger for v in m.variables())
    bound = info.mip_dual_bound if is_mip else None
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


_CBC_RESULT = re.compile(r"^Result - (.*)$", re.M)
_CBC_BOUND = re.compile(r"^Lower bound:\s+(\S+)", re.M)


def _pulp_outcome(m: pulp.LpProblem, backend: str, seconds: float, time_limit_s, cbc_log: str) -> Outcome:
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
