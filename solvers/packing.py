"""Packing replicas into scale-up domains.

The MILP bounds the units used in a site by one aggregate constraint,
Σ u_p·n_{c,p,s} ≤ D_s·m_s. That is exact (every aggregate-feasible multiset
of replicas packs into the m_s domains) when the part sizes up to D_s and D_s
form a *divisibility chain* (sorted, each size divides the next) and every
size above D_s is a whole number of domains. Largest-first first-fit then
packs any multiset whose total fits: a replica of n domains takes n whole free
domains whatever n (they come first, so whole domains are still free), and the
units left are D_s times the domains left, into which the smaller sizes pack
as a chain does (each placed size divides all earlier ones, so the free space
of every domain stays a multiple of it).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Mapping
from itertools import pairwise

from solvers.problem import Problem, Site

__all__ = ["check_packable", "pack_into_domains"]


def check_packable(problem: Problem) -> None:
    """Raise ``ValueError`` unless, in each site, the part sizes up to D_s form a divisibility chain with D_s
    and the larger ones are whole multiples of D_s (the module notes: exact packing).

    Sites with no domains are skipped (nothing can be placed there).

    Parameters
    ----------
    problem : Problem
        The placement problem.

    Raises
    ------
    ValueError
        Naming the first site and column whose part size breaks the chain.

    Examples
    --------
    >>> from solvers.problem import Column, Demand, Part, Problem, Route, Site
    >>> site = Site(name="s", node="v", resource="gpu", units_per_domain=8, domains=1,
    ...             usd_per_hour_per_unit=1.0, power_w_per_unit=1.0)
    >>> col = Column(name="c3", parts=[Part(resource="gpu", units=3)], capacity={"q": 1.0})
    >>> p = Problem(demands=[Demand(name="d", rate=1.0)],
    ...             routes=[Route(name="r", demand="d", steps=["q"])],
    ...             columns=[col], sites=[site])
    >>> check_packable(p)
    Traceback (most recent call last):
    ...
    ValueError: site 's' (8 units per domain): part size 3 of column 'c3' breaks the divisibility chain [3, 8]

    Three domains beside two is whole domains, and packs:

    >>> cols = [Column(name=f"c{u}", parts=[Part(resource="gpu", units=u)], capacity={"q": 1.0}) for u in (4, 16, 24)]
    >>> check_packable(Problem(demands=p.demands, routes=p.routes, columns=cols, sites=[site])) is None
    True
    """
    # resource -> size -> first column (in problem order) using it, for the message; once, not per site
    # (a 625-site fleet with 10^5 columns: 10^8 loop steps per site otherwise)
    owners: dict[str, dict[int, str]] = defaultdict(dict)
    for column in problem.columns:
        for part in column.parts:
            owners[part.resource].setdefault(part.units, column.name)
    for site in problem.sites:
        if site.domains == 0:
            continue
        owner = owners.get(site.resource, {})
        d = site.units_per_domain
        sizes = sorted({u for u in owner if u <= d} | {d})
        for small, large in pairwise(sizes):
            if large % small:
                culprit = small if small in owner else large
                if culprit == d:
                    culprit = large
                raise ValueError(
                    f"site {site.name!r} ({d} units per domain): part size "
                    f"{culprit} of column {owner[culprit]!r} breaks the divisibility chain {sizes}"
                )
        # Above a domain, whole domains of any number.
        for u in sorted(owner):
            if u > d and u % d:
                raise ValueError(
                    f"site {site.name!r} ({d} units per domain): part size {u} of column {owner[u]!r} "
                    f"is not a whole number of domains"
                )


def pack_into_domains(
    site: Site, replica_sizes: Mapping[Hashable, tuple[int, int]]
) -> dict[int, list[tuple[Hashable, int]]]:
    """Assign replicas to the domains of ``site``: largest first, first fit.

    A replica larger than a domain takes ``units // D`` whole consecutive free
    domains and is listed as ``(key, D)`` in each of them, so the units listed
    in a domain always sum to at most D.

    Parameters
    ----------
    site : Site
        The site whose ``domains`` domains of ``units_per_domain`` units are filled.
    replica_sizes : Mapping
        key (usually a column name) -> ``(units per replica, replica count)``.

    Returns
    -------
    dict
        Domain index -> list of ``(key, units)``, only for domains that host something,
        sorted by domain index.

    Raises
    ------
    ValueError
        If a replica does not fit (or a size above D is not a multiple of D).

    Examples
    --------
    >>> from solvers.problem import Site
    >>> site = Site(name="s", node="v", resource="gpu", units_per_domain=8, domains=3,
    ...             usd_per_hour_per_unit=1.0, power_w_per_unit=1.0)
    >>> pack_into_domains(site, {"big": (16, 1), "half": (4, 1), "one": (1, 4)})
    {0: [('big', 8)], 1: [('big', 8)], 2: [('half', 4), ('one', 1), ('one', 1), ('one', 1), ('one', 1)]}
    """
    size_d = site.units_per_domain
    free = [size_d] * site.domains
    hosted: dict[int, list[tuple[Hashable, int]]] = {}
    order = sorted(replica_sizes.items(), key=lambda kv: (-kv[1][0], str(kv[0])))
    for key, (units, count) in order:
        if units < 1 or count < 0:
            raise ValueError(f"{key!r}: units must be >= 1 and count >= 0, got ({units}, {count})")
        for _ in range(count):
            if units > size_d:
                if units % size_d:
                    raise ValueError(
                        f"site {site.name!r}: {key!r} takes {units} units, not a multiple of the "
                        f"{size_d}-unit domain"
                    )
                span = units // size_d
                start = _first_free_run(free, span, size_d)
                if start is None:
                    raise ValueError(
                        f"site {site.name!r}: no {span} consecutive free domains for {key!r} ({units} units)"
                    )
                for d in range(start, start + span):
                    free[d] = 0
                    hosted.setdefault(d, []).append((key, size_d))
            else:
                d = next((i for i, f in enumerate(free) if f >= units), None)
                if d is None:
                    raise ValueError(
                        f"site {site.name!r}: {key!r} ({units} units) does not fit in "
                        f"{site.domains} domains of {size_d} units"
                    )
                free[d] -= units
                hosted.setdefault(d, []).append((key, units))
    return dict(sorted(hosted.items()))


def _first_free_run(free: list[int], span: int, size_d: int) -> int | None:
    """Index of the first run of ``span`` consecutive completely free domains."""
    run = 0
    for i, f in enumerate(free):
        run = run + 1 if f == size_d else 0
        if run == span:
            return i - span + 1
    return None
