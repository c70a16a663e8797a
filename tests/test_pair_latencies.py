"""Pair latencies: the distinct finite path latencies between the sites of two resources."""

import math

from placement.core.instance.context import Context
from placement.core.instance.loading import load_instance
from placement.core.replicas.pair_latencies import pair_latencies


def test_pair_latencies_are_those_of_every_pair_of_sites():
    ctx = Context.of(load_instance("benchmarks/instances/bench-leaf-spine-d10-k8-c6-s0-agg.pd.yaml"))
    resources = sorted(ctx.resources())
    assert len(resources) > 2
    for res_a in resources:
        for res_b in resources:
            want = sorted({round(ctx.routing.latency_s(a, b), 12)
                           for a, sa in ctx.sites.items() for b, sb in ctx.sites.items()
                           if sa.resource == res_a and sb.resource == res_b
                           and math.isfinite(ctx.routing.latency_s(a, b))})
            assert pair_latencies(ctx, res_a, res_b) == want
            assert want  # a leaf-spine fleet reaches every site from every other
