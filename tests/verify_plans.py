"""Shipped instances solved once per test session (HiGHS), for the verifier's tamper tests."""

from __future__ import annotations

import copy
import functools
import json

import placement
from placement.core.context import Context


@functools.cache
def _solved(name: str) -> tuple:
    inst = placement.load_instance(f"instances/{name}.yaml")
    plan = placement.solve(inst, backend="highs")
    assert plan.status == "optimal" and plan.verified, (name, plan.violations)
    return inst, Context.of(inst), json.loads(plan.model_dump_json())


def solved(name: str) -> tuple:
    """(instance, context, plan as a fresh JSON document) of ``instances/<name>.yaml``."""
    inst, ctx, doc = _solved(name)
    return inst, ctx, copy.deepcopy(doc)


def pool(doc: dict, **match) -> dict:
    """The first pool of a plan document whose fields equal ``match``."""
    return next(p for p in doc["pools"] if all(p[k] == v for k, v in match.items()))


def write(tmp_path, doc: dict) -> str:
    """Write a plan document as JSON (NaN and Infinity written as JSON's extensions) and return its path."""
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc))
    return str(path)
