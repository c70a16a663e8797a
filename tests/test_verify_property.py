"""Property: tampering with one number of a valid plan never gets past the verifier unless the change
is within the verifier's tolerance (so the tampered plan is the same placement at the same cost).

Plans of four shipped instances (measured capacities, PD, speculative decoding with a remote draft,
data-parallel attention with wide expert parallelism) and of the Rubin + LPX one restricted to
attention–FFN pairs over a switch are solved once per session; each example changes one numeric leaf
of one plan — by a tiny relative amount, a factor, a small integer step, or to 0, its negative, NaN,
infinity or a huge value — and runs the JSON loader and :func:`placement.core.verify.verifier.verify`.

Left out: solver and candidate statistics (a report of how the plan was found, not of the placement)
and domain indices (another listing can be as valid; tests/test_verify_hardening.py covers them).
"""

from __future__ import annotations

import copy
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from verify_plans import solved

from placement.core.instance.errors import InputError
from placement.core.plans.plan import parse_plan
from placement.core.verify.verifier import verify

INSTANCES = ["melange-toy", "bertha-lpddr", "spec-decode-draft", "rubin-lpx-deepseek", "rubin-lpx-deepseek-af"]
UNVERIFIED = ("solver", "candidates", "comparisons")
#: What "within tolerance" means for the oracle: 10× the verifier's relative tolerance (1e-6), on at
#: least 1 unit, and 1e-3 B/s more for byte rates.
ORACLE_RTOL = 1e-5


def _leaves(doc, path=()):
    """(path, value) of every int or float leaf outside the unverified sections and domain lists."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k != "domains" and not (path == () and k in UNVERIFIED):
                yield from _leaves(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _leaves(v, (*path, i))
    elif isinstance(doc, int | float) and not isinstance(doc, bool):
        yield path, doc


def _set(doc, path, value) -> None:
    for k in path[:-1]:
        doc = doc[k]
    doc[path[-1]] = value


class _Plans(dict):
    """instance name -> (context, plan document, numeric leaves); a short repr for hypothesis's reports."""

    def __repr__(self) -> str:
        return f"<solved plans of {', '.join(self)}>"


@pytest.fixture(scope="module")
def plans():
    out = _Plans()
    for name in INSTANCES:
        _, ctx, doc = solved(name)
        out[name] = (ctx, doc, list(_leaves(doc)))
    return out


@st.composite
def _tampered(draw, old):
    if isinstance(old, int):
        return draw(st.one_of(st.integers(-3, 3).filter(bool).map(lambda d: old + d),
                              st.sampled_from([0, -1, 2 * old + 1, 10**6, 2**60])))
    tiny = st.floats(1e-12, 1e-4).flatmap(lambda e: st.sampled_from([old * (1 + e), old * (1 - e), old + e]))
    factor = st.floats(0.25, 4.0).map(lambda f: old * f)
    odd = st.sampled_from([0.0, -old, -1.0, math.nan, math.inf, -math.inf, 1e300, 5e-324])
    return draw(st.one_of(tiny, factor, odd))


def _within_tolerance(path, old, new) -> bool:
    if isinstance(new, float) and not math.isfinite(new):
        return False
    slack = ORACLE_RTOL * max(abs(old), 1.0) + (1e-3 if str(path[-1]).endswith("bytes_per_s") else 0.0)
    return abs(new - old) <= slack


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_one_tampered_number_never_passes_unless_within_tolerance(plans, data):
    name = data.draw(st.sampled_from(INSTANCES), label="instance")
    ctx, doc, leaves = plans[name]
    path, old = data.draw(st.sampled_from(leaves), label="leaf")
    new = data.draw(_tampered(old), label="new value")
    doc = copy.deepcopy(doc)
    _set(doc, path, new)
    try:
        plan = parse_plan(doc)
    except InputError:
        return  # refused by the loader: exit 2
    if not verify(ctx, plan):
        assert _within_tolerance(path, old, new), f"{name}: {'.'.join(map(str, path))} {old!r} -> {new!r} passed"


def test_the_leaves_cover_every_section_a_consumer_reads(plans):
    sections = {path[0] for _, _, leaves in plans.values() for path, _ in leaves}
    assert sections >= {"cost_usd_per_hour", "power_w", "chips", "chips_by_type", "pools", "classes", "links",
                        "pairs", "output_tokens_per_s", "usd_per_million_output_tokens"}
    fields = {path[2] for _, _, leaves in plans.values() for path, _ in leaves if path[0] == "pools"}
    assert fields >= {"replicas", "chips", "tp", "batch", "utilisation", "tpot_ms", "usd_per_hour", "sites",
                      "config", "capacity_rps_per_replica"}
