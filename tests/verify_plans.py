"""Shipped instances solved once per test session (HiGHS), for the verifier's tamper tests."""

from __future__ import annotations

import copy
import functools
import json
import re
import tempfile
from pathlib import Path

import placement
from placement.core.instance.context import Context

#: Variants of shipped instances: (the shipped file, the ``modes`` line it is restricted to). With
#: data-parallel attention the Rubin + LPX plan serves every class on Rubin alone; the tamper tests of
#: attention–FFN pools, pairs and link loads need a plan that still pairs Rubin attention with LPX FFNs.
VARIANTS = {"rubin-lpx-deepseek-af": ("rubin-lpx-deepseek", "modes: [pd-af]")}


@functools.cache
def instance_file(name: str) -> str:
    """Path of instance ``name``: ``instances/<name>.yaml``, or a variant written once to a temporary file."""
    if name not in VARIANTS:
        return f"instances/{name}.yaml"
    base, modes = VARIANTS[name]
    text, n = re.subn(r"^modes: .*$", modes, Path(f"instances/{base}.yaml").read_text(), count=1, flags=re.MULTILINE)
    assert n == 1, f"no modes line in instances/{base}.yaml"
    path = Path(tempfile.mkdtemp(prefix="verify-plans-")) / f"{name}.yaml"
    path.write_text(text)
    return str(path)


@functools.cache
def _solved(name: str) -> tuple:
    inst = placement.load_instance(instance_file(name))
    plan = placement.solve(inst)  # the default backend (CBC): HiGHS takes ~23 s on spec-decode-draft
    assert plan.status == "optimal" and plan.verified, (name, plan.violations)
    return inst, Context.of(inst), json.loads(plan.model_dump_json())


def solved(name: str) -> tuple:
    """(instance, context, plan as a fresh JSON document) of instance ``name`` (:func:`instance_file`)."""
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
