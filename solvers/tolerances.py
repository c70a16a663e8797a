"""The numeric tolerances of the solver layer, one place, each with why it has its value.

Solvers work to a feasibility tolerance of ~1e-6 on rows scaled to ~1 (see
:mod:`solvers.milp`) and report values with ~1e-9 relative noise; the
tolerances below are the slack the layer allows itself when it compares what
came back with a limit, a bound or another objective.

Examples
--------
>>> ZERO < REL_FEASIBILITY * 10 < ROW_FEASIBILITY
True
"""

from __future__ import annotations

__all__ = [
    "INTEGRALITY",
    "REL_DOMINANCE",
    "REL_FEASIBILITY",
    "REL_GAP_MARGIN",
    "REL_OBJECTIVE",
    "REL_OBJECTIVE_REPORT",
    "ROW_FEASIBILITY",
    "TIE_BREAK",
    "ZERO",
]

#: A solution value at most this (in its variable's units) is zero: solver noise is ~1e-9 relative
#: on values of order 1 (replica-equivalents, pairs in their unit, flows in their unit).
ZERO = 1e-9

#: Relative slack when a total is checked against a limit given in the input (power cap, budget,
#: pair latency): the sums are recomputed in floating point and may exceed an exact limit by ~1 ulp.
REL_FEASIBILITY = 1e-9

#: Absolute slack of a checked start's scaled rows and bounds: every row is scaled to a largest
#: coefficient in [0.71, 1.41), and the solvers accept plans 1e-6 outside their rows.
ROW_FEASIBILITY = 1e-6

#: Distance from a whole number within which a value counts as an integer (the solvers'
#: own integrality tolerance is 1e-6 and 1e-9; the looser one is what their plans meet).
INTEGRALITY = 1e-6

#: Relative difference below which two objectives are the same plan's: solvers report an
#: objective to ~1e-9 relative, so a start must beat a found plan by more than that.
REL_OBJECTIVE = 1e-9

#: Relative agreement required between HiGHS's reported objective and the objective of the
#: solution it returns (a mis-read start disagrees by far more; rounding by far less).
REL_OBJECTIVE_REPORT = 1e-6

#: Relative margin inside the gap at which restricted solves stop: the tie-breaks move an
#: objective by ~1e-7 relative (:data:`TIE_BREAK`), which must not put a plan outside the gap.
REL_GAP_MARGIN = 1e-6

#: Weight of the objective's tie-breaks relative to the cheapest unit: large enough for the
#: solvers to see (their optimality tolerance is ~1e-9 relative), small enough to move the
#: primary objective by at most ~1e-7 relative.
TIE_BREAK = 1e-7

#: Relative slack when one rate dominates another (both are exact products of the inputs,
#: so only the last bits of their floating-point rounding may differ).
REL_DOMINANCE = 1e-12
