"""What makes a plan self-describing: the tool version, the instance's hash, the model and precision.

The instance hash is the SHA-256 of the validated instance's canonical JSON
(pydantic's dump with sorted keys, no spaces), not of the file's bytes: the
same instance written as YAML or JSON, with other comments or key order, has
the same hash, and ``placement deploy PLAN --instance F`` can check that a plan
answers ``F``.

Examples
--------
>>> from placement.core.schema import Instance
>>> inst = Instance.model_validate({
...     "name": "tiny", "model": "llama-3.1-8b",
...     "workload": {"classes": [{"name": "chat", "rate_rps": 2, "prompt_tokens": 500,
...                               "output_tokens": 100, "ttft_ms": 1000, "tpot_ms": 50}]},
...     "hardware": {"domains": [{"name": "h100", "chip": "h100", "count": 2}]}})
>>> len(instance_sha256(inst)), instance_sha256(inst) == instance_sha256(inst.model_copy())
(64, True)
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from placement.core.plan import Provenance

if TYPE_CHECKING:
    from placement.core.context import Context
    from placement.core.schema import Instance

__all__ = ["instance_sha256", "provenance", "tool_version"]


def tool_version() -> str:
    """The installed ``placement`` version ("unknown" when run from a tree that was never installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("placement")
    except PackageNotFoundError:
        return "unknown"


def instance_sha256(inst: Instance) -> str:
    """SHA-256 (hex) of the instance's canonical JSON: sorted keys, compact separators, UTF-8."""
    doc = inst.model_dump(mode="json", by_alias=True)
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def provenance(ctx: Context) -> Provenance:
    """The provenance record of a plan solved from ``ctx``."""
    p = ctx.instance.precision
    return Provenance(tool_version=tool_version(), instance_sha256=instance_sha256(ctx.instance),
                      model=ctx.model.name, draft_model=None if ctx.draft_model is None else ctx.draft_model.name,
                      precision_weights=p.weights, precision_kv=p.kv, precision_activations=p.activations)
