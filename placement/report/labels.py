"""Human axis labels from instance field paths (``hardware.chips.bertha.usd_per_hour`` →
``bertha price ($/h per chip)``), shared by the matplotlib charts and the HTML report.

Examples
--------
>>> axis_label("hardware.chips.bertha.usd_per_hour")
'bertha price ($/h per chip)'
>>> axis_label("workload.classes.chat.rate_rps")
'chat request rate (req/s)'
>>> axis_label("tpot_ms"), axis_label("hardware.domains.rack.uplink_bytes_per_s")
('TPOT SLO (ms)', 'rack uplink (bytes/s)')
"""

from __future__ import annotations

__all__ = ["FIELD_LABELS", "axis_label"]

#: Field name → label with its unit, for the fields sweeps most often vary.
FIELD_LABELS = {
    "usd_per_hour": "price ($/h per chip)",
    "usd_per_hour_per_chip": "price ($/h per chip)",
    "rate_rps": "request rate (req/s)",
    "tpot_ms": "TPOT SLO (ms)",
    "ttft_ms": "TTFT SLO (ms)",
    "prompt_tokens": "prompt tokens",
    "output_tokens": "output tokens",
    "cached_prompt_tokens": "cached prompt tokens",
    "count": "domains",
    "chips_per_domain": "chips per domain",
    "power_cap_w": "power cap (W)",
    "budget_usd_per_hour": "budget ($/h)",
    "power_w": "power (W)",
}

#: Unit suffixes of field names (longest first) and how a label shows them.
_SUFFIXES = [("_usd_per_hour", "$/h"), ("_bytes_per_s", "bytes/s"), ("_per_s", "/s"), ("_bytes", "bytes"),
             ("_rps", "req/s"), ("_ms", "ms"), ("_us", "µs"), ("_s", "s"), ("_w", "W")]

#: Collections whose next path segment names the item the field belongs to.
_NAMED = {"chips", "classes", "domains", "links", "models"}


def axis_label(path: str) -> str:
    """A readable label, with its unit, for a swept field path or field name."""
    parts = path.split(".")
    name = parts[-1]
    owner = next((parts[i + 1] for i in range(len(parts) - 2) if parts[i] in _NAMED), "")
    label = FIELD_LABELS.get(name)
    if label is None:
        for suffix, unit in _SUFFIXES:
            if name.endswith(suffix):
                label = f"{name.removesuffix(suffix).replace('_', ' ')} ({unit})"
                break
        else:
            label = name.replace("_", " ")
    return f"{owner} {label}" if owner else label
