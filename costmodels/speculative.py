"""Published acceptance of speculative decoding, as catalogue entries with sources.

``costmodels/catalog/speculative.yaml`` holds one entry per published
measurement: method, target model, draft, dataset, the per-position
acceptance ``α_1 … α_γ`` the planner uses, what the source published
(an acceptance range or a mean acceptance length τ) and how the one follows
from the other. An instance selects an entry with
``draft: {model: ..., acceptance_from: <name>}``; its own ``acceptance`` list,
when given, overrides the entry.

Examples
--------
>>> e = speculative_entry("deepseek-v3-mtp")
>>> e.acceptance, e.target_model
([0.875], 'deepseek-v3')
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field

from topology.records import Record, read_catalog_yaml

__all__ = ["SPECULATIVE_PATH", "SpeculativeEntry", "load_speculative_catalog", "speculative_entry"]

SPECULATIVE_PATH = Path(__file__).with_name("catalog") / "speculative.yaml"


class SpeculativeEntry(Record):
    """One published acceptance measurement of a draft–target pair."""

    name: str
    method: str
    target_model: str
    draft: str
    dataset: str
    acceptance: list[float] = Field(min_length=1, max_length=16)
    published: dict[str, float | list[float]]
    derivation: str
    source: str


@lru_cache(maxsize=2)
def _read(path: Path) -> dict[str, SpeculativeEntry]:
    rows = read_catalog_yaml(path)
    entries = [SpeculativeEntry.model_validate(r) for r in rows]
    return {e.name: e for e in entries}


def load_speculative_catalog(path: Path = SPECULATIVE_PATH) -> dict[str, SpeculativeEntry]:
    """The shipped entries by name (a fresh dict each call)."""
    return dict(_read(Path(path)))


def speculative_entry(name: str, path: Path = SPECULATIVE_PATH) -> SpeculativeEntry:
    """The entry called ``name``; ``KeyError`` naming the known entries otherwise."""
    entries = _read(Path(path))
    if name not in entries:
        raise KeyError(f"no speculative-decoding entry {name!r}; known: {', '.join(sorted(entries))}")
    return entries[name]
