"""Measured tables that replace the roofline for a chip and stage.

Two kinds, as in Mélange and DistServe:

* :class:`MeasuredStepTable` — step time by batch for one chip, stage and
  layout, interpolated piecewise-linearly; outside the measured batches the
  value is clamped to the nearest end and flagged (:meth:`~MeasuredStepTable.lookup`).
* :class:`MeasuredCapacity` — the measured maximum requests/s one replica
  sustains for a traffic class at its SLO (Mélange's per-bucket throughput).

Examples
--------
>>> t = MeasuredStepTable(chip="h100", stage="decode", batch=[1, 8, 64], step_times_s=[0.02, 0.022, 0.03])
>>> t.step_time_s(36)
0.026
>>> t.lookup(128)
(0.03, True)
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import ConfigDict, Field, model_validator

from topology.records import Record

__all__ = ["MeasuredCapacity", "MeasuredStepTable", "capacities_from_melange"]

_MS_PER_S = 1e3




class MeasuredStepTable(Record):
    """Measured step time by batch size for one chip / stage / layout.

    Attributes
    ----------
    batch
        Strictly increasing batch sizes at which the step was timed.
    step_times_s
        Step time at each batch (seconds, > 0).
    context_tokens
        Context at which the table was measured, if known (informational).
    """

    chip: str
    stage: Literal["prefill", "decode", "decode-attention", "decode-ffn", "draft", "aggregated"] = "decode"
    tp: int = Field(default=1, ge=1)
    ep: int = Field(default=1, ge=1)
    pp: int = Field(default=1, ge=1)
    batch: list[float] = Field(min_length=1)
    step_times_s: list[float] = Field(min_length=1)
    context_tokens: float | None = Field(default=None, ge=0)
    source: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> MeasuredStepTable:
        if len(self.batch) != len(self.step_times_s):
            raise ValueError("batch and step_times_s must have the same length")
        if any(b <= 0 for b in self.batch) or any(t <= 0 for t in self.step_times_s):
            raise ValueError("batches and step times must be > 0")
        if any(b2 <= b1 for b1, b2 in zip(self.batch, self.batch[1:])):
            raise ValueError("batch must be strictly increasing")
        return self

    @classmethod
    def from_milliseconds(cls, *, step_time_ms: list[float], **fields: Any) -> MeasuredStepTable:
        """Build from step times in ms (the friendly unit at the edges)."""
        return cls(step_times_s=[t / _MS_PER_S for t in step_time_ms], **fields)

    def extrapolated(self, batch):
        """True where ``batch`` lies outside the measured range (the value there is clamped)."""
        b = np.asarray(batch, dtype=float)
        out = (b < self.batch[0]) | (b > self.batch[-1])
        return out if out.ndim else bool(out)

    def step_time_s(self, batch):
        """Step time at ``batch``: piecewise-linear between measured points, clamped outside."""
        t = np.interp(np.asarray(batch, dtype=float), self.batch, self.step_times_s)
        return t if np.ndim(t) else float(t)

    def lookup(self, batch):
        """``(step_time_s, extrapolated)`` at ``batch``."""
        return self.step_time_s(batch), self.extrapolated(batch)

    def tokens_per_s(self, batch):
        """Decode throughput of the table: batch / step time."""
        b = np.asarray(batch, dtype=float)
        out = b / np.asarray(self.step_time_s(b))
        return out if out.ndim else float(out)


class MeasuredCapacity(Record):
    """Measured max requests/s of one replica of ``chips`` chips for one traffic class at its SLO.

    Mélange style: replaces the roofline for that chip and class (aggregated
    mode). This is also the ``measured_capacity`` entry of an instance file,
    where the class is given as ``class``.

    Examples
    --------
    >>> c = MeasuredCapacity.model_validate({"chip": "a100", "class": "chat", "max_rps_per_replica": 20,
    ...                                      "chips": 2})
    >>> c.traffic_class, c.max_rps_per_chip
    ('chat', 10.0)
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    chip: str
    traffic_class: str = Field(alias="class")
    max_rps_per_replica: float = Field(gt=0, allow_inf_nan=False)
    chips: int = Field(default=1, ge=1)

    @property
    def max_rps_per_chip(self) -> float:
        return self.max_rps_per_replica / self.chips


def capacities_from_melange(case: dict[str, Any]) -> list[MeasuredCapacity]:
    """Capacities from a Mélange case (``gpus: {name: {max_rps_per_gpu: [[…]]}}``).

    Bucket (i, j) of the input × output grid becomes class ``bucket_i_j``; one
    GPU is one replica. A bucket a GPU serves at 0 requests/s gets no record
    (that GPU has no capacity for it).

    Examples
    --------
    >>> case = {"gpus": {"A10G": {"usd_per_hour": 1.01, "max_rps_per_gpu": [[2, 1], [5, 2]]}}}
    >>> [c.traffic_class for c in capacities_from_melange(case)]
    ['bucket_0_0', 'bucket_0_1', 'bucket_1_0', 'bucket_1_1']
    """
    out: list[MeasuredCapacity] = []
    for gpu, spec in case["gpus"].items():
        for i, row in enumerate(spec["max_rps_per_gpu"]):
            for j, rps in enumerate(row):
                if rps > 0:
                    out.append(MeasuredCapacity(chip=gpu, traffic_class=f"bucket_{i}_{j}",
                                                max_rps_per_replica=float(rps)))
    return out
