#!/usr/bin/env python3
"""Convert one version of a Kubernetes CustomResourceDefinition to a JSON Schema (Draft 2020-12).

Reproduces ``schemas/deploy/real/httproute-v1.json`` from the vendored CRD::

    .venv/bin/python schemas/deploy/tools/crd_to_jsonschema.py \\
        schemas/deploy/real/sources/gateway.networking.k8s.io_httproutes.yaml \\
        --version v1 --out schemas/deploy/real/httproute-v1.json

``--check`` writes nothing and exits 1 if ``--out`` differs from what the conversion gives.

The provenance (``$comment``, ``x-source``) is taken from the ``#`` comment lines at the top of the
CRD file, so keep a ``# Source: ...`` line there naming repository, tag, commit, path and date read.

Rules, applied to the version's ``openAPIV3Schema``:

* kept: ``type``, ``properties``, ``required``, ``items``, ``enum``, ``minItems``/``maxItems``,
  ``minLength``/``maxLength``, ``minimum``/``maximum``, ``multipleOf``, ``pattern``, ``format``
  (an annotation in 2020-12), ``minProperties``/``maxProperties``, ``additionalProperties``,
  ``allOf``/``anyOf``/``oneOf``/``not``, and ``default`` when the default conforms to its own schema;
* every object with ``properties`` gets ``additionalProperties: false`` (the API server prunes unknown
  fields of a structural schema; here they are an error), unless it is
  ``x-kubernetes-preserve-unknown-fields``;
* ``x-kubernetes-list-type: set`` becomes ``uniqueItems: true``; ``x-kubernetes-int-or-string`` becomes
  ``anyOf`` integer/string; OpenAPI ``nullable`` adds ``"null"`` to the type; boolean
  ``exclusiveMinimum``/``exclusiveMaximum`` (OpenAPI 3.0) become the numeric 2020-12 forms;
* dropped: all other ``x-kubernetes-*`` (list-map keys, CEL ``x-kubernetes-validations``, ...),
  ``description`` (unless ``--keep-descriptions``), ``example``, ``externalDocs``;
* the root's ``apiVersion``/``kind`` become ``const``s, ``metadata`` a small ObjectMeta
  (name required; namespace for a namespaced kind; labels; annotations), and all three are required.

Any other keyword stops the conversion, so nothing in a newer CRD is lost without notice.
Needs only the standard library and PyYAML.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import yaml
from schema_output import emit

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
KEEP = {"type", "enum", "minItems", "maxItems", "minLength", "maxLength", "minimum", "maximum", "multipleOf",
        "pattern", "format", "minProperties", "maxProperties", "uniqueItems", "required", "title"}
DROP = {"example", "externalDocs"}
SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf")
DNS1123_LABEL = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS1123_SUBDOMAIN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
LABEL_KEY = "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
LABEL_VALUE = "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
JSON_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "integer": int, "number": (int, float)}


class Converter:
    def __init__(self, keep_descriptions: bool) -> None:
        self.keep_descriptions = keep_descriptions
        self.dropped: dict[str, int] = {}
        self.warnings: list[str] = []

    def _drop(self, key: str) -> None:
        self.dropped[key] = self.dropped.get(key, 0) + 1

    def convert(self, node: dict, path: str) -> dict:
        if not isinstance(node, dict):
            raise SystemExit(f"{path}: schema is not a mapping: {node!r}")
        out: dict = {}
        for key, value in node.items():
            if key in KEEP:
                out[key] = value
            elif key == "description":
                if self.keep_descriptions:
                    out[key] = value
                else:
                    self._drop(key)
            elif key == "properties":
                out[key] = {name: self.convert(sub, f"{path}.{name}") for name, sub in value.items()}
            elif key == "items":
                if not isinstance(value, dict):
                    raise SystemExit(f"{path}: tuple-form items is not supported")
                out[key] = self.convert(value, f"{path}[]")
            elif key == "additionalProperties":
                out[key] = value if isinstance(value, bool) else self.convert(value, f"{path}{{}}")
            elif key in SUBSCHEMA_LISTS:
                out[key] = [self.convert(sub, f"{path}/{key}/{i}") for i, sub in enumerate(value)]
            elif key == "not":
                out[key] = self.convert(value, f"{path}/not")
            elif key in ("default", "nullable", "exclusiveMinimum", "exclusiveMaximum"):
                pass  # handled below, once the rest of the node is known
            elif key == "x-kubernetes-list-type":
                if value == "set":
                    out["uniqueItems"] = True
                else:
                    self._drop(f"{key}: {value}")
            elif key.startswith("x-kubernetes-") or key in DROP:
                self._drop(key)
            else:
                raise SystemExit(f"{path}: keyword {key!r} has no conversion rule; extend crd_to_jsonschema.py")

        if node.get("x-kubernetes-int-or-string"):
            out.pop("type", None)
            out["anyOf"] = [{"type": "integer"}, {"type": "string"}] + out.get("anyOf", [])
        for bound, excl in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
            if node.get(excl) is True and bound in out:
                out[excl] = out.pop(bound)
        if node.get("nullable") and "type" in out:
            out["type"] = [out["type"], "null"]
            if "enum" in out and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
        if "properties" in out and "additionalProperties" not in out \
                and not node.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
        for kw in ("enum",):  # YAML 1.1 turns yes/no/on/off into booleans: catch it rather than vendor it
            if out.get("type") == "string" and any(not isinstance(v, str) for v in out.get(kw, [])):
                raise SystemExit(f"{path}: non-string {kw} value in a string schema: {out[kw]!r}")
        if "default" in node:
            problem = conformance(node["default"], out)
            if problem is None:
                out["default"] = node["default"]
            else:
                self.warnings.append(f"{path}: default {node['default']!r} dropped ({problem})")
        return order(out)


def order(schema: dict) -> dict:
    """A stable, readable key order: type first, then constraints, then nested schemas."""
    first = ["title", "description", "type", "required", "enum", "format", "default"]
    last = ["properties", "additionalProperties", "items", "allOf", "anyOf", "oneOf", "not"]
    keys = [k for k in first if k in schema] + sorted(k for k in schema if k not in first + last)
    keys += [k for k in last if k in schema]
    return {k: schema[k] for k in keys}


def conformance(value, schema: dict) -> str | None:
    """Why ``value`` does not conform to the converted ``schema`` (the keywords it can have), or None."""
    types = schema.get("type")
    if types is not None:
        types = types if isinstance(types, list) else [types]
        ok = any(t == "null" and value is None or t != "null" and isinstance(value, JSON_TYPES[t])
                 and not (t in ("integer", "number") and isinstance(value, bool)) for t in types)
        if not ok:
            return f"not of type {types}"
    if "anyOf" in schema and all(conformance(value, s) for s in schema["anyOf"]):
        return "matches no anyOf branch"
    if "enum" in schema and value not in schema["enum"]:
        return f"not in enum {schema['enum']}"
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0) or len(value) > schema.get("maxLength", len(value)):
            return "length out of bounds"
        if "pattern" in schema and not re.search(schema["pattern"], value):
            return f"does not match {schema['pattern']!r}"
    if (isinstance(value, (int, float)) and not isinstance(value, bool)
            and (value < schema.get("minimum", value) or value > schema.get("maximum", value))):
        return "out of bounds"
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", len(value)):
            return "item count out of bounds"
        for i, item in enumerate(value):
            if "items" in schema and (why := conformance(item, schema["items"])):
                return f"[{i}]: {why}"
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                return f"missing required {name!r}"
        for name, item in value.items():
            sub = props.get(name, schema.get("additionalProperties", True))
            if sub is False:
                return f"unknown field {name!r}"
            if isinstance(sub, dict) and (why := conformance(item, sub)):
                return f".{name}: {why}"
    return None


def object_meta(namespaced: bool) -> dict:
    props = {"name": {"type": "string", "maxLength": 253, "pattern": DNS1123_SUBDOMAIN}}
    if namespaced:
        props["namespace"] = {"type": "string", "maxLength": 63, "pattern": DNS1123_LABEL}
    props["labels"] = {"$ref": "#/$defs/Labels"}
    props["annotations"] = {"type": "object", "additionalProperties": {"type": "string"}}
    return {"type": "object", "required": ["name"], "properties": props, "additionalProperties": False}


LABELS = {"type": "object", "propertyNames": {"maxLength": 317, "pattern": LABEL_KEY},
          "additionalProperties": {"type": "string", "maxLength": 63, "pattern": LABEL_VALUE}}


def provenance(text: str) -> str:
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    source = " ".join(line for line in lines if line)
    if not source:
        raise SystemExit("the CRD file has no leading '# Source: ...' comment naming where it came from")
    return source.removeprefix("Source:").strip()


def crd_to_schema(text: str, version: str | None, schema_id: str | None, keep_descriptions: bool,
                  tool: str = "schemas/deploy/tools/crd_to_jsonschema.py") -> tuple[dict, Converter]:
    crd = yaml.safe_load(text)
    if crd.get("kind") != "CustomResourceDefinition":
        raise SystemExit(f"not a CustomResourceDefinition: kind {crd.get('kind')!r}")
    spec = crd["spec"]
    group, kind = spec["group"], spec["names"]["kind"]
    versions = spec["versions"]
    chosen = [v for v in versions if v["name"] == version] if version else [v for v in versions if v.get("storage")]
    if len(chosen) != 1:
        raise SystemExit(f"version {version!r} not found once among {[v['name'] for v in versions]}")
    ver = chosen[0]
    conv = Converter(keep_descriptions)
    body = conv.convert(ver["schema"]["openAPIV3Schema"], kind)
    props = body.setdefault("properties", {})
    props["apiVersion"] = {"const": f"{group}/{ver['name']}"}
    props["kind"] = {"const": kind}
    props["metadata"] = {"$ref": "#/$defs/ObjectMeta"}
    body["required"] = ["apiVersion", "kind", "metadata"] + [r for r in body.get("required", [])
                                                            if r not in ("apiVersion", "kind", "metadata")]
    body["additionalProperties"] = False
    body.pop("description", None)

    annotations = crd.get("metadata", {}).get("annotations", {})
    bundle = annotations.get("gateway.networking.k8s.io/bundle-version")
    channel = annotations.get("gateway.networking.k8s.io/channel")
    source = provenance(text)
    dropped = ", ".join(f"{k} x{n}" for k, n in sorted(conv.dropped.items()))
    head = {
        "$schema": SCHEMA_DIALECT,
        "$id": schema_id,
        "title": f"{kind} {group}/{ver['name']} (converted from the CRD's openAPIV3Schema)",
        "description": (
            f"Generated by {tool} from the {crd['metadata']['name']} CRD, version {ver['name']}; do not edit by hand. "
            "Types, properties, required, items, enum, length/item/number bounds, patterns and conforming defaults "
            "are the CRD's; objects with properties take no other fields (additionalProperties: false, where the "
            "API server would prune them); x-kubernetes-list-type set lists are uniqueItems. Not enforced: the "
            "CEL rules (x-kubernetes-validations) and list-map key uniqueness, so a document this schema accepts "
            "can still be rejected by the API server. Patterns are evaluated by the validator's regex engine "
            "(Python re for the jsonschema package), not Go RE2."),
        "x-source": source,
        "x-version": f"{group}/{ver['name']}" + (f" (Gateway API {bundle}, {channel} channel)" if bundle else ""),
        "$comment": f"Source: {source}. Converted by {tool}; dropped: {dropped}.".replace("..", "."),
    }
    if schema_id is None:
        del head["$id"]
    return {**head, **body, "$defs": {"ObjectMeta": object_meta(spec.get("scope") == "Namespaced"),
                                      "Labels": LABELS}}, conv


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("crd", type=Path, help="CRD YAML, with a leading '# Source: ...' comment line")
    ap.add_argument("--version", help="CRD version to convert (default: the storage version)")
    ap.add_argument("--out", type=Path, help="JSON Schema to write (default: stdout)")
    ap.add_argument("--id", dest="schema_id", help="$id (default: placement/schemas/deploy/<out file name>)")
    ap.add_argument("--keep-descriptions", action="store_true", help="keep the CRD's field descriptions")
    ap.add_argument("--check", action="store_true", help="exit 1 if --out is not what the conversion gives")
    args = ap.parse_args(argv)
    schema_id = args.schema_id or (f"placement/schemas/deploy/{args.out.name}" if args.out else None)
    schema, conv = crd_to_schema(args.crd.read_text(encoding="utf-8"), args.version, schema_id,
                                 args.keep_descriptions)
    for warning in conv.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return emit(schema, args.out, args.check, args.crd,
                "; dropped: " + ", ".join(f"{k} x{n}" for k, n in sorted(conv.dropped.items())))

if __name__ == "__main__":
    sys.exit(main())
