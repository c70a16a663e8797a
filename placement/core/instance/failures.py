"""Failed scale-up domains: parsing ``GROUP:INDICES``, and the fleet that is left.

A failed domain is unusable: the MILP's site of its group has one domain
fewer (:func:`placement.core.pipeline.problem.build_problem` reads
``Context.failed_domains``), no replica may list its index (the verifier,
:func:`check_failed_domains`), and the group's uplink to its switch loses
that domain's share (:func:`degrade`: a group's uplink is the sum of its
domains' uplinks). A plan made for a degraded fleet records the failures
(``Plan.failed_domains``), so that ``placement check`` verifies it against
the same fleet.

Examples
--------
>>> parse_failures(["vr-nvl72:0-3", "vr-nvl72:17", "lpx:3,5"])
{'lpx': (3, 5), 'vr-nvl72': (0, 1, 2, 3, 17)}
>>> parse_failures(["vr-nvl72"])
Traceback (most recent call last):
...
placement.core.instance.errors.InputError: --fail vr-nvl72: expected GROUP:INDICES, e.g. vr-nvl72:0-7 or vr-nvl72:3,17
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from placement.core.instance.context import Context
from placement.core.instance.errors import InputError
from placement.core.instance.schema import MAX_DOMAINS_PER_GROUP

__all__ = ["check_failed_domains", "degrade", "healthy_indices", "merge_failures", "parse_failures"]

Failures = dict[str, tuple[int, ...]]


def _indices(text: str, spec: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, dash, hi = part.strip().partition("-")
        try:
            first, last = int(lo), int(hi) if dash else int(lo)
        except ValueError:
            raise InputError(f"expected whole domain indices like 0-7 or 3,17, got {part.strip()!r}",
                             field=f"--fail {spec}") from None
        if first < 0 or last < first:
            raise InputError(f"expected a range LO-HI with 0 <= LO <= HI, got {part.strip()!r}",
                             field=f"--fail {spec}")
        # Checked before the range is expanded: no group has a domain at or past the bound.
        if last >= MAX_DOMAINS_PER_GROUP:
            raise InputError(f"domain index {last} is beyond any group (at most {MAX_DOMAINS_PER_GROUP:,} "
                             f"domains, indices 0 … {MAX_DOMAINS_PER_GROUP - 1})", field=f"--fail {spec}")
        out.extend(range(first, last + 1))
    return out


def parse_failures(specs: Iterable[str]) -> Failures:
    """Group -> sorted failed indices from ``GROUP:INDICES`` texts (``0-7``, ``3,17``, ``0-3,9``).

    Raises
    ------
    InputError
        A text without ``:``, an empty group, or indices that are not whole numbers or ranges.
    """
    out: dict[str, set[int]] = {}
    for spec in specs:
        group, colon, rest = spec.partition(":")
        if not colon or not group.strip() or not rest.strip():
            raise InputError("expected GROUP:INDICES, e.g. vr-nvl72:0-7 or vr-nvl72:3,17", field=f"--fail {spec}")
        out.setdefault(group.strip(), set()).update(_indices(rest, spec))
    return {g: tuple(sorted(ix)) for g, ix in sorted(out.items())}


def merge_failures(*failures: Mapping[str, Iterable[int]]) -> Failures:
    """The union of several failure maps (a domain that failed stays failed).

    Examples
    --------
    >>> merge_failures({"a": [3]}, {"a": (1, 3), "b": [0]})
    {'a': (1, 3), 'b': (0,)}
    """
    out: dict[str, set[int]] = {}
    for f in failures:
        for g, ix in f.items():
            out.setdefault(g, set()).update(ix)
    return {g: tuple(sorted(ix)) for g, ix in sorted(out.items()) if ix}


def _check_known(ctx: Context, failed: Mapping[str, Iterable[int]], where: str) -> None:
    for group, ix in failed.items():
        info = ctx.sites.get(group)
        if info is None:
            raise InputError(f"unknown domain group {group!r}; the instance has {', '.join(sorted(ctx.sites))}",
                             field=where)
        bad = [i for i in ix if not 0 <= i < info.group.count]
        if bad:
            raise InputError(f"domain index {bad[0]} is outside {group}'s domains 0 … {info.group.count - 1}",
                             field=where)


def degrade(ctx: Context, failed: Mapping[str, Iterable[int]], where: str = "--fail") -> Context:
    """``ctx`` with ``failed`` domains unusable: recorded in ``failed_domains``, uplinks scaled down.

    The edges between a group and its switch carry the sum of its domains'
    uplinks, so each keeps ``healthy / count`` of its bandwidth.

    Raises
    ------
    InputError
        An unknown group or an index outside ``0 … count − 1`` (``where`` names the option or field).
    """
    failed = merge_failures(failed)
    _check_known(ctx, failed, where)
    if failed == ctx.failed_domains:
        return ctx
    graph = ctx.graph.copy()
    for group, ix in failed.items():
        count = ctx.sites[group].group.count
        keep = (count - len(ix)) / count
        for u, w in [*graph.out_edges(group), *graph.in_edges(group)]:
            graph.edges[u, w]["bandwidth_bytes_per_s"] *= keep
    return dataclasses.replace(ctx, graph=graph, failed_domains=failed)


def healthy_indices(ctx: Context, group: str) -> list[int]:
    """The indices of the domains of ``group`` that have not failed."""
    dead = set(ctx.failed_domains.get(group, ()))
    return [i for i in range(ctx.sites[group].group.count) if i not in dead]


def check_failed_domains(failed: Mapping[str, Iterable[int]], pools) -> list[str]:
    """Every pool site that lists a failed domain index, as a sentence naming it.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> pools = [NS(id="pool-01", sites=[NS(site="g", domains=[0, 4])])]
    >>> check_failed_domains({"g": (4, 5)}, pools)
    ['pools[0].sites[0].domains: pool pool-01 has a replica on failed domain g:4']
    """
    out = []
    for i, pool in enumerate(pools):
        for j, s in enumerate(pool.sites):
            dead = set(failed.get(s.site, ()))
            hit = [d for d in s.domains if d in dead]
            if hit:
                out.append(f"pools[{i}].sites[{j}].domains: pool {pool.id} has a replica on failed domain "
                           f"{s.site}:{hit[0]}")
    return out
