"""Measured serving points as ``placement measure import`` writes them, and their file.

A :class:`MeasuredPoint` is one benchmark run on one deployment: what served
(chip, chips, model, framework, precision, layout), what was asked (mean prompt
and output tokens, concurrency) and what was seen (TTFT, TPOT and ITL statistics
in milliseconds, throughputs per second). Every point keeps the file it came
from (name, format, SHA-256, record index) and ``notes``: how each figure was
reconciled with this project's definitions (``placement.measure.formats``).

Definitions (the same for every format)
---------------------------------------
``ttft_ms``
    Request start to first output token, per request, in ms.
``tpot_ms``
    Per request, ``(latency − TTFT) / (output tokens − 1)``: the decode step
    time one request sees, in ms. vLLM and SGLang call it TPOT; aiperf and
    genai-perf call the same quantity ``inter_token_latency``.
``itl_ms``
    The gaps between streamed chunks, pooled over every request (vLLM's and
    SGLang's ITL); None when the file has none.
``concurrency``
    Requests in flight: the client's fixed concurrency when the file states
    one (``concurrency_basis: stated``), else Little's law, request
    throughput × mean request latency (``little``).
``output_tokens_per_s``
    Output tokens per second of the whole deployment (all ``chips``).

Examples
--------
>>> p = MeasuredPoint(source="run.json", format="vllm", sha256="0" * 64, chip="h100", chips=1,
...     model="llama-3.1-8b", model_id="meta-llama/Llama-3.1-8B-Instruct", framework="vllm", precision="bf16",
...     prompt_tokens=1024, output_tokens=128, concurrency=8, concurrency_basis="stated",
...     ttft_ms=Stats(mean=191.0), tpot_ms=Stats(mean=7.9))
>>> row = p.measured_row()
>>> row.system, row.conc, row.tpot_ms, row.isl
('h100', 8, 7.9, 1024)
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from costmodels.measured_rows import MeasuredRow
from topology.records import Record

__all__ = ["MeasuredPoint", "Measurements", "SourceFile", "Stats", "read_measurements"]

#: ``int4`` is kept as measured: the roofline cannot price it, so a calibration skips the point.
Precision = Literal["bf16", "fp8", "fp4", "int4"]


class Stats(Record):
    """Statistics of one per-request metric, in the unit its field names (None: not stated)."""

    mean: float | None = Field(default=None, gt=0)
    p50: float | None = Field(default=None, gt=0)
    p90: float | None = Field(default=None, gt=0)
    p99: float | None = Field(default=None, gt=0)

    @property
    def central(self) -> float | None:
        """The mean, else the median: what a fit compares with a prediction."""
        return self.mean if self.mean is not None else self.p50


class MeasuredPoint(Record):
    """One measured serving run (module docstring: definitions)."""

    source: str = Field(description="the result file's name")
    format: str = Field(description="the client that wrote it: vllm, sglang, aiperf, genai-perf, inferencex")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    record: int = Field(default=0, ge=0, description="the record's index in its file (JSONL lines, agg entries)")
    chip: str = Field(pattern=r"^[a-z0-9][a-z0-9_.\-]*$")
    chips: int = Field(ge=1, description="chips serving the run (all replicas)")
    model: str = Field(description="the catalogue model")
    model_id: str = Field(default="", description="the model as the file names it")
    framework: str
    precision: Precision
    tp: int = Field(default=1, ge=1)
    pp: int = Field(default=1, ge=1)
    ep: int = Field(default=1, ge=1)
    dp: int = Field(default=1, ge=1, description="data-parallel ranks of one engine (attention DP for MoE)")
    prompt_tokens: float = Field(gt=0, description="mean prompt tokens per request")
    output_tokens: float = Field(ge=1, description="mean output tokens per request")
    concurrency: float = Field(gt=0)
    concurrency_basis: Literal["stated", "little"]
    request_rate_rps: float | None = Field(default=None, gt=0, description="completed requests per second")
    output_tokens_per_s: float | None = Field(default=None, gt=0)
    ttft_ms: Stats
    tpot_ms: Stats
    itl_ms: Stats | None = None
    speculative: str | None = Field(default=None, description="speculative decoding in the run (mtp, eagle3…); "
                                    "a calibration of plain decode skips the point")
    notes: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _central_figures(self) -> MeasuredPoint:
        for name in ("ttft_ms", "tpot_ms"):
            if getattr(self, name).central is None:
                raise ValueError(f"{name}: neither a mean nor a median")
        return self

    def measured_row(self) -> MeasuredRow:
        """The point as the calibration's :class:`~costmodels.measured_rows.MeasuredRow` (``system`` = chip,
        ``backend`` = framework; attention DP as ``adp`` for MoE, else DP as more replicas)."""
        return MeasuredRow(
            model=self.model, system=self.chip, backend=self.framework, precision=self.precision,
            isl=max(round(self.prompt_tokens), 1), osl=max(round(self.output_tokens), 1), tp=self.tp, pp=self.pp,
            adp=self.dp if self.dp > 1 and self.ep > 1 else None, moe_tp=None, moe_ep=self.ep, gpus=self.chips,
            conc=max(round(self.concurrency), 1), ttft_ms=float(self.ttft_ms.central),
            tpot_ms=float(self.tpot_ms.central))

    @property
    def key(self) -> str:
        """The point's group when one group is held out at a time: its file."""
        return f"{self.source}@{self.sha256[:12]}"


class SourceFile(Record):
    """One imported file: its name, format, SHA-256 and how many points it gave."""

    path: str
    format: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    points: int = Field(ge=0)


class Measurements(Record):
    """A measurements file (``placement measure import --out``)."""

    placement_measurements: Literal[1] = 1
    sources: list[SourceFile] = Field(default_factory=list)
    points: list[MeasuredPoint] = Field(min_length=1)


def read_measurements(path: str | Path) -> Measurements:
    """Read a measurements file written by ``placement measure import`` (YAML or JSON).

    Raises
    ------
    InputError
        Naming the file and the field.
    """
    from placement.core.instance.documents import read_record

    return read_record(path, Measurements, "a measurements file (placement_measurements: 1, points: [...]) as "
                       "`placement measure import --out` writes; a benchmark's own result file is read by "
                       "`placement measure import`", marker="placement_measurements")
