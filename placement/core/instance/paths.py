"""Fields of an instance by path: what ``--set``, sweeps, re-plans and :func:`with_changes` change.

Paths
-----
A path names one field of the instance, dotted::

    workload.classes.NAME.FIELD      a traffic class by name (e.g. workload.classes.chat.rate_rps)
    hardware.domains.NAME.FIELD      a domain group by name (e.g. hardware.domains.lpx.count)
    hardware.chips.CHIP.FIELD        a chip's record: a catalogue chip is copied into hardware.chips
                                     with the field changed (e.g. hardware.chips.bertha.usd_per_hour)
    hardware.links.SRC/DST.FIELD     a scale-out link by its two switches (or hardware.links.0.FIELD)
    limits.power_kw, objective, ...  plain fields; a list element by position (draft.acceptance.0)
    model.FIELD, draft.model.FIELD   a catalogue model is copied into the instance with the field changed

Every segment is checked against the schema: an unknown field or name fails
with the list of what exists there.

Examples
--------
>>> d = {"workload": {"classes": [{"name": "chat", "tpot_ms": 50}]}}
>>> set_path(d, "workload.classes.chat.tpot_ms", 20); d["workload"]["classes"][0]["tpot_ms"]
20
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Mapping
from typing import Annotated, Any, Union

from pydantic import BaseModel

from placement.core.instance.errors import InputError
from placement.core.instance.loading import parse_instance
from placement.core.instance.schema import Instance

__all__ = ["instance_document", "set_path", "with_changes"]


def _unwrap(ann: Any) -> list[Any]:
    """The alternatives of an annotation (Annotated and Optional/Union flattened)."""
    origin = typing.get_origin(ann)
    if origin is Annotated:
        return _unwrap(typing.get_args(ann)[0])
    if origin in (Union, types.UnionType):
        out = []
        for a in typing.get_args(ann):
            if a is not type(None):
                out.extend(_unwrap(a))
        return out
    return [ann]


def _model_in(ann: Any) -> type[BaseModel] | None:
    for a in _unwrap(ann):
        if isinstance(a, type) and issubclass(a, BaseModel):
            return a
    return None


def _container(ann: Any) -> tuple[str, Any]:
    """('list', element) | ('dict', value) | ('model', cls) | ('scalar', None)."""
    for a in _unwrap(ann):
        origin = typing.get_origin(a)
        if origin is list:
            return "list", typing.get_args(a)[0]
        if origin is dict:
            return "dict", typing.get_args(a)[1]
    m = _model_in(ann)
    return ("model", m) if m is not None else ("scalar", None)


def _fields(model: type[BaseModel]) -> dict[str, Any]:
    """Document key -> field info (aliases as written in files, and names)."""
    out = {}
    for name, info in model.model_fields.items():
        out[info.alias or name] = info
        out[name] = info
    return out


def _catalogue_record(kind: str, name: str, path: str, prices: str | None = None) -> dict:
    """A catalogue chip or model as a document (a chip at the price set ``prices``: its copy keeps the price
    the instance was priced at)."""
    if kind == "chip":
        from topology.chips import load_chip_catalog
        from topology.prices import DEFAULT_PRICES, load_price_sets, priced

        table = load_chip_catalog()
        if (prices or DEFAULT_PRICES) in load_price_sets():
            table = priced(table, prices or DEFAULT_PRICES)
    else:
        from costmodels.models import load_model_catalog

        table = load_model_catalog()
    if name not in table:
        raise InputError(f"unknown {kind} {name!r}; expected one of {', '.join(sorted(table))}", field=path)
    return table[name].model_dump(mode="json", by_alias=True)


def _find_in_list(items: list, seg: str, elem_model: type[BaseModel] | None, where: str, path: str) -> int:
    """Index of a list element addressed by name, SRC/DST (links) or position."""
    if elem_model is not None and "name" in elem_model.model_fields:
        for i, x in enumerate(items):
            if isinstance(x, dict) and x.get("name") == seg:
                return i
    if elem_model is not None and {"source", "target"} <= set(elem_model.model_fields) and "/" in seg:
        src, dst = seg.split("/", 1)
        for i, x in enumerate(items):
            if isinstance(x, dict) and {x.get("source"), x.get("target")} == {src, dst}:
                return i
    if re.fullmatch(r"\d+", seg):
        i = int(seg)
        if i < len(items):
            return i
        raise InputError(f"{where} has {len(items)} entries; index {i} is out of range", field=path)
    names = [str(x.get("name")) for x in items if isinstance(x, dict) and "name" in x]
    if elem_model is not None and {"source", "target"} <= set(elem_model.model_fields):
        names = [f"{x.get('source')}/{x.get('target')}" for x in items if isinstance(x, dict)]
    hint = f"expected one of {', '.join(names)}" if names else f"expected a position 0..{len(items) - 1}"
    raise InputError(f"{where} has no entry {seg!r}; {hint}", field=path)


def set_path(doc: dict, path: str, value: Any) -> None:
    """Set the field at ``path`` of an instance document (a dict, changed in place).

    Catalogue chips named under ``hardware.chips`` and catalogue models named
    by ``model``/``draft.model`` are copied into the document first. Raises
    :class:`InputError` for a path that does not exist in the schema.

    Examples
    --------
    >>> d = {"workload": {"classes": [{"name": "chat", "tpot_ms": 50}]}}
    >>> set_path(d, "workload.classes.chat.tpot_ms", 20); d["workload"]["classes"][0]["tpot_ms"]
    20
    >>> set_path(d, "workload.classes.chat.tpot", 20)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    placement.core.instance.errors.InputError: workload.classes.chat.tpot: unknown field 'tpot' in workload.classes.chat; expected one of ...
    """
    segs = path.split(".")
    if any(s == "" for s in segs):
        raise InputError("empty segment in path (two dots in a row, or a leading/trailing dot)", field=path)
    node: Any = doc
    model: type[BaseModel] | None = Instance
    where = ""
    i = 0
    while True:
        seg = segs[i]
        last = i == len(segs) - 1
        here = f"{where}.{seg}" if where else seg
        if not isinstance(node, dict):
            raise InputError(f"{where} is a {type(node).__name__}, not a record: it has no field {seg!r}", field=path)
        ann: Any = None
        if model is not None:
            fields = _fields(model)
            if seg not in fields:
                names = sorted({info.alias or n for n, info in model.model_fields.items()})
                raise InputError(f"unknown field {seg!r} in {where or 'the instance'}; expected one of "
                                 f"{', '.join(names)}", field=path)
            info = fields[seg]
            ann = info.annotation
            # the key as the document spells it: as found, else the alias files use (measured "class")
            key = seg if seg in node else (info.alias or seg)
        else:
            key = seg
        if last:
            node[key] = value
            return
        kind, sub = _container(ann) if model is not None else ("scalar", None)
        if kind == "scalar" and model is not None:
            raise InputError(f"{here} is a single value, not a record: it has no field {segs[i + 1]!r}", field=path)
        child = node.get(key)
        if child is None:
            if model is None:
                raise InputError(f"{here} is not set; cannot set a field inside it", field=path)
            info = _fields(model)[seg]
            if kind == "model" and info.default is not None and not info.is_required():
                child = node[key] = {}
            elif kind == "list" and not info.is_required():
                child = node[key] = []
            elif kind == "dict":
                child = node[key] = {}
            else:
                raise InputError(f"{here} is not set in this instance; give the whole record in the instance "
                                 "file before sweeping a field inside it", field=path)
        if isinstance(child, str) and kind == "model" and sub is not None and sub.__name__ == "ModelSpec":
            child = node[key] = _catalogue_record("model", child, path)
        if kind == "list":
            elem_model = _model_in(sub)
            nxt = segs[i + 1]
            if here == "hardware.chips":
                idx = next((j for j, c in enumerate(child) if isinstance(c, dict) and c.get("name") == nxt), None)
                if idx is None:
                    child.append(_catalogue_record("chip", nxt, path, doc.get("prices")))
                    idx = len(child) - 1
            else:
                idx = _find_in_list(child, nxt, elem_model, here, path)
            if i + 1 == len(segs) - 1:
                child[idx] = value
                return
            node, model, where = child[idx], elem_model, f"{here}.{nxt}"
            if isinstance(node, str) and elem_model is None:
                raise InputError(f"{where} is a value, not a record", field=path)
            i += 2
            continue
        if kind == "dict":
            elem_model = _model_in(sub)
            nxt = segs[i + 1]
            if i + 1 == len(segs) - 1:
                child[nxt] = value
                return
            if nxt not in child:
                raise InputError(f"{here} has no key {nxt!r}; expected one of {', '.join(map(str, child))}",
                                 field=path)
            node, model, where = child[nxt], elem_model, f"{here}.{nxt}"
            i += 2
            continue
        node, model, where = child, sub, here
        i += 1


def instance_document(inst: Instance) -> dict:
    """An instance as a plain document that :func:`parse_instance` reads back to an equal instance."""
    return inst.model_dump(mode="json", by_alias=True, exclude_unset=True)


def with_changes(instance: Instance, changes: Mapping[str, Any], *, source: str = "<instance>") -> Instance:
    """``instance`` with each field at a ``--set`` path changed, validated as on load.

    Examples
    --------
    >>> import placement
    >>> inst = placement.load_instance("instances/melange-toy.yaml")
    >>> with_changes(inst, {"workload.classes.short-in-short-out.rate_rps": 60}).workload.classes[0].rate_rps
    60.0
    >>> with_changes(inst, {"workload.classes.short-in-short-out.rate": 60})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    placement.core.instance.errors.InputError: workload.classes.short-in-short-out.rate: unknown field 'rate' ...
    """
    if not changes:
        return instance
    doc = instance_document(instance)
    for path, value in changes.items():
        set_path(doc, path, value)
    try:
        return parse_instance(doc, source=source)
    except InputError as e:
        where = ", ".join(f"{k}={v}" for k, v in changes.items())
        raise InputError(f"with {where}: {e.detail}", file=source, field=e.field) from None
