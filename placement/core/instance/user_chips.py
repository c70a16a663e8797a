"""Chips an instance defines itself: ``base: h100`` plus overrides, and records without sources.

An entry of ``hardware.chips`` is turned into a full
:class:`~topology.chips.ChipSpec` before validation:

* ``base: <catalogue chip>`` starts from that chip's record; the entry's other
  fields replace the base's (a whole field each: ``memory`` is replaced, not
  merged). The overridden fields are sourced as "user override of <base>".
  A performance field overridden (FLOP/s, memory, bandwidths, efficiencies,
  overheads) makes the chip ``uncalibrated``: the base's fit no longer holds.
* an entry without ``sources`` gets "user-supplied (no source)" for every field
  that needs one, and is ``uncalibrated``.

``placement catalog`` and the plan tables show ``uncalibrated``; the chip's
numbers are the user's.

Examples
--------
>>> chip = user_chip({"name": "h100-cheap", "base": "h100", "usd_per_hour": 1.5})
>>> chip["usd_per_hour"], chip["sources"]["usd_per_hour"], chip["calibration"]
(1.5, 'user override of h100 (no source)', 'calibrated')
>>> user_chip({"name": "h100-slow", "base": "h100", "compute_efficiency": 0.3})["calibration"]
'uncalibrated'
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, create_model

from topology.chips import (
    OPERATING_POINT_FIELDS,
    OPTIONAL_SOURCED_FIELDS,
    SOURCED_FIELDS,
    ChipSpec,
    load_chip_catalog,
)

__all__ = ["UserChip", "user_chip"]

#: Fields whose change invalidates a calibration fitted to the base chip's measurements.
PERFORMANCE_FIELDS = frozenset({
    "flops_per_s", "memory", "sram_only", "scale_up_bandwidth_bytes_per_s", "scale_up_latency_s",
    "scale_out_bandwidth_bytes_per_s", "compute_efficiency", "memory_efficiency", "step_overhead_s",
    "allreduce_efficiency", *OPERATING_POINT_FIELDS, *OPTIONAL_SOURCED_FIELDS})
_NO_SOURCE = "user-supplied (no source)"


def _input_fields() -> dict[str, Any]:
    fields: dict[str, Any] = {"base": (str | None, Field(default=None, description="a catalogue chip this one "
                                                          "starts from; the other fields override it"))}
    for name, info in ChipSpec.model_fields.items():
        if name == "name":
            fields[name] = (info.annotation, Field(pattern=r"^[a-z0-9][a-z0-9_.\-]*$"))
        else:
            fields[name] = (info.annotation | None, Field(default=None, description=info.description))
    return fields


#: The input form of a user chip (for the JSON Schema): a name, optionally a base, any ChipSpec field.
UserChip = create_model("UserChip", __doc__="A chip defined by the instance: a full record, or ``base`` plus "
                        "overrides; without sources it is uncalibrated.", **_input_fields())


def _fill_sources(chip: dict[str, Any], text: str, fields: set[str]) -> None:
    sources = dict(chip.get("sources") or {})
    for f in fields:
        sources.setdefault(f, text)
    chip["sources"] = sources


def user_chip(value: Any) -> Any:
    """The full chip record of an instance's ``hardware.chips`` entry (other values pass through)."""
    if not isinstance(value, dict):
        return value
    entry = {k: v for k, v in value.items() if v is not None}
    base_name = entry.pop("base", None)
    if base_name is not None:
        catalog = load_chip_catalog()
        if base_name not in catalog:
            raise ValueError(f"unknown base chip {base_name!r}; expected one of {', '.join(sorted(catalog))}")
        base = catalog[base_name]
        chip = base.model_dump()
        overridden = set(entry) - {"name", "display_name", "sources", "estimates"}
        chip.update({k: v for k, v in entry.items() if k != "sources"})
        chip["display_name"] = entry.get("display_name", f"{base.display_name} ({entry.get('name')})")
        chip["sources"] = {**base.sources, **{f: f"user override of {base_name} (no source)" for f in overridden},
                           **(entry.get("sources") or {})}
        if overridden & PERFORMANCE_FIELDS:
            chip["calibration"], chip["heldout_tpot_error"] = "uncalibrated", None
        return chip
    if "sources" not in entry:
        needed = set(SOURCED_FIELDS) | {f for f in OPERATING_POINT_FIELDS if entry.get(f)}
        if entry.get("all_reduce_algorithms"):
            needed.add("all_reduce_algorithms")
        if entry.get("allreduce_efficiency", 1.0) != 1.0:
            needed.add("allreduce_efficiency")
        needed |= {f for f in OPTIONAL_SOURCED_FIELDS if entry.get(f) is not None}
        _fill_sources(entry, _NO_SOURCE, needed)
        entry["calibration"] = "uncalibrated"
        entry.pop("heldout_tpot_error", None)
        entry.setdefault("display_name", entry.get("name", "user chip"))
    return entry
