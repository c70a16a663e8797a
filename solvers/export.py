"""Write the placement MILP to an .lp or .mps file with its deterministic names."""

from __future__ import annotations

from pathlib import Path

from solvers.model import build_model
from solvers.problem import Problem

__all__ = ["export_model"]


def export_model(problem: Problem, path: str | Path) -> Path:
    """Write the MILP of ``problem`` to ``path``, CPLEX-LP or free MPS by the suffix.

    Names are those of :func:`solvers.model.build_model` (``family__token__...``);
    ``Variables.labels`` maps them back to the original names.

    Parameters
    ----------
    problem : Problem
        The problem.
    path : str or Path
        Ends in ``.lp`` or ``.mps``.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ValueError
        For any other suffix.

    Examples
    --------
    >>> import tempfile
    >>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
    >>> col = Column(name="c", parts=[Part(resource="gpu", units=1)], capacity={"q": 2.0})
    >>> p = Problem(demands=[Demand(name="d", rate=3.0)],
    ...             routes=[Route(name="r", demand="d", steps=["q"])], columns=[col],
    ...             sites=[Site(name="s", node="v", resource="gpu", units_per_domain=1, domains=4,
    ...                         usd_per_hour_per_unit=1.0, power_w_per_unit=1.0)])
    >>> with tempfile.TemporaryDirectory() as d:
    ...     out = export_model(p, Path(d) / "m.lp")
    ...     "n__c__0__s" in out.read_text()
    True
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".lp", ".mps"):
        raise ValueError(f"export_model: suffix {path.suffix!r} is neither .lp nor .mps")
    m, _ = build_model(problem)
    if suffix == ".lp":
        m.writeLP(str(path))
    else:
        m.writeMPS(str(path))
    return path
