"""A candidate generation as data: JSON tables that decode to the same records, float for float.

A :class:`~placement.core.replicas.candidates.Candidates` becomes one JSON object of
tables — the step names, the parts, the part layouts, the configurations and the
columns — each a list per field, where a record that many columns share (a part,
a layout, a configuration) is written once and named by its row number. Reading
builds the records again and shares them the same way. Nothing in the format can
run code: :func:`json.loads` parses it into lists, strings and numbers, and each
list fills the field it is named after.

Floats round-trip exactly: :func:`json.dumps` writes the shortest repr that
reads back as the same double, and ``inf`` as ``Infinity`` (a generation's
unlimited pair latency), which :func:`json.loads` reads back as ``inf``. So a
decoded generation gives the same problem, and the same plan, as the one
encoded.

A table's lists are named by the record's fields: a record that gains or loses
a field no longer decodes (:class:`ValueError`) instead of filling fields wrongly.

Examples
--------
>>> from pathlib import Path
>>> import placement
>>> from placement.core.replicas.candidates import generate
>>> from placement.core.instance.context import Context
>>> inst = placement.load_instance(Path(placement.__file__).parent / "instances/melange-toy.yaml")
>>> cands = generate(Context.of(inst))
>>> back = decode(encode(cands))
>>> back.columns == cands.columns and back.configs == cands.configs, back.generated == cands.generated
(True, True)
"""

from __future__ import annotations

import json
from typing import Any

from placement.core.replicas.candidate_records import unvalidated
from placement.core.replicas.evaluate import PartLayout, PoolConfig
from placement.core.replicas.generation import Candidates, no_cycle_collection
from solvers.problem import Column, Part

__all__ = ["FORMAT", "decode", "encode"]

#: The format's name and version, the first field of every document.
FORMAT = "placement-candidates/1"

_PART_FIELDS = tuple(Part.model_fields)
_LAYOUT_FIELDS = tuple(PartLayout.model_fields)
_CONFIG_FIELDS = tuple(PoolConfig.model_fields)
_LAYOUT_REFS = ("main", "partner")  # configuration fields holding a layout (row number, or None)
#: A column's lists: its fields, ``config`` (a row of the configurations) after its name, and its
#: capacity as two lists (``steps``: rows of the step names; ``capacity``: requests/s of each).
_COLUMN_FIELDS = ("name", "config", "parts", "steps", "capacity", "pair_bytes_per_s", "pair_max_latency_s")


class _Table:
    """Distinct records in first-seen order, as one list per field; :meth:`row` gives a record's row number.

    Records are looked up by identity first (generation shares them), then by value (equal ones share a row).
    """

    def __init__(self, fields: tuple[str, ...], refs: dict[str, _Table] | None = None) -> None:
        self.fields, self.refs = fields, refs or {}
        self.rows: list[tuple] = []
        self._by_id: dict[int, int] = {}
        self._by_value: dict[tuple, int] = {}

    def row(self, rec: Any) -> int | None:
        if rec is None:
            return None
        if (i := self._by_id.get(id(rec))) is None:
            values = tuple(self.refs[f].row(v) if f in self.refs else v for f, v in zip(self.fields, map(
                rec.__dict__.__getitem__, self.fields), strict=True))
            if (i := self._by_value.get(values)) is None:
                i = self._by_value[values] = len(self.rows)
                self.rows.append(values)
            self._by_id[id(rec)] = i  # the record is alive until encode returns: its id is not reused
        return i

    def lists(self) -> dict[str, list]:
        return {f: [r[k] for r in self.rows] for k, f in enumerate(self.fields)}


def encode(cands: Candidates) -> bytes:
    """``cands`` (without its memo) as UTF-8 JSON.

    Raises
    ------
    ValueError
        When the configurations are not one per column, keyed by its name, in column order (what
        :func:`~placement.core.replicas.candidates.generate` makes): such a generation has no layout here.
    """
    if list(cands.configs) != [c.name for c in cands.columns]:
        raise ValueError("the configurations are not one per column, in column order")
    with no_cycle_collection():
        return json.dumps(_tables(cands), separators=(",", ":"), allow_nan=True).encode()


def _tables(cands: Candidates) -> dict:
    """The document :func:`encode` writes, as Python lists and dicts."""
    layouts = _Table(_LAYOUT_FIELDS)
    parts, configs = _Table(_PART_FIELDS), _Table(_CONFIG_FIELDS, dict.fromkeys(_LAYOUT_REFS, layouts))
    steps: dict[str, int] = {}
    cols = cands.columns
    return {
        "format": FORMAT,
        "generated": cands.generated, "feasible": cands.feasible, "network_free": cands.network_free,
        "columns": {
            "name": [c.name for c in cols],
            "config": [configs.row(cands.configs[c.name]) for c in cols],
            "parts": [[parts.row(p) for p in c.parts] for c in cols],
            "steps": [[steps.setdefault(s, len(steps)) for s in c.capacity] for c in cols],
            "capacity": [list(c.capacity.values()) for c in cols],
            "pair_bytes_per_s": [c.pair_bytes_per_s for c in cols],
            "pair_max_latency_s": [c.pair_max_latency_s for c in cols],
        },
        "steps": list(steps),
        "parts": parts.lists(), "layouts": layouts.lists(), "configs": configs.lists(),
    }


def decode(data: bytes) -> Candidates:
    """The generation :func:`encode` wrote.

    Raises
    ------
    ValueError
        When ``data`` is not such a document: another format or version, other record fields, lists of
        unequal lengths, or a row number that names no row.
    """
    with no_cycle_collection():  # hundreds of thousands of acyclic records (see there)
        try:
            doc = json.loads(data)  # bad JSON or UTF-8: a ValueError
        except RecursionError:
            raise ValueError("not JSON: nested too deeply") from None
        return _candidates(doc)


def _candidates(doc: Any) -> Candidates:
    """The generation of document ``doc`` (:func:`_tables`)."""
    try:
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} document")
        layouts = _records(PartLayout, _lists(doc, "layouts", _LAYOUT_FIELDS))
        config_lists = _lists(doc, "configs", _CONFIG_FIELDS)
        for f in _LAYOUT_REFS:
            refs = config_lists[f]
            _rows([i for i in refs if i is not None], layouts, f)
            config_lists[f] = [None if i is None else layouts[i] for i in refs]
        configs = _records(PoolConfig, config_lists)
        parts = _records(Part, _lists(doc, "parts", _PART_FIELDS))
        steps = doc["steps"]
        col = _lists(doc, "columns", _COLUMN_FIELDS)
        _rows(col["config"], configs, "config")
        _rows([i for row in col["parts"] for i in row], parts, "parts")
        _rows([i for row in col["steps"] for i in row], steps, "steps")
        if any(len(s) != len(c) for s, c in zip(col["steps"], col["capacity"], strict=True)):
            raise ValueError("a column has not one capacity per step")
        fields = set(Column.model_fields)
        columns = [unvalidated(Column, {
            "name": name, "parts": [parts[i] for i in part_rows],
            "capacity": {steps[i]: c for i, c in zip(step_rows, capacity, strict=True)},
            "pair_bytes_per_s": pair_bytes, "pair_max_latency_s": pair_latency,
        }, fields) for name, part_rows, step_rows, capacity, pair_bytes, pair_latency in zip(
            col["name"], col["parts"], col["steps"], col["capacity"], col["pair_bytes_per_s"],
            col["pair_max_latency_s"], strict=True)]
        out = Candidates(configs={c: configs[i] for c, i in zip(col["name"], col["config"], strict=True)},
                         columns=columns, generated=_count(doc["generated"]), feasible=_count(doc["feasible"]),
                         network_free=doc["network_free"] is True)
    except (KeyError, IndexError, TypeError, AttributeError) as e:
        raise ValueError(f"not a {FORMAT} document ({type(e).__name__}: {e})") from None
    if len(out.configs) != len(out.columns):
        raise ValueError("two columns have one name")
    return out


def _lists(doc: dict, table: str, fields: tuple[str, ...]) -> dict[str, list]:
    """The lists of ``doc[table]``: one per field of ``fields``, all of one length."""
    lists = doc[table]
    if not isinstance(lists, dict) or tuple(lists) != fields:
        raise ValueError(f"table {table!r} has fields {list(lists)}, expected {list(fields)}")
    if not all(isinstance(v, list) for v in lists.values()) or len({len(v) for v in lists.values()}) != 1:
        raise ValueError(f"table {table!r}: expected one list per field, all of one length")
    return dict(lists)


def _records(model: type, lists: dict[str, list]) -> list:
    """One record of ``model`` per row of ``lists`` (built as generation builds them: unvalidated)."""
    fields = set(lists)
    return [unvalidated(model, dict(zip(lists, row, strict=True)), fields) for row in zip(*lists.values(), strict=True)]


def _rows(refs: list, table: list, name: str) -> None:
    """Check that every entry of ``refs`` is a row number of ``table`` (an int in range: a negative one
    would count from the end)."""
    if refs and not (all(type(i) is int for i in refs) and 0 <= min(refs) and max(refs) < len(table)):
        raise ValueError(f"{name}: expected row numbers in [0, {len(table)})")
    return True


def _count(value: Any) -> int:
    if type(value) is not int or value < 0:
        raise ValueError(f"expected a count >= 0, got {value!r}")
    return value
