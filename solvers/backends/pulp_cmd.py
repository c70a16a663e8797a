"""Backends run through PuLP's solver classes: CBC (bundled) and any other solver PuLP names.

* :class:`CbcBackend` (``"cbc"``): PuLP's bundled CBC binary, run under a
  watchdog (:mod:`solvers.backends.watchdog`: own process group, killed with
  ``placement`` or at the deadline, since CBC checks its own limit only after
  its root LP). Its MPS, solution and log files go to a fresh temporary
  directory per call (removed afterwards, even on failure or a signal; after a
  SIGKILL, by the next solve: :mod:`solvers.backends.scratch`); the log
  is parsed for the result line and, when CBC stops early, the lower bound; a
  proven optimum has bound = objective.
* :class:`PulpBackend`: any name :func:`pulp.getSolver` knows; the bound is
  the objective when optimal, otherwise unknown.

No state is shared between calls, so concurrent solves from threads or
processes are safe.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import tempfile
import time

import pulp

from solvers.backends.base import Capabilities, Outcome, SolveOptions, finite_or_none, unavailable
from solvers.backends.scratch import scratch_dir
from solvers.backends.watchdog import run_watched
from solvers.limits import child_address_space, clip_time

__all__ = ["CbcBackend", "PulpBackend"]

log = logging.getLogger("solvers.backends")

_CBC_RESULT = re.compile(r"^Result - (.*)$", re.MULTILINE)
_CBC_BOUND = re.compile(r"^Lower bound:\s+(\S+)", re.MULTILINE)
#: Appended to CBC's log when the watchdog stopped it: whatever CBC then printed, the run hit its time limit.
_WATCHDOG_LINE = "placement: the watchdog stopped CBC at its time limit"


def pulp_options(options: SolveOptions) -> dict:
    """The options every PuLP solver class takes, as PuLP names them."""
    return {"mip": options.mip, "timeLimit": options.time_limit_s,
            "gapRel": options.gap if options.mip else None, "threads": options.threads}


class PulpBackend:
    """Any solver PuLP knows by ``pulp_name`` (:func:`pulp.getSolver`), with the options it accepts."""

    capabilities = Capabilities(start=False, best_bound=False, objective_target=False, time_limit=True)

    def __init__(self, name: str, pulp_name: str | None = None):
        self.name = name
        self.pulp_name = pulp_name or name

    def available(self) -> bool:
        try:
            return bool(self.make_solver(SolveOptions(), None).available())
        except Exception:  # noqa: BLE001 - unknown to PuLP or refuses default options
            return False

    def make_solver(self, options: SolveOptions, log_path: str | None) -> pulp.LpSolver:
        """The configured PuLP solver object."""
        given = {k: val for k, val in pulp_options(options).items() if val is not None}
        try:
            return pulp.getSolver(self.pulp_name, msg=options.msg, **given)
        except TypeError:  # this solver does not take gapRel/threads: run it without them
            given = {k: val for k, val in given.items() if k in ("mip", "timeLimit")}
            return pulp.getSolver(self.pulp_name, msg=options.msg, **given)

    def log_path(self, tmp: str) -> str | None:
        """Where the solver writes its log inside the call's private directory (None: nowhere)."""
        return None

    def prepare(self, model: pulp.LpProblem, options: SolveOptions) -> None:
        """Set what the solver reads from the model itself before solving (nothing here)."""

    #: Whether the solver writes files (model, solution, log): they go to a private directory per call.
    writes_files = True

    def solve(self, model: pulp.LpProblem, options: SolveOptions) -> Outcome:
        # Command-line solvers write the model, solution and log into a private
        # directory that is removed afterwards, even when the solver fails.
        with scratch_dir() if self.writes_files else contextlib.nullcontext(tempfile.gettempdir()) as tmp:
            log_path = self.log_path(tmp)
            try:
                solver = self.make_solver(options, log_path)
            except Exception as exc:  # noqa: BLE001 - unknown name or unsupported options
                return unavailable(self.name, (str(exc) or type(exc).__name__).splitlines()[0])
            if not solver.available():
                return unavailable(self.name, "not installed")
            if hasattr(solver, "tmpDir"):
                solver.tmpDir = tmp
            self.prepare(model, options)
            began = time.perf_counter()
            try:
                model.solve(solver)
            except Exception as exc:  # noqa: BLE001 - solver crashed or refused the model
                return Outcome("error", f"{self.name}: {exc}", False, None, time.perf_counter() - began, self.name)
            seconds = time.perf_counter() - began
            return self.outcome(model, options, seconds, log_path)

    def outcome(self, model: pulp.LpProblem, options: SolveOptions, seconds: float, log_path: str | None) -> Outcome:
        """Status, bound and message from PuLP's status and the solver log, if any."""
        solver_log = ""
        if log_path is not None and os.path.exists(log_path):
            with open(log_path, errors="replace") as fh:
                solver_log = fh.read()
            if options.msg:
                log.info("%s", solver_log)
        return pulp_outcome(model, self.name, seconds, options.time_limit_s, solver_log)


class CbcBackend(PulpBackend):
    """PuLP's bundled CBC (``"cbc"``): MIP start, bound from its log, time limit."""

    capabilities = Capabilities(start=True, best_bound=True, objective_target=False, time_limit=True)

    def __init__(self) -> None:
        super().__init__("cbc", "PULP_CBC_CMD")

    def make_solver(self, options: SolveOptions, log_path: str | None) -> pulp.LpSolver:
        cbc = {"msg": False, "logPath": log_path, "warmStart": bool(options.start), **pulp_options(options)}
        try:
            return _WatchedCbc(_skip_v4_deprecation=True, **cbc)
        except TypeError:  # PuLP without the v4 deprecation switch
            return _WatchedCbc(**cbc)

    def log_path(self, tmp: str) -> str | None:
        return os.path.join(tmp, "cbc.log")

    def prepare(self, model: pulp.LpProblem, options: SolveOptions) -> None:
        if options.start:  # PuLP writes CBC's MIP start from the initial values
            for var, value in options.start.items():
                var.setInitialValue(value)


class _WatchedCbc(pulp.PULP_CBC_CMD):
    """PuLP's CBC command, always through an MPS file, run by :func:`run_watched`.

    The command line is PuLP's own (:meth:`pulp.PULP_CBC_CMD.solve_CBC`); the
    deadline is CBC's ``-sec`` limit: at it CBC gets SIGINT (it stops and writes
    its best incumbent), :data:`~solvers.backends.watchdog.KILL_GRACE_S` later
    SIGKILL. A killed CBC leaves no solution: the model stays "not solved".
    """

    def solve_CBC(self, lp: pulp.LpProblem, use_mps: bool = True):
        if not self.executable(self.path):
            raise pulp.PulpSolverError(f"Pulp: cannot execute {self.path}")
        _, mps, sol, mst = self.create_tmp_files(lp.name, "lp", "mps", "sol", "mst")
        vs, var_names, con_names, _ = lp.writeMPS(mps, rename=1)
        args = [self.path, mps]
        if lp.sense == pulp.LpMaximize:
            args.append("-max")
        if self.optionsDict.get("warmStart", False):
            self.writesol(mst, lp, vs, var_names, con_names)
            args += ["-mips", mst]
        limit_s = clip_time(self.timeLimit)  # writing the files took some of it
        if limit_s is not None and limit_s <= 0:
            lp.assignStatus(pulp.LpStatusNotSolved, pulp.LpSolutionNoSolutionFound)
            return lp.status
        if limit_s is not None:
            args += ["-sec", f"{limit_s:.6g}"]
        if self.optionsDict.get("presolve") is not None:
            args += ["-presolve", "on" if self.optionsDict["presolve"] else "off"]
        if self.optionsDict.get("cuts") is not None:
            args += ["-gomory", "on", "knapsack", "on", "probing", "on"] if self.optionsDict["cuts"] else ["-cuts", "off"]
        for option in self.options + self.getOptions():
            args += ("-" + option).split()
        args += ["-solve" if self.mip else "-initialSolve", "-printingOptions", "all", "-solution", sol]
        log_path = self.optionsDict.get("logPath") or os.devnull
        space = child_address_space()
        with open(log_path, "a" if log_path == os.devnull else "w") as output:
            run = run_watched(args, output, limit_s, address_space_bytes=space)
            if run.interrupted:
                output.write(f"\n{_WATCHDOG_LINE}\n")
        if run.returncode != 0 and not run.interrupted:
            raise pulp.PulpSolverError(_crashed(run.returncode, space, log_path))
        if run.killed or not os.path.exists(sol):
            lp.assignStatus(pulp.LpStatusNotSolved, pulp.LpSolutionNoSolutionFound)
            return lp.status
        status, values, reduced, prices, slacks, sol_status = self.readsol_MPS(sol, lp, vs, var_names, con_names)
        lp.assignVarsVals(values)
        lp.assignVarsDj(reduced)
        lp.assignConsPi(prices)
        lp.assignConsSlack(slacks, activity=True)
        lp.assignStatus(status, sol_status)
        self.delete_tmp_files(mps, sol, mst)
        return status


def _crashed(returncode: int, space_bytes: int, log_path: str) -> str:
    """Why CBC ended with ``returncode``: out of its address space (``space_bytes``), or another crash."""
    text = ""
    if os.path.exists(log_path) and log_path != os.devnull:
        with open(log_path, errors="replace") as fh:
            text = fh.read()
    how = f"ended by signal {-returncode}" if returncode < 0 else f"exited with code {returncode}"
    if "bad_alloc" in text or "memory" in text.lower() or returncode in (-signal.SIGABRT, -signal.SIGSEGV):
        return (f"CBC {how}: out of memory under its limit of {space_bytes / 2**20:,.0f} MiB (the memory limit "
                "less what placement holds, --memory-limit); give a larger --memory-limit")
    return f"CBC {how}"


def pulp_outcome(m: pulp.LpProblem, backend: str, seconds: float, time_limit_s: float | None,
                 cbc_log: str) -> Outcome:
    """The outcome from PuLP's status, refined by CBC's result and bound lines when there is a log."""
    status, sol_status = m.status, m.sol_status
    has_values = sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible)
    result = _CBC_RESULT.search(cbc_log)
    text = result.group(1).strip() if result else pulp.LpStatus[status]
    lowered = text.lower()
    # CBC cut off by its time limit before it decides can leave a solution file PuLP reads as
    # infeasible: infeasibility counts only when the log, if there is one, states it (its result line,
    # or presolve's "Problem is infeasible").
    # Nor does pre-processing's claim made as the time ran out, with no result line: cut short by its time
    # limit, it says "infeasible or unbounded" of feasible models.
    cut_off = _WATCHDOG_LINE in cbc_log or (time_limit_s is not None and seconds >= time_limit_s)
    hasty = cut_off and result is None and "pre-processing says infeasible" in cbc_log.lower()
    proven = not cbc_log or ("infeasible" in cbc_log.lower() and not hasty)
    if proven and ("infeasible" in lowered or status == pulp.LpStatusInfeasible):
        return Outcome("infeasible", f"{backend}: {text}", False, None, seconds, backend)
    if not proven and status == pulp.LpStatusInfeasible:
        status = pulp.LpStatusNotSolved
        text = "stopped before a result (no proof of infeasibility)"
        lowered = text.lower()
    if "unbounded" in lowered or status == pulp.LpStatusUnbounded:
        return Outcome("unbounded", f"{backend}: {text}", False, None, seconds, backend)
    bound_match = _CBC_BOUND.search(cbc_log)
    bound = float(bound_match.group(1)) if bound_match else None
    if _WATCHDOG_LINE in cbc_log:
        name, text = "time_limit", "stopped by the watchdog at the time limit"
    elif "time" in lowered or (time_limit_s is not None and status == pulp.LpStatusNotSolved):
        name = "time_limit"
    elif status == pulp.LpStatusOptimal and sol_status == pulp.LpSolutionOptimal:
        name = "optimal"
        if bound is None:
            bound = pulp.value(m.objective)
    elif has_values:
        name = "feasible"
    else:
        name = "error"
    return Outcome(name, f"{backend}: {text}", has_values, finite_or_none(bound), seconds, backend)
