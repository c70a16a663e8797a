"""Placement optimizer for heterogeneous LLM inference: the front door.

The public names are imported on first use (module ``__getattr__``), so that
``import placement`` — and with it ``placement --help`` — does not load the
cost models, NetworkX or the solvers.

Examples
--------
>>> import placement
>>> placement.InputError.exit_code
2
>>> inst = placement.load_instance("instances/melange-toy.yaml")  # doctest: +SKIP
>>> plan = placement.solve(inst, backend="highs")                 # doctest: +SKIP
>>> plan.model_dump_json()                                        # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from placement.core.api import CheckResult, check
    from placement.core.errors import InputError, PlacementError, SolverError, VerificationError
    from placement.core.loading import load_instance, parse_instance
    from placement.core.plan import Plan
    from placement.core.replan import Events, replan
    from placement.core.schema import Instance
    from placement.core.solve import solve

__all__ = [
    "CheckResult",
    "Events",
    "InputError",
    "Instance",
    "PlacementError",
    "Plan",
    "SolverError",
    "VerificationError",
    "check",
    "load_instance",
    "parse_instance",
    "replan",
    "solve",
]

#: Public name -> the module that defines it.
_HOME = {
    "InputError": "placement.core.errors",
    "PlacementError": "placement.core.errors",
    "SolverError": "placement.core.errors",
    "VerificationError": "placement.core.errors",
    "load_instance": "placement.core.loading",
    "parse_instance": "placement.core.loading",
    "Plan": "placement.core.plan",
    "Instance": "placement.core.schema",
    "solve": "placement.core.solve",
    "replan": "placement.core.replan",
    "Events": "placement.core.replan",
    "check": "placement.core.api",
    "CheckResult": "placement.core.api",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'placement' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
