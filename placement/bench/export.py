"""``placement export``: write an instance's MILP as LP or MPS for any external solver.

The model is built by :func:`solvers.milp.build_model` and written by
:func:`solvers.milp.export_model`, so the file is exactly what ``placement
solve`` hands to CBC or HiGHS. Names are deterministic, ``family__token__...``
(``n__<column>__<part>__<site>``, ``step_coverage__<step>``, see
:mod:`solvers.milp`), so the same instance always gives a byte-identical file
and a solution read back from any solver maps to placements by name.

The objective includes the formulation's tie-breaks (at most ~1e-7 relative,
:func:`solvers.milp.set_objective`): an external solver's optimum equals
``placement solve``'s objective to that precision.

Examples
--------
>>> import tempfile, pathlib
>>> from placement.core.instance.loading import load_instance
>>> inst = load_instance("instances/melange-toy.yaml")
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> stats = export_instance(inst, lp=d / "m.lp", mps=d / "m.mps")
>>> sorted(p.suffix for p in stats["files"]), stats["variables"] > 0
(['.lp', '.mps'], True)
"""

from __future__ import annotations

import time
from pathlib import Path

from placement.core.instance.errors import InputError
from placement.core.instance.schema import Instance

__all__ = ["export_instance"]


def export_instance(instance: Instance, *, lp: str | Path | None = None, mps: str | Path | None = None,
                    source: str = "<instance>") -> dict:
    """Generate candidates, build the MILP and write it to ``lp`` and/or ``mps``.

    Returns
    -------
    dict
        ``files`` (paths written), ``variables``, ``integer_variables``,
        ``constraints``, ``nonzeros``, ``candidates_s`` and ``export_s``.
    """
    from placement.core.instance.context import Context
    from placement.core.pipeline.problem import build_problem
    from solvers.export import export_model
    from solvers.extract import model_stats
    from solvers.milp import build_model

    if lp is None and mps is None:
        raise InputError("expected --lp PATH and/or --mps PATH", field="--lp")
    targets = [Path(p) for p in (lp, mps) if p is not None]
    for p, suffix in ((lp, ".lp"), (mps, ".mps")):
        if p is not None and Path(p).suffix.lower() != suffix:
            raise InputError(f"expected a file name ending in {suffix}, got {Path(p).name!r}",
                             field=f"--{suffix[1:]}")
    for p in targets:
        if not p.parent.exists():
            raise InputError(f"folder {p.parent} does not exist", file=str(p))
    start = time.perf_counter()
    problem, _ = build_problem(Context.of(instance, source))
    cands_s = time.perf_counter() - start
    start = time.perf_counter()
    for p in targets:
        export_model(problem, p)
    export_s = time.perf_counter() - start
    m, _ = build_model(problem)
    return {"files": targets, **model_stats(m), "candidates_s": cands_s, "export_s": export_s}
