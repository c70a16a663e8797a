"""Placement optimizer for heterogeneous LLM inference: the front door.

Examples
--------
>>> import placement
>>> inst = placement.load_instance("instances/melange-toy.yaml")  # doctest: +SKIP
>>> plan = placement.solve(inst, backend="highs")                 # doctest: +SKIP
>>> plan.model_dump_json()                                        # doctest: +SKIP
"""

from placement.core.errors import (
    InfeasibleError,
    InputError,
    PlacementError,
    SolverError,
    VerificationError,
)
from placement.core.loading import load_instance, parse_instance
from placement.core.plan import Plan
from placement.core.schema import Instance
from placement.core.solve import solve

__all__ = [
    "InfeasibleError",
    "InputError",
    "Instance",
    "PlacementError",
    "Plan",
    "SolverError",
    "VerificationError",
    "load_instance",
    "parse_instance",
    "solve",
]
