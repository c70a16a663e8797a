"""Constraint families and objective terms of the placement MILP, each declared once, in one record.

A :class:`Family` is one constraint family (route split, site units, a power cap, N+1 survival,
migration, …) or one objective term (the primary objective, the KV tiers' holding cost, migration
$). Every consumer of the model reads the families it is given instead of writing their rows again:

==================  ================================================================================
field               what the family says, and who asks
==================  ================================================================================
``rows(m, v)``      its rows and the variables only they use (:func:`solvers.model.build_model`, which
                    calls every family's rows in order, then every family's objective)
``objective(m, v)`` its terms of the objective (the primary objective *sets* it, so it comes first)
``collapse(p)``     what becomes of it on the collapsed fleet ``p`` (:func:`solvers.twolevel.collapsed`:
                    sites merged per resource, no network): ``True`` kept, ``False`` left out — only
                    when leaving it out is a relaxation, so that the collapsed optimum stays a lower
                    bound — or the family to use there instead
``coupling(p)``     its rows over replica counts alone (:class:`ReplicaRow`), or ``None`` when its rows
                    tie the demands of ``p`` in another way: what splits a problem into parts
                    (:func:`solvers.cost_floors.parts`), what a combination of part plans must meet
                    (:func:`solvers.lagrange.best_combination`) and what brute force checks every
                    integer vector against (:func:`solvers.bruteforce.bruteforce`)
``elastic(em)``     its rows made soft in the diagnosis model (:mod:`solvers.elastic`): a slack per
                    limit, which the shortfalls report; rows it leaves alone stay hard
``start(v, w, x)``  values, in the start ``x`` of model ``v``, for the variables it added, from the
                    solved model ``w`` of a smaller problem (:func:`solvers.twolevel.start_values`)
``columns(p)``      the columns of ``p`` its rows refer to, which every restricted problem of the
                    two-level solve keeps (a re-plan's running columns)
``check``           the name of the verifier check that mirrors it (placement.core.verify.verifier keeps its
                    checks by name; a solve refuses a family whose check is not there)
==================  ================================================================================

Every field is required: a family that leaves one out cannot be built (``TypeError``). The helpers
say "nothing" explicitly: :func:`no_rows`, :func:`no_objective`, :data:`KEEP`, :data:`DROP`,
:func:`separable`, :func:`hard`, :func:`no_start`, :func:`no_columns`.

Examples
--------
>>> from solvers.problem import Site
>>> cap = ReplicaRow(name="chips_of_gpu", rhs=8.0, per_unit=lambda s: 1.0 if s.resource == "gpu" else 0.0)
>>> s = Site(name="s", node="v", resource="gpu", units_per_domain=8, domains=2, usd_per_hour_per_unit=1.0,
...          power_w_per_unit=700.0)
>>> cap.use(s, units=4, replicas=3)
12.0
>>> Family(name="half", check="check_half", rows=no_rows)
Traceback (most recent call last):
...
TypeError: Family.__init__() missing 6 required positional arguments: 'objective', 'collapse', 'coupling', 'elastic', 'start', and 'columns'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pulp

from solvers.problem import Problem, Site

if TYPE_CHECKING:
    from solvers.variables import Variables

__all__ = [
    "DROP",
    "KEEP",
    "Family",
    "ReplicaRow",
    "collapse_families",
    "coupling_rows",
    "hard",
    "no_columns",
    "no_objective",
    "no_rows",
    "no_start",
    "separable",
]

#: ``(model, variables) -> None``: a family's rows, or its objective terms.
Writer = Callable[[pulp.LpProblem, "Variables"], None]


@dataclass(frozen=True)
class ReplicaRow:
    """A row Σ_{c,p,s} ``per_unit(site s)``·u_p·n_{c,p,s} ≤ ``rhs`` over replica counts alone.

    The units of a site's chips (``per_unit`` 1 on that site), the fleet's power (W per unit), its
    cost ($/h per unit, ``prices``: the Lagrangian's multipliers shift these coefficients, so it
    cannot price them), or any other limit on what replicas occupy.
    """

    name: str
    rhs: float
    per_unit: Callable[[Site], float]
    prices: bool = False

    def use(self, site: Site, units: int, replicas: float) -> float:
        """What ``replicas`` replicas of ``units`` units each in ``site`` put on the row."""
        return self.per_unit(site) * units * replicas


@dataclass(frozen=True)
class Family:
    """One constraint family or objective term, declared once (see the module docstring)."""

    name: str
    check: str
    rows: Writer
    objective: Writer
    collapse: Callable[[Problem], Family | bool]
    coupling: Callable[[Problem], list[ReplicaRow] | None]
    elastic: Callable[[Any], None]
    start: Callable[[Variables, Variables, dict], None]
    columns: Callable[[Problem], set[str]]


def no_rows(m: pulp.LpProblem, v: Variables) -> None:
    """A family without rows (an objective term)."""


def no_objective(m: pulp.LpProblem, v: Variables) -> None:
    """A family without objective terms (a constraint family)."""


def KEEP(collapsed: Problem) -> bool:
    """Kept as it is on the collapsed fleet: its rows read the problem, which is collapsed already."""
    return True


def DROP(collapsed: Problem) -> bool:
    """Left out on the collapsed fleet: it only restricts plans, or adds terms ≥ 0 to the objective."""
    return False


def separable(problem: Problem) -> list[ReplicaRow]:
    """No row ties two demands: each of its rows holds columns of one demand (or none)."""
    return []


def hard(em: Any) -> None:
    """Its rows stay hard in the diagnosis model."""


def no_start(v: Variables, part: Variables, values: dict) -> None:
    """It adds no variables a start must fill."""


def no_columns(problem: Problem) -> set[str]:
    """Its rows name no column a restricted problem must keep."""
    return set()


def collapse_families(families: tuple[Family, ...], collapsed: Problem) -> tuple[Family, ...]:
    """The families on the collapsed fleet ``collapsed``, in order (each family's ``collapse``)."""
    out = []
    for f in families:
        kept = f.collapse(collapsed)
        if kept is True:
            out.append(f)
        elif isinstance(kept, Family):
            out.append(kept)
    return tuple(out)


def coupling_rows(families: tuple[Family, ...], problem: Problem) -> list[ReplicaRow] | None:
    """Every family's rows over replica counts (``None`` if one of them ties demands otherwise)."""
    rows: list[ReplicaRow] = []
    for f in families:
        mine = f.coupling(problem)
        if mine is None:
            return None
        rows += mine
    return rows
