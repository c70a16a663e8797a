"""Serving frameworks as a catalogued input: the request latency each adds to a TTFT.

Measured light-load TTFT is mostly *not* the prefill: on the aiconfigurator
rows one prefill of the prompt explains 8–35 % of it, the rest is latency
outside the forward steps that depends on the serving framework (tokenisation,
scheduling, detokenising the first token, the HTTP round trip of the benchmark
client). ``costmodels/catalog/frameworks.yaml`` holds, per framework, that
request latency ``ttft_request_latency_s`` fitted from the measured rows
(``python benchmarks/calibrate.py`` prints and documents the fit in
``benchmarks/CALIBRATION.md``, :mod:`benchmarks.ttft_framework`), with its
source. A plan naming its framework (instance ``serving.framework``) adds that
latency to the TTFT of every prefill-serving pool; ``pooled`` (no framework
named) adds nothing — the behaviour before frameworks were an input — and
its wider TTFT band says so.

Other keys of a framework's record (per-framework step factors) are read by
their own modules; this one reads the request-latency fields only.

Examples
--------
>>> f = framework_entry("vllm")
>>> 0.0 < f.ttft_request_latency_s < 0.5
True
>>> framework_entry("pooled").ttft_request_latency_s
0.0
>>> framework_entry("tgi")
Traceback (most recent call last):
...
KeyError: "unknown serving framework 'tgi'; known: pooled, sglang, trtllm, vllm"
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field

from topology.records import Record, read_catalog_yaml

__all__ = ["DEFAULT_FRAMEWORK", "FRAMEWORKS_PATH", "FrameworkLatency", "framework_entry", "framework_names"]

FRAMEWORKS_PATH = Path(__file__).with_name("catalog") / "frameworks.yaml"
#: The framework a plan assumes when its instance names none: today's TTFT, no added latency.
DEFAULT_FRAMEWORK = "pooled"


class FrameworkLatency(Record):
    """A framework's TTFT request latency and where it comes from."""

    name: str
    description: str
    ttft_request_latency_s: float = Field(ge=0.0, le=10.0)
    ttft_request_latency_fit: dict[str, object] = Field(default_factory=dict)
    source: str
    max_sequences_per_rank: int = Field(ge=1, le=1_000_000, description="the engine's default ceiling on the "
                                        "sequences one (data-parallel) rank runs at once")
    max_sequences_source: str
    workspace_fraction: float = Field(ge=0.0, lt=1.0, description="memory the engine keeps from weights and KV")
    workspace_of_free: bool = Field(description="the fraction is of the memory the weights leave free (else of "
                                    "the whole working tier)")
    workspace_source: str


@lru_cache(maxsize=2)
def _read(path: Path) -> dict[str, FrameworkLatency]:
    doc = read_catalog_yaml(path)
    out = {}
    for name, rec in doc["frameworks"].items():
        out[name] = FrameworkLatency.model_validate({"name": name, **rec})
    return out


def framework_names(path: Path = FRAMEWORKS_PATH) -> list[str]:
    """The catalogued framework names, sorted (``pooled`` included)."""
    return sorted(_read(Path(path)))


def framework_entry(name: str, path: Path = FRAMEWORKS_PATH) -> FrameworkLatency:
    """The record of framework ``name``; ``KeyError`` listing the known names otherwise."""
    entries = _read(Path(path))
    if name not in entries:
        raise KeyError(f"unknown serving framework {name!r}; known: {', '.join(sorted(entries))}")
    return entries[name]
