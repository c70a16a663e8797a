"""JSON Schemas of the instance and plan formats, from the pydantic models, and the instance reference.

The schemas are what ``placement schema instance|plan`` prints and what ships
in ``schemas/``; ``tests/test_schema.py`` checks the shipped files equal the
command's output and validates every shipped instance (and solved plans)
against them. Regenerate after a model change::

    placement schema instance --out schemas/instance.schema.json
    placement schema plan --out schemas/plan.schema.json
    placement schema instance --markdown --out docs/instance-format.md

The schema checks the shape (fields, types, bounds); cross-references (a
domain group's chip in the catalogue, a link's ends among the switches) are
checked by ``placement validate``.

Examples
--------
>>> s = schema_of("instance")
>>> s["$schema"], s["title"], sorted(s["required"])
('https://json-schema.org/draft/2020-12/schema', 'Instance', ['hardware', 'model', 'name', 'workload'])
>>> unit_of("ttft_ms"), unit_of("bandwidth_gb_per_s"), unit_of("rate_rps")
('ms', 'GB/s', 'requests/s')
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

__all__ = ["SCHEMA_KINDS", "instance_markdown", "schema_json", "schema_of", "shipped_instances", "unit_of"]

SCHEMA_KINDS = ("instance", "plan")
_DIALECT = "https://json-schema.org/draft/2020-12/schema"
_ID = "https://github.com/placement/placement/schemas/{kind}.schema.json"

#: Name suffix -> unit, longest first (a field's unit is in its name: ARCHITECTURE.md, "Conventions that hold everywhere").
_UNITS = (
    ("_usd_per_hour_per_chip", "$/h per chip"), ("_usd_per_hour", "$/h"), ("_gb_per_s", "GB/s"),
    ("_bytes_per_s", "bytes/s"), ("_per_s", "/s"), ("_tokens", "tokens"), ("_bytes", "bytes"),
    ("_rps", "requests/s"), ("_ms", "ms"), ("_us", "µs"), ("_kw", "kW"), ("_w", "W"), ("_s", "s"),
    ("_gb", "GB"),
)


def unit_of(field: str) -> str:
    """The unit a field's name states ("" when it has none)."""
    for suffix, unit in _UNITS:
        if field.endswith(suffix):
            return unit
    return ""


def schema_of(kind: Literal["instance", "plan"]) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of an instance or a plan, from the pydantic models."""
    if kind == "instance":
        from placement.core.instance.schema import Instance as model
    elif kind == "plan":
        from placement.core.plans.plan import Plan as model
    else:
        raise ValueError(f"unknown schema {kind!r}; expected one of {', '.join(SCHEMA_KINDS)}")
    body = model.model_json_schema(mode="validation")
    head = {"$schema": _DIALECT, "$id": _ID.format(kind=kind)}
    if kind == "plan":
        from placement.core.plans.plan import PLAN_SCHEMA_VERSION

        head["x-plan-schema-version"] = PLAN_SCHEMA_VERSION
    return {**head, **body}


def schema_json(kind: Literal["instance", "plan"]) -> str:
    """The schema as the text shipped in ``schemas/`` (two-space indent, trailing newline)."""
    return json.dumps(schema_of(kind), indent=2, ensure_ascii=False) + "\n"


# ---- the Markdown reference ------------------------------------------------------------------

def _ref_name(node: dict) -> str | None:
    ref = node.get("$ref")
    return ref.rsplit("/", 1)[-1] if ref else None


def _branches(node: dict) -> list[dict]:
    return node.get("anyOf") or node.get("oneOf") or [node]


def _type_text(node: dict) -> str:
    parts = []
    for b in _branches(node):
        name = _ref_name(b)
        if name:
            parts.append(f"[{name}](#{name.lower()})")
        elif "enum" in b:
            parts.append(" | ".join(f"`{v}`" for v in b["enum"]))
        elif "const" in b:
            parts.append(f"`{b['const']}`")
        elif b.get("type") == "array":
            parts.append(f"list of {_type_text(b.get('items', {}))}")
        elif b.get("type") == "object" and "additionalProperties" in b:
            parts.append(f"map to {_type_text(b['additionalProperties'])}")
        else:
            parts.append(str(b.get("type", "any")))
    return " or ".join(parts)


def _bounds_text(node: dict) -> str:
    out = []
    for b in _branches(node):
        for key, sym in (("exclusiveMinimum", ">"), ("minimum", "≥"), ("exclusiveMaximum", "<"), ("maximum", "≤")):
            if key in b:
                out.append(f"{sym} {b[key]:g}")
        for key, text in (("minItems", "items ≥"), ("maxItems", "items ≤"), ("maxLength", "length ≤")):
            if key in b:
                out.append(f"{text} {b[key]}")
        if "pattern" in b:
            out.append(f"matches `{b['pattern']}`")
    return ", ".join(out)


def _walk(defs: dict, node: dict, doc: Any, seen: dict[str, dict[str, Any]]) -> None:
    """Record, per definition and field, the first value a document gives it."""
    for b in _branches(node):
        name = _ref_name(b)
        if name and isinstance(doc, dict):
            target = defs[name]
            fields = seen.setdefault(name, {})
            for key, value in doc.items():
                sub = target.get("properties", {}).get(key)
                if sub is None:
                    continue
                fields.setdefault(key, value)
                _walk(defs, sub, value, seen)
            return
        if b.get("type") == "array" and isinstance(doc, list):
            for item in doc:
                _walk(defs, b.get("items", {}), item, seen)
            return


def _examples(schema: dict) -> dict[str, dict[str, Any]]:
    """Example values per definition and field, from the shipped instances and the catalogues."""
    from costmodels.models import CATALOG_PATH as MODELS
    from placement.core.instance.loading import read_document
    from topology.chips import CATALOG_PATH as CHIPS

    defs = schema["$defs"]
    seen: dict[str, dict[str, Any]] = {}
    top = {"$ref": "#/$defs/Instance"}
    defs = {**defs, "Instance": schema}
    for path in shipped_instances():
        _walk(defs, top, read_document(path), seen)
    chip_def = "ChipSpec" if "ChipSpec" in defs else "UserChip"
    for path, key, name in ((CHIPS, "chips", chip_def), (MODELS, "models", "ModelSpec")):
        for record in read_document(path)[key]:
            _walk(defs, {"$ref": f"#/$defs/{name}"}, record, seen)
    return seen


def shipped_instances() -> list[Path]:
    """The instance files shipped in the package (``placement/instances/*.yaml``), sorted."""
    return sorted((Path(__file__).parents[2] / "instances").glob("*.yaml"))


def _example_text(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return f"`{text if len(text) <= 60 else text[:57] + '…'}`"


def _fallback_example(node: dict) -> Any:
    if "default" in node:
        return node["default"]
    for b in _branches(node):
        if "enum" in b:
            return b["enum"][0]
        if b.get("type") in ("integer", "number"):
            return b.get("minimum", b.get("exclusiveMinimum", 0) + 1)
        if b.get("type") == "boolean":
            return False
        if b.get("type") == "string":
            return "name"
        if b.get("type") == "array":
            return []
    return {}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _records() -> dict[str, type]:
    """Every record class by name (the schema's definitions), to read defaults made by factories."""
    import costmodels.measured
    import costmodels.models  # noqa: F401
    import placement.core.instance.schema  # noqa: F401
    from topology.records import Record

    out: dict[str, type] = {}
    todo = [Record]
    while todo:
        cls = todo.pop()
        out.setdefault(cls.__name__, cls)
        todo += cls.__subclasses__()
    return out


def _default_text(records: dict[str, type], name: str, field: str, sub: dict) -> str:
    if "default" in sub:
        return _example_text(sub["default"])
    cls = records.get(name)
    info = getattr(cls, "model_fields", {}).get(field)
    if info is not None and info.default_factory is not None:
        return _example_text(info.get_default(call_default_factory=True))
    return "—"


def _table(name: str, node: dict, examples: dict[str, Any], records: dict[str, type]) -> Iterator[str]:
    yield f"## {name}"
    yield ""
    if node.get("description"):
        yield _cell(node["description"].split("Attributes\n")[0].strip())
        yield ""
    required = set(node.get("required", []))
    yield "| field | type | unit | default | bounds | example | meaning |"
    yield "| --- | --- | --- | --- | --- | --- | --- |"
    for field, sub in node.get("properties", {}).items():
        default = "required" if field in required else _default_text(records, name, field, sub)
        example = examples[field] if field in examples else _fallback_example(sub)
        yield (f"| `{field}` | {_cell(_type_text(sub))} | {unit_of(field) or '—'} | {default} | "
               f"{_cell(_bounds_text(sub)) or '—'} | {_cell(_example_text(example))} | "
               f"{_cell(sub.get('description', ''))} |")
    yield ""


def instance_markdown() -> str:
    """``docs/instance-format.md``: every instance field with its type, unit, default, bounds and an example."""
    schema = schema_of("instance")
    examples = _examples(schema)
    lines = [
        "# Instance format",
        "",
        ("<!-- Generated by `placement schema instance --markdown --out docs/instance-format.md`; "
        "do not edit (tests/test_schema.py checks it is up to date). -->"),
        "",
        ("An instance is a YAML or JSON file: the model, the traffic, the fleet and what is allowed. "
        "Its JSON Schema is `schemas/instance.schema.json` (`placement schema instance`); "
        "`placement validate F` also checks what a schema cannot see (chips and models in the catalogue, "
        "links between declared switches). `placement init --model M --chips a,b` writes a starter file."),
        "",
        ("Units are in the field names (`_ms`, `_gb_per_s`, `_rps`…). Examples come from the shipped "
        "instances and catalogues where they use the field; otherwise the default or the smallest "
        "accepted value. A field whose type is a record (linked) is described in its own section."),
        "",
    ]
    records = _records()
    lines += list(_table("Instance", schema, examples.get("Instance", {}), records))
    for name, node in schema["$defs"].items():
        lines += list(_table(name, node, examples.get(name, {}), records))
    return "\n".join(lines)
