"""The HiGHS backend (``"highs"``): :class:`pulp.HiGHS` driven through the in-process highspy API.

Status, dual bound and gap come from ``Highs.getModelStatus()`` /
``getInfo()`` (``mip_dual_bound``; ``objective_function_value`` for an LP).
The model is handed over in batches (:class:`_BatchHiGHS`), a start is
checked against the objective HiGHS reports for it (and dropped if HiGHS
mis-read it), and the banner HiGHS prints on stdout is suppressed. The solve
runs in highspy's solver thread while the calling thread waits, so a signal
(Ctrl-C, or SIGTERM turned into an exception by the CLI) cancels it through
HiGHS's interrupt callback instead of waiting for HiGHS to finish; the same wait cancels a solve
that runs past its time limit or whose process grows past the memory limit (:mod:`solvers.limits`).
"""

from __future__ import annotations

import logging
import math
import os
import sys
import threading
import time

import numpy as np
import pulp

from solvers.backends.base import Capabilities, Outcome, SolveOptions, finite_or_none
from solvers.backends.pulp_cmd import PulpBackend, pulp_options
from solvers.backends.threads import cancellable
from solvers.limits import over_memory
from solvers.tolerances import REL_OBJECTIVE_REPORT

__all__ = ["HighsBackend", "quiet_highs_banner"]

log = logging.getLogger("solvers.backends")

#: How often the waiting thread wakes (to let a pending signal raise) while HiGHS solves, in seconds.
_WAIT_S = 0.1

#: Seconds past its time limit after which a HiGHS solve is cancelled (HiGHS checks its limit between phases).
STOP_GRACE_S = 1.0

#: Seconds a cancelled HiGHS solve is waited for before it is abandoned (left running, unread, in its thread).
ABANDON_S = 1.0

STOPPED_AT_TIME = "stopped at the time limit"

#: HiGHS ``presolve_mode`` (0 default = full, 2 light): full presolve's probing of spec-decode-draft's 304
#: binaries takes ~25 CPU s (its whole solve time), light presolve solves it at the root in 0.1 s with the
#: same optimum; on the other shipped instances the two were measured within noise of each other.
PRESOLVE_MODE = 2


class HighsBackend(PulpBackend):
    """HiGHS in-process: MIP start, best bound, objective target, time limit."""

    capabilities = Capabilities(start=True, best_bound=True, objective_target=True, time_limit=True)
    writes_files = False  # the model goes to HiGHS in memory; its log is off

    def __init__(self) -> None:
        super().__init__("highs", "HiGHS")

    def make_solver(self, options: SolveOptions, log_path: str | None) -> pulp.LpSolver:
        solver = _BatchHiGHS(msg=options.msg, **pulp_options(options))
        solver.start, solver.target, solver.feasibility = options.start, options.target, options.feasibility
        return solver

    def outcome(self, model: pulp.LpProblem, options: SolveOptions, seconds: float, log_path: str | None) -> Outcome:
        return highs_outcome(model, seconds, options.mip)


_banner_lock = threading.Lock()
_banner_done = False


def quiet_highs_banner() -> None:
    """Construct the process's first ``Highs`` with file descriptor 1 sent to /dev/null.

    HiGHS prints its banner on stdout (from C++, ignoring ``output_flag``)
    the first time a ``Highs`` is constructed in a process; a caller that
    reads a JSON plan from stdout, or the CLI's ``-q``, must not get it.
    Call this before any ``Highs`` is made (PuLP's own ``pulp.HiGHS`` included).
    """
    import highspy

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
    feasibility: float | None = None

    def actualSolve(self, lp, **kwargs):
        import highspy

        quiet_highs_banner()
        variables = lp.variables()
        self._run(lp, variables, highspy, self.start)
        if not lp.abandoned and self.start and not _consistent(lp.solverModel):
            # HiGHS 1.16 can map a start into its presolved space without the objective offset and
            # then call the start optimal (a 4x too expensive plan of spec-decode-draft's collapsed
            # fleet, reported with gap 0); its answer is then not trusted and the model solved again.
            log.warning("HiGHS mis-read the start (objective %s vs %s of its own solution); solving without it",
                        lp.solverModel.getInfo().objective_function_value, _solution_objective(lp.solverModel))
            self._run(lp, variables, highspy, None)
        if lp.abandoned:  # HiGHS is still running in its thread: nothing of it may be read
            lp.assignStatus(pulp.LpStatusNotSolved, pulp.LpSolutionNoSolutionFound)
            return lp.status
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
        lp.solverModel.setOptionValue("presolve_mode", PRESOLVE_MODE)
        if self.target is not None:
            lp.solverModel.setOptionValue("objective_target", float(self.target))
        if self.feasibility is not None:
            for option in ("primal_feasibility_tolerance", "mip_feasibility_tolerance"):
                lp.solverModel.setOptionValue(option, float(self.feasibility))
        self._pass_model(lp, variables, highspy)
        if start:
            values = np.array([start.get(var, 0.0) for var in variables], dtype=np.float64)
            lp.solverModel.setSolution(len(values), np.arange(len(values), dtype=np.int32), values)
        self.callSolver(lp)

    def callSolver(self, lp):
        h = lp.solverModel
        h.HandleUserInterrupt = True  # HiGHS polls the interrupt callback; cancelSolve() makes it stop
        done = threading.Event()  # not Thread.join: an interrupted join() can report a live thread as ended
        lp.stopped_by, lp.abandoned = None, False

        def run():
            try:
                h.run()
            finally:
                done.set()

        # HiGHS checks its own time limit between phases; past it by STOP_GRACE_S, or with this process
        # above the memory limit (solvers.limits: RLIMIT_AS would limit Python too), it is cancelled. Some
        # phases poll neither (MIP presolve's dominated columns took minutes on a 1M-column model): a solve
        # that has not stopped ABANDON_S after its cancel is left to finish in its daemon thread, unread.
        deadline = None if self.timeLimit is None else time.monotonic() + self.timeLimit + STOP_GRACE_S
        cancelled_at = None
        with cancellable(h.cancelSolve):  # stopped by the threaded_map this thread works for, if any
            threading.Thread(target=run, name="highs-solve", daemon=True).start()
            try:
                while not done.wait(_WAIT_S):
                    now = time.monotonic()
                    if cancelled_at is not None:
                        if now > cancelled_at + ABANDON_S:
                            lp.abandoned = True
                            return
                        continue
                    ceiling = over_memory()
                    if ceiling is not None:
                        lp.stopped_by = (f"stopped at the memory limit of {ceiling / 2**30:.2f} GiB (--memory-limit); "
                                         "give a larger --memory-limit")
                    elif deadline is not None and now > deadline:
                        lp.stopped_by = STOPPED_AT_TIME
                    if lp.stopped_by is not None:
                        h.cancelSolve()
                        cancelled_at = now
            except BaseException:
                h.cancelSolve()  # HiGHS stops at its next interrupt check; wait for it, then let the signal through
                done.wait(ABANDON_S)
                raise

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
        for constraint in lp.constraints():
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


def highs_outcome(m: pulp.LpProblem, seconds: float, mip: bool) -> Outcome:
    """Status, dual bound and gap from ``Highs.getModelStatus()`` / ``getInfo()`` of the solved model."""
    import highspy

    if getattr(m, "abandoned", False):
        stopped = getattr(m, "stopped_by", None) or STOPPED_AT_TIME
        name = "time_limit" if stopped == STOPPED_AT_TIME else "error"
        return Outcome(name, f"highs: {stopped} (HiGHS did not stop within {ABANDON_S:g} s of its cancel; "
                       "left to end in the background)", False, None, seconds, "highs")
    h = m.solverModel
    status = h.getModelStatus()
    info = h.getInfo()
    text = h.modelStatusToString(status)
    has_values = info.primal_solution_status == 2  # kSolutionStatusFeasible
    bound = info.mip_dual_bound if mip else None
    ms = highspy.HighsModelStatus
    stopped = getattr(m, "stopped_by", None)  # cancelled by the wait of _BatchHiGHS.callSolver
    if stopped is not None and status != ms.kOptimal:
        name = "time_limit" if stopped == STOPPED_AT_TIME else "feasible" if has_values else "error"
        text = stopped
    elif status == ms.kOptimal:
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
    return Outcome(name, f"highs: {text}", has_values, finite_or_none(bound), seconds, "highs")


