"""N+1 rows: the plan still serves every demand after losing any one domain.

Replicas are spread over the domains of their site: m_{c,p,s} (integer) is
the most replicas of part p of column c any one domain of site s holds::

    n_{c,p,s} ≤ D_s·m_{c,p,s}          (spread: round-robin puts ≤ ⌈n/D_s⌉ ≤ m per domain)
    Σ_{c,p} u_p·m_{c,p,s} ≤ m_s         (one domain can hold the most of every part at once)

so losing any one domain of site σ loses at most m_{c,p,σ} replicas of each
part there (a conservative bound: the domain holding the most of one part
need not hold the most of every other). For each site σ a scenario checks
that the replicas left still cover every demand — capacity only (the
transfers and links of the scenario are not re-routed), each demand free to
re-split over its routes (single-resource choices relaxed)::

    Σ_{r∈k} x^σ_r = 1
    Σ_c κ_{c,q}·y^σ_{c,q} − λ_k·x^σ_r = 0                              for every step q of route r
    Σ_q (κ_{c,q}/cap_{c,q})·y^σ_{c,q} ≤ Σ_s n_{c,0,s} − m_{c,0,σ} − m_{c,1,σ}   for every column c

(y^σ aggregated over sites, in the load units κ of :func:`~solvers.variables.load_units`;
losing a part-1 replica idles the part-0 replica it pairs with). Parts larger
than a domain (which take whole domains) are not spread this way: the caller
gives them no room (an upper bound of 0).

Examples
--------
>>> from solvers.milp import build_model
>>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
>>> p = Problem(demands=[Demand(name="d", rate=3.0)],
...             routes=[Route(name="r", demand="d", steps=["q"])],
...             columns=[Column(name="c", parts=[Part(resource="gpu", units=1)], capacity={"q": 2.0})],
...             sites=[Site(name="s", node="v", resource="gpu", units_per_domain=2, domains=3,
...                         usd_per_hour_per_unit=1.0, power_w_per_unit=1.0)])
>>> m, v = build_model(p)
>>> spread = add_survive(m, v)
>>> sorted(c.name.split("__")[0] for c in m.constraints() if c.name.startswith(("spread", "domain", "surv")))
['domain_fit', 'spread', 'survive_capacity', 'survive_coverage', 'survive_split']
"""

from __future__ import annotations

from collections import defaultdict

import pulp

from solvers.variables import Variables, add_row, add_var

__all__ = ["add_site_loss", "add_survive", "too_large"]


def too_large(v: Variables) -> list[tuple[str, int, str]]:
    """Replica keys whose part is larger than a domain of its site (not spread; see the module docstring)."""
    ix = v.index
    return [k for k in v.n if ix.units[k] > ix.site[k[2]].units_per_domain]


def add_survive(m: pulp.LpProblem, v: Variables, capacity: dict[str, dict[str, float]] | None = None
                ) -> dict[tuple[str, int, str], pulp.LpVariable]:
    """Add the spread, domain-fit and per-site scenario rows of the module docstring; return m_{c,p,s}.

    ``capacity``: column -> step -> requests/s per replica in the scenarios (absent: the column's
    own ``capacity``), e.g. at relaxed SLOs.
    """
    ix = v.index
    tok = ix.names.tokens
    big = set(too_large(v))
    most: dict[tuple[str, int, str], pulp.LpVariable] = {}
    per_site: dict[str, list] = defaultdict(list)
    for key, var in sorted(v.n.items()):
        c, p, s = key
        tokens = [tok["column", c], str(p), tok["site", s]]
        if key in big:
            var.upBound = 0
            continue
        site = ix.site[s]
        ub = site.units_per_domain // ix.units[key]
        most[key] = add_var(m, v, "most", key, tokens, ub=ub, integer=True)
        add_row(m, v, "spread", key, tokens, [(var, 1.0), (most[key], -float(site.domains))],
                pulp.LpConstraintLE, 0.0)
        per_site[s].append((most[key], float(ix.units[key])))
    for s, terms in sorted(per_site.items()):
        add_row(m, v, "domain_fit", (s,), [tok["site", s]], terms, pulp.LpConstraintLE,
                float(ix.site[s].units_per_domain))
    steps_of, replicas_of = _served_by(v)
    for sigma in sorted(per_site):
        _scenario(m, v, sigma, steps_of, replicas_of, most, capacity or {})
    return most


def _served_by(v: Variables) -> tuple[dict[str, list[str]], dict[str, list]]:
    """Each class's steps (in load order) and the replica variables of its main parts."""
    steps_of: dict[str, list[str]] = defaultdict(list)
    for c, q, _s in v.index.load_keys:
        if q not in steps_of[c]:
            steps_of[c].append(q)
    replicas_of: dict[str, list] = defaultdict(list)
    for (c, p, _s), var in v.n.items():
        if p == 0:
            replicas_of[c].append(var)
    return steps_of, replicas_of


def _scenario(m: pulp.LpProblem, v: Variables, sigma: str, steps_of: dict[str, list[str]],
              replicas_of: dict[str, list], most: dict, capacity: dict[str, dict[str, float]]) -> None:
    """The rows of the scenario "one domain of site σ is lost"."""
    tok = v.index.names.tokens
    lost = {c: [(most[key], 1.0) for key in ((c, 0, sigma), (c, 1, sigma)) if key in most] for c in steps_of}
    _scenario_rows(m, v, sigma, tok["site", sigma], steps_of, replicas_of, lost, capacity)


def _scenario_rows(m: pulp.LpProblem, v: Variables, sigma: str, where: str, steps_of: dict[str, list[str]],
                   replicas_of: dict[str, list], lost: dict[str, list],
                   capacity: dict[str, dict[str, float]]) -> None:
    """Split, coverage and capacity rows of one scenario; ``lost[c]``: terms of the replicas of c it loses,
    ``capacity``: the scenario's capacities (column -> step -> requests/s; absent: the column's own)."""
    ix = v.index
    tok = ix.names.tokens
    x = {r.name: add_var(m, v, "xs", (sigma, r.name), [where, tok["route", r.name]], ub=1) for r in ix.routes}
    y: dict[tuple[str, str], pulp.LpVariable] = {}
    for c in sorted(steps_of):
        for q in steps_of[c]:
            y[c, q] = add_var(m, v, "ys", (sigma, c, q), [where, tok["column", c], tok["step", q]])
    routes_of: dict[str, list[str]] = defaultdict(list)
    for r in ix.routes:
        routes_of[r.demand].append(r.name)
    for k in sorted(ix.rate):
        add_row(m, v, "survive_split", (sigma, k), [where, tok["demand", k]],
                [(x[r], 1.0) for r in routes_of[k]], pulp.LpConstraintEQ, 1.0, scaled=1.0)
    loads_of: dict[str, list[str]] = defaultdict(list)
    for c, q in y:
        loads_of[q].append(c)
    for r in ix.routes:
        lam = ix.rate[r.demand]
        for q in r.steps:
            terms = [(y[c, q], v.load_unit[c, q]) for c in loads_of[q]] + [(x[r.name], -lam)]
            add_row(m, v, "survive_coverage", (sigma, q), [where, tok["step", q]], terms, pulp.LpConstraintEQ, 0.0)
    for c in sorted(steps_of):
        cap = capacity.get(c, ix.column[c].capacity)
        terms: list[tuple[pulp.LpVariable, float]] = [(y[c, q], v.load_unit[c, q] / cap[q])
                                                      for q in steps_of[c]]
        left = dict.fromkeys(replicas_of[c], -1.0)
        for var, coef in lost[c]:  # a lost part-0 replica cancels its own term
            left[var] = left.get(var, 0.0) + coef
        terms += [(var, coef) for var, coef in left.items() if coef]
        add_row(m, v, "survive_capacity", (sigma, c), [where, tok["column", c]], terms, pulp.LpConstraintLE, 0.0)


def add_site_loss(m: pulp.LpProblem, v: Variables, scenarios: dict[str, list[str]],
                  capacity: dict[str, dict[str, float]] | None = None) -> None:
    """Scenario rows for losing whole sites at once (every site behind one switch, ``switch:1``).

    ``scenarios``: name (a switch) -> the sites lost with it. Each scenario has
    the split and coverage rows of the module docstring and the capacity row::

        Σ_q (κ_{c,q}/cap_{c,q})·y^w_{c,q} ≤ Σ_s n_{c,0,s} − Σ_{s∈L(w)} (n_{c,0,s} + n_{c,1,s})   for every column c

    (L(w) the sites lost; a lost part-1 replica idles its part-0 replica). It is
    exact: whole sites are lost, so no spread over domains is needed.

    Examples
    --------
    >>> from solvers.milp import build_model
    >>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
    >>> sites = [Site(name=n, node=n, resource="gpu", units_per_domain=2, domains=3, usd_per_hour_per_unit=1.0,
    ...               power_w_per_unit=1.0) for n in ("a", "b")]
    >>> p = Problem(demands=[Demand(name="d", rate=3.0)], routes=[Route(name="r", demand="d", steps=["q"])],
    ...             columns=[Column(name="c", parts=[Part(resource="gpu", units=1)], capacity={"q": 2.0})],
    ...             sites=sites, nodes=["w1", "w2"])
    >>> from solvers.milp import Start, solve_model
    >>> def prepare(m, v):
    ...     add_site_loss(m, v, {"w1": ["a"], "w2": ["b"]})
    ...     return Start()
    >>> sol, _ = solve_model(p, "highs", prepare=prepare)
    >>> sorted((r.site, r.replicas) for r in sol.replicas)
    [('a', 2), ('b', 2)]

(Without the scenarios 2 replicas serve the 3 req/s; losing either site must leave 2.)
    """
    ix = v.index
    tok = ix.names.tokens
    steps_of, replicas_of = _served_by(v)
    for w, sites in sorted(scenarios.items()):
        gone = set(sites)
        lost = {c: [(var, 1.0) for (cc, p, s), var in sorted(v.n.items()) if cc == c and s in gone]
                for c in steps_of}
        _scenario_rows(m, v, w, f"lose_{tok['node', w]}", steps_of, replicas_of, lost, capacity or {})
