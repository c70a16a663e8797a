"""The one base of every data record in the four packages: pydantic, unknown fields refused.

Records are data (chips, models, instances, problems, plans), never subclassed
for behaviour. ``Record`` is immutable (hashable, safe to share between
candidates and caches); ``MutableRecord`` is for results assembled step by step
(plans, study results).

Examples
--------
>>> class Point(Record):
...     x_m: float
>>> Point(x_m=1.0).x_m
1.0
>>> try:
...     Point(x_m=1.0, y_m=2.0)
... except ValueError as e:
...     print(e.errors()[0]["type"], e.errors()[0]["loc"])
extra_forbidden ('y_m',)
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["MutableRecord", "Record"]


class Record(BaseModel):
    """An immutable record: unknown fields are an error."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class MutableRecord(BaseModel):
    """A record whose fields may be set after construction: unknown fields are an error."""

    model_config = ConfigDict(extra="forbid")
