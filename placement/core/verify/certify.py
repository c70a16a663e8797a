"""A second opinion on a solve: the same model solved by the other backend, objectives and bounds compared.

A backend's "optimal" is a claim: its bound says no plan is cheaper. Another
backend's verified plan below that bound refutes it (CBC has proven such bounds
wrongly on models with single-chip-type rows: $4.68/h "optimal, gap 0" on a
Mélange-style instance whose optimum, found by HiGHS and checked by the
verifier, is $3.03/h). Likewise "infeasible" is refuted by a verified plan.

:func:`certify` re-solves and returns the plan to keep — the cheaper verified
one — with ``certified`` set and a note saying what the second backend found.
Disagreement is not hidden: ``certified`` is False and the CLI exits 4.

Examples
--------
>>> print(disagreement(("optimal", 4.68, 4.68), ("optimal", 3.03, 3.03), 1e-9))
the second backend found a verified plan at 3.03, below the first's proven bound 4.68
>>> disagreement(("optimal", 3.03, 3.03), ("optimal", 3.03, 3.029999), 1e-6) is None
True
"""

from __future__ import annotations

from collections.abc import Callable

from placement.core.plans.plan import Plan

__all__ = ["OTHER_BACKEND", "Claim", "certify", "claim_of", "disagreement"]

#: The backend that certifies each bundled one.
OTHER_BACKEND = {"cbc": "highs", "highs": "cbc"}

#: (status, objective of a verified plan or None, proven bound or None).
Claim = tuple[str, float | None, float | None]

#: Relative slack of a comparison of objectives and bounds from two solvers (both ~1e-9 noisy;
#: the tie-breaks move an objective by up to ~1e-7, see solvers.tolerances.TIE_BREAK).
REL_CERTIFY = 1e-6


def claim_of(plan: Plan) -> Claim:
    """What a plan claims: its status, its objective if verified, and its proven bound."""
    s = plan.solver
    objective = s.objective if (plan.verified and s is not None) else None
    bound = s.best_bound if s is not None else None
    return plan.status, objective, bound


def disagreement(first: Claim, second: Claim, gap: float) -> str | None:
    """Why two claims on the same model cannot both be right (None if they can).

    A verified plan below the other's proven bound (beyond the gap and
    :data:`REL_CERTIFY`) refutes that bound; a verified plan refutes
    "infeasible".
    """
    tol = max(gap, REL_CERTIFY)
    for (status_a, obj_a, bound_a), (status_b, obj_b, _), a, b in (
            (first, second, "first", "second"), (second, first, "second", "first")):
        if obj_b is not None and status_a == "infeasible":
            return f"the {b} backend found a verified plan at {obj_b:.10g}; the {a} called the model infeasible"
        if obj_b is not None and bound_a is not None and obj_b < bound_a - tol * max(abs(bound_a), 1e-12):
            return f"the {b} backend found a verified plan at {obj_b:.10g}, below the {a}'s proven bound {bound_a:.10g}"
    return None


def certify(plan: Plan, backend: str, gap: float | None, resolve: Callable[[str], Plan]) -> Plan:
    """``plan`` (solved by ``backend``) checked against the same model solved by the other backend.

    ``resolve(name)`` solves the same model with backend ``name`` and returns
    its verified plan. Returns the plan to keep: ``plan``, or the other's if it
    is verified and better (lower objective, or ``plan`` has none), with
    ``certified`` and a note.
    """
    other_name = OTHER_BACKEND.get(backend, "highs" if backend != "highs" else "cbc")
    other = resolve(other_name)
    first, second = claim_of(plan), claim_of(other)
    why = disagreement(first, second, gap or 0.0)
    keep = plan
    if second[1] is not None and (first[1] is None or second[1] < first[1]):
        keep = other
    if why is None:
        note = (f"certified: {other_name} agrees ({other.status}"
                + (f", objective {second[1]:.10g}" if second[1] is not None else "")
                + (f", bound {second[2]:.10g}" if second[2] is not None else "") + ")")
        return keep.model_copy(update={"certified": True, "notes": [*plan.notes, note]})
    note = (f"NOT certified: {backend} said {plan.status}"
            + (f" (objective {first[1]:.10g}, bound {first[2]})" if first[1] is not None else "")
            + f"; {other_name} said {other.status}"
            + (f" (objective {second[1]:.10g}, bound {second[2]})" if second[1] is not None else "")
            + f": {why.replace('first', backend).replace('second', other_name)}"
            + f"; the plan of {keep.solver.backend if keep.solver else other_name} is returned")
    return keep.model_copy(update={"certified": False, "notes": [*plan.notes, note]})
