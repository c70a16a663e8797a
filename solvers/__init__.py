"""Solver layer: the solver-neutral problem, the placement MILP, a brute-force reference.

Public entry points::

    from solvers import Problem, solve, relax, lp_bound, export_model, bruteforce
    from solvers import elastic_shortfall   # why a problem is infeasible (solvers.elastic)
    from solvers import available_solvers, get_solver, register_solver   # backends by name
"""

from solvers.backends import available_solvers, get_solver, register_solver
from solvers.bruteforce import bruteforce
from solvers.elastic import Shortfalls, elastic_shortfall
from solvers.export import export_model
from solvers.milp import (
    DEFAULT_GAP,
    Variables,
    build_model,
    check_packable,
    lp_bound,
    pack_into_domains,
    relax,
)
from solvers.problem import Column, Demand, Edge, Objective, Part, Problem, Route, Site, Transfer
from solvers.solution import TIMING_FIELDS, EdgeLoad, Flow, Load, Pair, Placement, Solution
from solvers.twolevel import solve

__all__ = [
    "DEFAULT_GAP",
    "TIMING_FIELDS",
    "Column",
    "Demand",
    "Edge",
    "EdgeLoad",
    "Flow",
    "Load",
    "Objective",
    "Pair",
    "Part",
    "Placement",
    "Problem",
    "Route",
    "Shortfalls",
    "Site",
    "Solution",
    "Transfer",
    "Variables",
    "available_solvers",
    "bruteforce",
    "build_model",
    "check_packable",
    "elastic_shortfall",
    "export_model",
    "get_solver",
    "lp_bound",
    "pack_into_domains",
    "register_solver",
    "relax",
    "solve",
]
