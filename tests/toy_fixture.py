"""A self-contained Mélange-style instance for the trade-off tests (measured capacities, so solves
take milliseconds); independent of the shipped instances, which the cost-model owners retune."""

import copy

from placement.core.loading import parse_instance

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
