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

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

__all__ = ["MutableRecord", "Record", "read_catalog_yaml"]

#: libyaml's safe loader when PyYAML was built with it (~10× faster on the shipped catalogues), else PyYAML's.
_FAST_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_catalog_yaml(path: str | Path) -> Any:
    """The YAML document of a shipped catalogue file, read with the safe loader (libyaml's when available)."""
    with open(path, encoding="utf-8") as f:
        return yaml.load(f, Loader=_FAST_SAFE_LOADER)


class Record(BaseModel):
    """An immutable record: unknown fields are an error."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class MutableRecord(BaseModel):
    """A record whose fields may be set after construction: unknown fields are an error."""

    model_config = ConfigDict(extra="forbid")
