"""Placement optimizer for heterogeneous LLM inference: the front door.

The public names are imported on first use (module ``__getattr__``), so that
``import placement`` — and with it ``placement --help`` — does not load the
cost models, NetworkX or the solvers.

The library API: one function per command, with the command's options as keyword arguments
(:mod:`placement.api`, docs/api.md):

================================================  =========================================================
``load_instance(path) -> Instance``               read and validate an instance file
``with_changes(inst, {path: value}) -> Instance``  the instance with ``--set`` paths changed, validated
``solve(instance, ...) -> Plan``                  the cheapest verified plan (``plan.status`` says what
                                                  happened); ``survive=``, ``compare=``, ``confidence=``…
``check(instance, plan) -> CheckResult``          re-verify a plan (``ok``, ``violations``, ``warnings``)
``capacity(instance, ...) -> list[Capacity]``     the largest servable rate per class (or the mix)
``compare(instance, ...) -> list[Comparison]``    beside each homogeneous fleet and single mode
``sweep`` / ``pareto`` ``-> SweepResult``         a grid of any fields / an SLO sweep with frontiers
``marginal(instance, plan) -> MarginalResult``    the value of one more domain or more bandwidth
``replan(instance, plan, events, ...) -> Plan``   the cheapest plan from a running one, counting migration;
                                                  ``Events``: failed domains, $ per move, amortisation hours
``schedule(instance, periods, ...) -> Schedule``  one plan per period (``read_profile(csv)``) with reserved
                                                  capacity and reconfiguration $, beside its references
``kv_prices(instance) -> list[KvPrices]``         cached vs uncached token prices per KV tier and window
``deployment(plan, fmt=...) -> dict[str, str]``   the deployment folder's files (``deploy``)
``html_report(plan, ...) -> str``                 the HTML report (``report``)
================================================  =========================================================

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
    from placement.api import (
        CheckResult,
        capacity,
        check,
        compare,
        deployment,
        html_report,
        kv_prices,
        marginal,
        pareto,
        replan,
        solve,
        sweep,
        with_changes,
    )
    from placement.core.instance.errors import (
        InputError,
        PlacementError,
        SolverError,
        VerificationError,
    )
    from placement.core.instance.loading import load_instance, parse_instance
    from placement.core.instance.schema import Instance
    from placement.core.operations.profile import read_profile
    from placement.core.operations.replan import Events
    from placement.core.operations.schedule import Schedule, schedule
    from placement.core.plans.plan import Plan

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
    "capacity",
    "check",
    "compare",
    "deployment",
    "html_report",
    "kv_prices",
    "load_instance",
    "marginal",
    "pareto",
    "parse_instance",
    "read_profile",
    "replan",
    "schedule",
    "solve",
    "sweep",
    "with_changes",
]

#: Public name -> the module that defines it.
_HOME = {
    "InputError": "placement.core.instance.errors",
    "PlacementError": "placement.core.instance.errors",
    "SolverError": "placement.core.instance.errors",
    "VerificationError": "placement.core.instance.errors",
    "load_instance": "placement.core.instance.loading",
    "parse_instance": "placement.core.instance.loading",
    "Plan": "placement.core.plans.plan",
    "Instance": "placement.core.instance.schema",
    "Events": "placement.core.operations.replan",
    "schedule": "placement.core.operations.schedule",
    "Schedule": "placement.core.operations.schedule",
    "read_profile": "placement.core.operations.profile",
    **{name: "placement.api" for name in ("solve", "check", "CheckResult", "capacity", "compare", "sweep", "pareto",
                                          "marginal", "replan", "kv_prices", "deployment", "html_report",
                                          "with_changes")},
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
