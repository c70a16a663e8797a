"""The verifier's checks by name, in the order :func:`placement.core.verify.verifier.verify` runs them.

Every constraint family of the MILP names the check that mirrors it (``solvers.family.Family.check``);
a solve refuses a family whose check is not here (:func:`require_checks`), so a family registered in
the solver layer but not in the verifier cannot be built. An extension adds its family's check with
:func:`register_check`; it runs after the built-in ones, on every plan (a check that does not apply to
a plan returns no violation).

Two names are known without being in the ordered list: ``check_kv`` (the session classes' retention,
run before every other check because it gives them the expanded context,
:mod:`placement.core.verify.kv`) and ``cut`` (a valid inequality — a cost floor, the Lagrangian
completion's rows — cuts off no plan: there is nothing to check).

Examples
--------
>>> from placement.core.verify.verifier import CHECKS
>>> list(CHECKS)[:3], CHECKS["check_totals"].stated
(['check_pool_fields', 'check_class_fields', 'check_totals'], True)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from placement.core.instance.context import Context
    from placement.core.plans.plan import Plan
    from placement.core.verify.facts import PoolFacts

__all__ = ["APART", "CHECKS", "Check", "register_check", "require_checks", "unregister_check"]

#: ``(context, plan, re-derived pool facts) -> violations``.
Run = Callable[["Context", "Plan", "list[PoolFacts]"], list[str]]


@dataclass(frozen=True)
class Check:
    """One check: its name, what it runs, and whether it checks a figure the plan states (pool and class
    fields, totals, links: skipped when only the placement's feasibility is asked, ``stated_fields=False``)."""

    name: str
    run: Run
    stated: bool = False


#: Every check by name, in the order they run.
CHECKS: dict[str, Check] = {}

#: Names a family may give that are not in :data:`CHECKS` (module docstring), and why.
APART = {
    "check_kv": "the session classes' fields, checked first (placement.core.verify.kv)",
    "cut": "a valid inequality cuts off no plan: nothing to check",
}


def register_check(name: str, run: Run, *, stated: bool = False) -> Check:
    """Add (or replace) the check ``name``, after the others; returns it."""
    if name in APART:
        raise ValueError(f"check name {name!r} is reserved ({APART[name]})")
    check = Check(name, run, stated)
    CHECKS.pop(name, None)
    CHECKS[name] = check
    return check


def unregister_check(name: str) -> None:
    """Remove the check ``name`` (no error if there is none)."""
    CHECKS.pop(name, None)


def require_checks(families: Iterable) -> None:
    """Raise ``ValueError`` naming the first family whose verifier check is neither registered nor apart.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> require_checks([SimpleNamespace(name="power_cap", check="check_limits")])
    >>> require_checks([SimpleNamespace(name="toy", check="check_toy")])
    Traceback (most recent call last):
    ...
    ValueError: family 'toy': its verifier check 'check_toy' is not registered (placement.core.verify.verifier.register_check)
    """
    for family in families:
        if family.check not in CHECKS and family.check not in APART:
            raise ValueError(f"family {family.name!r}: its verifier check {family.check!r} is not registered "
                             "(placement.core.verify.verifier.register_check)")
