#!/usr/bin/env python3
"""Turn one kind of a Kubernetes OpenAPI v3 document into a standalone, strict JSON Schema (draft-04).

Reproduces the vendored Kubernetes schemas from the vendored OpenAPI v3 documents::

    .venv/bin/python schemas/deploy/tools/openapi_to_jsonschema.py \\
        schemas/deploy/real/sources/apis__apps__v1_openapi.json io.k8s.api.apps.v1.Deployment \\
        --source "kubernetes/kubernetes release-1.31 api/openapi-spec/v3/apis__apps__v1_openapi.json" \\
        --out schemas/deploy/real/deployment-apps-v1.json

``--check`` writes nothing and exits 1 if ``--out`` differs from what the conversion gives.

The input is one of kubernetes/kubernetes ``api/openapi-spec/v3/*_openapi.json`` (every group-version
document there carries all the component schemas its kinds use). The output follows the layout of
yannh/kubernetes-json-schema's ``*-standalone-strict`` files:

* every ``$ref`` into ``#/components/schemas`` is inlined (a reference cycle stops the conversion);
  the OpenAPI v3 wrapping ``{"allOf": [{"$ref": ...}], "default": ..., "description": ...}`` becomes the
  referenced schema with the wrapper's ``description``/``default`` laid over it;
* every object with ``properties`` gets ``additionalProperties: false`` (strict: an unknown or misspelt
  field is an error) unless it says ``x-kubernetes-preserve-unknown-fields: true``;
* ``apiVersion`` and ``kind`` get a one-value ``enum`` from the kind's ``x-kubernetes-group-version-kind``
  (draft-04 has no ``const``), as yannh's files do; neither is made required, nor is ``metadata.name``;
* OpenAPI ``nullable: true`` adds ``"null"`` to the type (the 1.31 documents have none);
* everything else is kept as published: descriptions, ``format`` (an annotation unless a format
  checker is used), ``default``, ``oneOf`` (IntOrString integer|string, Quantity string|number),
  ``required``, and the ``x-kubernetes-*`` extensions and ``readOnly`` (unknown keywords, ignored).

Unlike yannh's files (generated from the Swagger 2.0 ``swagger.json`` by openapi2jsonschema), optional
fields do not also accept ``null``. Needs only the standard library.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path

from schema_output import emit

DRAFT4 = "http://json-schema.org/draft-04/schema#"
REF_PREFIX = "#/components/schemas/"
OVERLAY = {"description", "default"}  # wrapper keys laid over an inlined $ref


class Inliner:
    def __init__(self, components: dict) -> None:
        self.components = components
        self.inlined: set[str] = set()

    def resolve(self, ref: str, stack: tuple[str, ...]) -> dict:
        if not ref.startswith(REF_PREFIX):
            raise SystemExit(f"unsupported $ref {ref!r}")
        name = ref[len(REF_PREFIX):]
        if name in stack:
            raise SystemExit(f"reference cycle: {' -> '.join(stack + (name,))}")
        if name not in self.components:
            raise SystemExit(f"$ref to a missing component {name!r}")
        self.inlined.add(name)
        return self.convert(self.components[name], stack + (name,))

    def convert(self, node, stack: tuple[str, ...]):
        if isinstance(node, list):
            return [self.convert(item, stack) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            extra = set(node) - {"$ref"} - OVERLAY
            if extra:
                raise SystemExit(f"$ref with sibling keys {sorted(extra)} in {stack[-1] if stack else 'root'}")
            target = self.resolve(node["$ref"], stack)
            return overlay(target, {k: node[k] for k in OVERLAY if k in node})
        all_of = node.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict) \
                and set(all_of[0]) == {"$ref"} and set(node) - {"allOf"} <= OVERLAY:
            target = self.resolve(all_of[0]["$ref"], stack)
            return overlay(target, {k: node[k] for k in OVERLAY if k in node})

        out: dict = {}
        for key, value in node.items():
            if key == "properties":
                out[key] = {name: self.convert(sub, stack) for name, sub in value.items()}
            elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
                out[key] = self.convert(value, stack)
            elif key in ("allOf", "anyOf", "oneOf"):
                out[key] = [self.convert(sub, stack) for sub in value]
            elif key == "nullable":
                continue
            else:
                out[key] = copy.deepcopy(value)
        if node.get("nullable") is True and "type" in out:
            types = out["type"] if isinstance(out["type"], list) else [out["type"]]
            out["type"] = types + (["null"] if "null" not in types else [])
        if "properties" in out and "additionalProperties" not in out \
                and not node.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
        return out


def overlay(target: dict, wrapper: dict) -> dict:
    merged = dict(target)
    merged.update(copy.deepcopy(wrapper))
    return merged


def kind_schema(doc: dict, name: str, source: str | None, tool: str) -> tuple[dict, Inliner]:
    components = doc.get("components", {}).get("schemas", {})
    if name not in components:
        raise SystemExit(f"{name!r} is not among the document's {len(components)} component schemas")
    inliner = Inliner(components)
    body = inliner.convert(components[name], (name,))
    gvks = components[name].get("x-kubernetes-group-version-kind", [])
    if len(gvks) != 1:
        raise SystemExit(f"{name}: expected one x-kubernetes-group-version-kind, found {gvks!r}")
    gvk = gvks[0]
    api_version = f"{gvk['group']}/{gvk['version']}" if gvk["group"] else gvk["version"]
    props = body.get("properties", {})
    for field, value in (("apiVersion", api_version), ("kind", gvk["kind"])):
        if field in props:
            props[field] = {**props[field], "enum": [value]}
    head = {"$schema": DRAFT4}
    if source:
        head["x-source"] = source
    head["x-generator"] = (f"{tool} ({name}; $refs inlined from {len(inliner.inlined)} component schemas; "
                           "objects with properties closed with additionalProperties: false)")
    return {**head, **body}, inliner


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("openapi", type=Path, help="a Kubernetes api/openapi-spec/v3/*_openapi.json document")
    ap.add_argument("component", help="component schema of the kind, e.g. io.k8s.api.apps.v1.Deployment")
    ap.add_argument("--out", type=Path, help="JSON Schema to write (default: stdout)")
    ap.add_argument("--source", help="provenance recorded as x-source (repository, ref, path)")
    ap.add_argument("--check", action="store_true", help="exit 1 if --out is not what the conversion gives")
    args = ap.parse_args(argv)
    doc = json.loads(args.openapi.read_text(encoding="utf-8"))
    schema, _ = kind_schema(doc, args.component, args.source, "schemas/deploy/tools/openapi_to_jsonschema.py")
    return emit(schema, args.out, args.check, args.openapi)

if __name__ == "__main__":
    sys.exit(main())
