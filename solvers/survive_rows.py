"""N+1 rows: the plan still serves every demand after losing any one domain (or site) — two families.

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

    Σ_{r∈k} x^σ_r = 1                      (= Σ_p a_{p,k}·π_p for a demand whose rate KV policies decide)
    Σ_c κ_{c,q}·y^σ_{c,q} − λ_k·x^σ_r = 0                              for every step q of route r
    Σ_q (κ_{c,q}/cap_{c,q})·y^σ_{c,q} ≤ Σ_s n_{c,0,s} − m_{c,0,σ} − m_{c,1,σ}   for every column c

(y^σ aggregated over sites, in the load units κ of :func:`~solvers.variables.load_units`;
losing a part-1 replica idles the part-0 replica it pairs with). Parts larger
than a domain (which take whole domains) are not spread this way: they get
no room (an upper bound of 0).

:func:`survive` (any one domain) and :func:`site_loss` (whole sites at once)
declare these rows as :class:`~solvers.family.Family` records: left out on
the collapsed fleet (they only restrict plans), tying every demand (no
split by parts), each scenario's split rows elastic in a diagnosis (a share
of a class left unserved after the loss), and a start's scenario loads read
from the smaller problem's model.

Examples
--------
>>> from solvers.model import build_model, families_of
>>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
>>> p = Problem(demands=[Demand(name="d", rate=3.0)],
...             routes=[Route(name="r", demand="d", steps=["q"])],
...             columns=[Column(name="c", parts=[Part(resource="gpu", units=1)], capacity={"q": 2.0})],
...             sites=[Site(name="s", node="v", resource="gpu", units_per_domain=2, domains=3,
...                         usd_per_hour_per_unit=1.0, power_w_per_unit=1.0)])
>>> m, v = build_model(p, families=families_of([survive()]))
>>> sorted(c.name.split("__")[0] for c in m.constraints() if c.name.startswith(("spread", "domain", "surv")))
['domain_fit', 'spread', 'survive_capacity', 'survive_coverage', 'survive_split']
"""

from __future__ import annotations

from collections import defaultdict
from functools import partial

import pulp

from solvers.family import DROP, Family, ReplicaRow, no_columns, no_objective
from solvers.problem import Problem
from solvers.variables import Variables, add_row, add_var

__all__ = ["CHECK", "add_site_loss", "add_survive", "site_loss", "survive", "too_large"]

#: The verifier check that mirrors both families: every scenario re-checked on the plan's replicas.
CHECK = "check_survival"

#: Capacities in the failure scenarios: column -> step -> requests/s per replica (absent: the column's own).
Capacity = dict[str, dict[str, float]]


def too_large(v: Variables) -> list[tuple[str, int, str]]:
    """Replica keys whose part is larger than a domain of its site (not spread; see the module docstring)."""
    ix = v.index
    return [k for k in v.n if ix.units[k] > ix.site[k[2]].units_per_domain]


def add_survive(capacity: Capacity | None, dropped: set, m: pulp.LpProblem, v: Variables) -> None:
    """Add the spread, domain-fit and per-site scenario rows of the module docstring; m_{c,p,s} in
    ``v.extra["survive"]["most"]``.

    ``capacity``: column -> step -> requests/s per replica in the scenarios (absent: the column's
    own ``capacity``), e.g. at relaxed SLOs; the replica keys larger than a domain (given no room) are
    added to ``dropped``.
    """
    ix = v.index
    tok = ix.names.tokens
    big = set(too_large(v))
    dropped.update(big)
    most: dict[tuple[str, int, str], pulp.LpVariable] = {}
    v.extra["survive"] = {"most": most, "x": {}, "y": {}}
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
    made = v.extra["survive"]
    made["x"].update({(sigma, r): var for r, var in x.items()})
    made["y"].update({(sigma, c, q): var for (c, q), var in y.items()})
    routes_of: dict[str, list[str]] = defaultdict(list)
    for r in ix.routes:
        routes_of[r.demand].append(r.name)
    decided: dict[str, list[tuple[pulp.LpVariable, float]]] = defaultdict(list)  # KV policies' share of λ_k
    for p in ix.problem.policies:
        for k, share in p.demands.items():
            decided[k].append((v.pi[p.name], -share))
    for k in sorted(ix.rate):
        terms = [(x[r], 1.0) for r in routes_of[k]] + decided.get(k, [])
        add_row(m, v, "survive_split", (sigma, k), [where, tok["demand", k]], terms, pulp.LpConstraintEQ,
                0.0 if k in decided else 1.0, scaled=1.0)
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


def add_site_loss(scenarios: dict[str, list[str]], capacity: Capacity | None, m: pulp.LpProblem,
                  v: Variables) -> None:
    """Scenario rows for losing whole sites at once (every site behind one switch, ``switch:1``).

    ``scenarios``: name (a switch) -> the sites lost with it. Each scenario has
    the split and coverage rows of the module docstring and the capacity row::

        Σ_q (κ_{c,q}/cap_{c,q})·y^w_{c,q} ≤ Σ_s n_{c,0,s} − Σ_{s∈L(w)} (n_{c,0,s} + n_{c,1,s})   for every column c

    (L(w) the sites lost; a lost part-1 replica idles its part-0 replica). It is
    exact: whole sites are lost, so no spread over domains is needed.

    Examples
    --------
    >>> from solvers.milp import solve
    >>> from solvers.model import families_of
    >>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
    >>> sites = [Site(name=n, node=n, resource="gpu", units_per_domain=2, domains=3, usd_per_hour_per_unit=1.0,
    ...               power_w_per_unit=1.0) for n in ("a", "b")]
    >>> p = Problem(demands=[Demand(name="d", rate=3.0)], routes=[Route(name="r", demand="d", steps=["q"])],
    ...             columns=[Column(name="c", parts=[Part(resource="gpu", units=1)], capacity={"q": 2.0})],
    ...             sites=sites, nodes=["w1", "w2"])
    >>> sol = solve(p, "highs", families=families_of([site_loss({"w1": ["a"], "w2": ["b"]})]))
    >>> sorted((r.site, r.replicas) for r in sol.replicas)
    [('a', 2), ('b', 2)]

(Without the scenarios 2 replicas serve the 3 req/s; losing either site must leave 2.)
    """
    ix = v.index
    tok = ix.names.tokens
    v.extra["survive"] = {"most": {}, "x": {}, "y": {}}
    steps_of, replicas_of = _served_by(v)
    for w, sites in sorted(scenarios.items()):
        gone = set(sites)
        lost = {c: [(var, 1.0) for (cc, p, s), var in sorted(v.n.items()) if cc == c and s in gone]
                for c in steps_of}
        _scenario_rows(m, v, w, f"lose_{tok['node', w]}", steps_of, replicas_of, lost, capacity or {})


# ---- the families ------------------------------------------------------------------------------------


def _every_demand(problem: Problem) -> list[ReplicaRow] | None:
    """A scenario's rows hold every demand and every column: they tie them all."""
    return None


def _scenario_elastic(family: str, words: str, em) -> None:
    """Each scenario's split rows: a share of the demand may go unserved after the loss (reported under
    ``family`` by scenario and demand, in requests/s, in ``words``)."""
    rate = em.variables.index.rate
    for name, key, row in em.rows("survive_split"):
        em.relax_share(family, name, key, row, rate[key[1]], words)


def _scenario_start(v: Variables, part: Variables, values: dict) -> None:
    """m, x^σ and y^σ of a start. A scenario the smaller model has keeps its values (loads in its load
    units, 0 for the columns it lacks); a scenario it has not — a site none of its columns could use,
    where the start places nothing — is the healthy plan itself (x^σ = x, y^σ = Σ_s y: losing a
    domain there loses no replica). The most replicas per domain are at least ⌈n/D⌉ of the start's."""
    mine, theirs = v.extra["survive"], part.extra.get("survive", {"most": {}, "x": {}, "y": {}})
    known = {key[0] for key in theirs["x"]}
    healthy: dict[tuple[str, str], float] = defaultdict(float)
    for (c, q, _s), var in v.y.items():
        healthy[c, q] += values[var]
    for key, var in mine["x"].items():
        values[var] = _value(theirs["x"].get(key)) if key[0] in known else values[v.x[key[1]]]
    for key, var in mine["y"].items():
        sigma, c, q = key
        if sigma not in known:
            values[var] = healthy[c, q]
            continue
        other = theirs["y"].get(key)
        values[var] = 0.0 if other is None else _value(other) * part.load_unit[c, q] / v.load_unit[c, q]
    for key, var in mine["most"].items():
        domains = v.index.site[key[2]].domains
        values[var] = max(_value(theirs["most"].get(key)), float(-(-int(values[v.n[key]]) // domains)))


def _value(var: pulp.LpVariable | None) -> float:
    return 0.0 if var is None or var.varValue is None else float(var.varValue)


def survive(capacity: Capacity | None = None, dropped: set | None = None) -> Family:
    """N+1 over domains (module docstring) as a family; the keys of parts larger than a domain, which get
    no room, are added to ``dropped`` (if given) when a model is built."""
    return Family(name="survive", check=CHECK, rows=partial(add_survive, capacity, set() if dropped is None else dropped),
                  objective=no_objective, collapse=DROP, coupling=_every_demand,
                  elastic=partial(_scenario_elastic, "survive", "losing a domain of group {0} leaves class {1}"),
                  start=_scenario_start, columns=no_columns)


def site_loss(scenarios: dict[str, list[str]], capacity: Capacity | None = None) -> Family:
    """Losing whole sites at once (``scenarios``: name -> the sites lost with it; :func:`add_site_loss`)
    as a family."""
    return Family(name="site_loss", check=CHECK, rows=partial(add_site_loss, scenarios, capacity),
                  objective=no_objective, collapse=DROP, coupling=_every_demand,
                  elastic=partial(_scenario_elastic, "site_loss", "losing switch {0} leaves class {1}"),
                  start=_scenario_start, columns=no_columns)
