"""Placement optimizer for heterogeneous LLM inference: the front door.

The public names are imported on first use (module ``__getattr__``), so that
``import placement`` — and with it ``placement --help`` — does not load the
cost models, NetworkX or the solvers.

The library API (each function's docstring has a runnable example):

==============================================  ===========================================================
``load_instance(path) -> Instance``             read and validate an instance file
``solve(instance, ...) -> Plan``                the cheapest verified plan (``plan.status`` says what happened)
``replan(instance, plan, events, ...) -> Plan`` the cheapest plan from a running one, counting migration;
                                                ``Events``: failed domains, $ per move, amortisation hours
``check(instance, plan) -> CheckResult``        re-verify a plan (``ok``, ``violations``, ``warnings``)
``schedule(instance, periods, ...) -> Schedule`` one plan per period (``read_profile(csv)``) with reserved
                                                capacity and reconfiguration $, beside its references
==============================================  ===========================================================

Exceptions: :class:`InputError` (a bad file, field, option or plan; exit code 2)
for what the caller must fix; a plan the solver could not find or the verifier
rejected is *returned*, with ``status`` ``infeasible``, ``time_limit`` or
``error`` and its ``violations``, never raised. All derive from
:class:`PlacementError`, whose ``exit_code`` the command line uses.

Examples
--------
>>> import placement
>>> placement.InputError.exit_code
2
>>> inst = placement.load_instance("instances/melange-toy.yaml")
>>> plan = placement.solve(inst, backend="highs")
>>> placement.check(inst, plan).ok
True
>>> new = placement.replan(inst, plan, placement.Events(failed_domains={"a10g-pool": [0]}), backend="highs")
>>> new.status, new.verified, new.failed_domains
('optimal', True, {'a10g-pool': [0]})
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from placement.core.api import CheckResult, check
    from placement.core.errors import InputError, PlacementError, SolverError, VerificationError
    from placement.core.loading import load_instance, parse_instance
    from placement.core.plan import Plan
    from placement.core.profile import read_profile
    from placement.core.replan import Events, replan
    from placement.core.schedule import Schedule, schedule
    from placement.core.schema import Instance
    from placement.core.solve import solve

__all__ = [
    "CheckResult",
    "Events",
    "InputError",
    "Instance",
    "PlacementError",
    "Plan",
    "Schedule",
    "SolverError",
    "VerificationError",
    "check",
    "load_instance",
    "parse_instance",
    "read_profile",
    "replan",
    "schedule",
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
    "schedule": "placement.core.schedule",
    "Schedule": "placement.core.schedule",
    "read_profile": "placement.core.profile",
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
