"""A self-contained Mélange-style instance for the trade-off tests (measured capacities, so solves
take milliseconds), and a small roofline one whose pools carry error bands; independent of the shipped
instances, which the cost-model owners retune."""

import copy

from placement.core.instance.loading import parse_instance

TOY = {
    "name": "toy", "model": "llama-2-7b", "modes": ["aggregated"], "only_measured": True,
    "workload": {"classes": [
        {"name": n, "rate_rps": r, "prompt_tokens": p, "output_tokens": o, "ttft_ms": 2000, "tpot_ms": 120}
        for n, r, p, o in (("short-in-short-out", 6, 100, 100), ("short-in-long-out", 3, 100, 1000),
                           ("long-in-short-out", 15, 1000, 100), ("long-in-long-out", 6, 1000, 1000))]},
    "hardware": {"switches": ["tor"], "domains": [
        {"name": "a10g-pool", "chip": "a10g", "chips_per_domain": 1, "count": 16, "usd_per_hour_per_chip": 1.01,
         "switch": "tor"},
        {"name": "a100-pool", "chip": "a100-80gb", "chips_per_domain": 1, "count": 16, "usd_per_hour_per_chip": 3.67,
         "switch": "tor"}]},
    "measured_capacity": [
        {"chip": c, "class": n, "max_rps_per_replica": v}
        for c, caps in (("a10g", (2, 1, 5, 2)), ("a100-80gb", (20, 20, 40, 20)))
        for n, v in zip(("short-in-short-out", "short-in-long-out", "long-in-short-out", "long-in-long-out"), caps)],
}



def toy_instance():
    return parse_instance(copy.deepcopy(TOY))


#: A roofline instance (its pools carry error bands): Llama-3.1-8B on H100s and L4s, a tight and a loose class.
BANDED = {
    "name": "banded", "model": "llama-3.1-8b", "modes": ["aggregated", "pd"],
    "workload": {"classes": [
        {"name": "chat", "rate_rps": 6, "prompt_tokens": 800, "output_tokens": 200, "ttft_ms": 1500, "tpot_ms": 30},
        {"name": "batch", "rate_rps": 4, "prompt_tokens": 4000, "output_tokens": 400, "ttft_ms": 20000,
         "tpot_ms": 150}]},
    "hardware": {"switches": ["tor"], "domains": [
        {"name": "h100s", "chip": "h100", "chips_per_domain": 8, "count": 2, "switch": "tor"},
        {"name": "l4s", "chip": "l4", "chips_per_domain": 1, "count": 16, "switch": "tor"}]},
}


def banded_instance(**fields):
    """:data:`BANDED` with top-level ``fields`` changed (e.g. ``slo_headroom=0.8``)."""
    return parse_instance({**copy.deepcopy(BANDED), **fields})
