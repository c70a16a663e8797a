"""What makes a plan self-describing: the tool version, the instance's hash, the model and precision.

The instance hash is the SHA-256 of the validated instance's canonical JSON
(pydantic's dump with sorted keys, no spaces), not of the file's bytes: the
same instance written as YAML or JSON, with other comments or key order, has
the same hash, and ``placement deploy PLAN --instance F`` can check that a plan
answers ``F`` (:func:`read_plan_instance`).

``placement check`` compares a plan's provenance with the one re-derived from
the instance (:func:`compare_provenance`): a different model, draft, precision,
framework, calibration overlay, price set or SLO headroom is a violation — the plan answers another
question than the instance asks, whatever its figures say. Run settings a plan records and the
instance leaves at their defaults (``solve --confidence --headroom --prices``) are taken from the plan
first (:func:`as_solved`). A different tool version, plan layout
or instance hash is a warning only: the verifier re-derives every figure from
the instance with this version's cost models, so a plan from another version
(or solved before the instance was edited) that re-verifies is one this version
stands behind.

Examples
--------
>>> from placement.core.instance.schema import Instance
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
from pathlib import Path
from typing import TYPE_CHECKING

from placement.core.instance.errors import InputError
from placement.core.plans.plan import Plan, Provenance
from topology.prices import DEFAULT_PRICES

if TYPE_CHECKING:
    from placement.core.instance.context import Context
    from placement.core.instance.schema import Instance

__all__ = ["as_solved", "compare_provenance", "instance_sha256", "overlay_name", "provenance", "read_plan_instance", "require_known_models",
           "tool_version"]

#: Provenance fields a plan must share with its instance (``framework`` only when the plan records it).
MATCHED_FIELDS = ("model", "draft_model", "precision_weights", "precision_attention", "precision_kv",
                  "precision_activations", "framework", "calibration", "prices", "slo_headroom")
#: Matched fields older plans may lack (None: not compared).
_OPTIONAL_FIELDS = ("precision_attention", "framework", "prices", "slo_headroom")
#: Provenance fields that may differ in a plan that re-verifies, and what a difference means.
_NOTED_FIELDS = {"tool_version": "written by another placement version",
                 "schema_version": "written in another plan layout",
                 "instance_sha256": "solved for another version of the instance (it is checked against this one)"}


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
    given = ctx.instance if ctx.given is None else ctx.given  # the instance as written, headroom and all
    return Provenance(tool_version=tool_version(), instance_sha256=instance_sha256(given),
                      model=ctx.model.name, draft_model=None if ctx.draft_model is None else ctx.draft_model.name,
                      precision_weights=p.weights, precision_attention=p.attention_for(ctx.model),
                      precision_kv=p.kv, precision_activations=p.activations,
                      framework=ctx.instance.serving.framework, calibration=overlay_name(ctx.instance),
                      prices=given.prices, slo_headroom=given.slo_headroom)


def as_solved(inst: Instance, plan: Plan, doing: str = "checked") -> tuple[Instance, list[str]]:
    """``inst`` with the run settings ``plan`` records — its confidence level, SLO headroom and price set
    (``solve --confidence --headroom --prices``) — and one warning per setting taken from the plan (``doing``:
    what is done with the plan at it).

    A plan is checked, re-planned and matched to its instance's hash as it was solved where the instance asks
    for no setting of its own (no ``confidence``, ``slo_headroom`` 1, ``prices`` tco). An instance that asks
    for a headroom or a price set keeps it, and a plan made otherwise fails :func:`compare_provenance` (the
    verifier checks a plan at its own confidence level whatever the instance's:
    :func:`~placement.core.plans.confidence.at_confidence`). Settings a plan does not record (written before they
    were) are the instance's.

    Examples
    --------
    >>> from placement.core.instance.loading import load_instance
    >>> inst = load_instance("instances/melange-toy.yaml")
    >>> plan = Plan(instance="melange-toy", status="optimal", objective="cost", confidence=0.9, provenance=Provenance(
    ...     tool_version="1.0", instance_sha256="0" * 64, model="llama-3.1-8b", precision_weights="bf16",
    ...     precision_kv="bf16", precision_activations="bf16", prices="on-demand", slo_headroom=0.8))
    >>> solved, warnings = as_solved(inst, plan)
    >>> solved.confidence, solved.slo_headroom, solved.prices
    (0.9, 0.8, 'on-demand')
    >>> warnings[0]
    "the plan was priced at confidence 0.9 (the instance: nominal); it is checked at the plan's"
    """
    says = plan.provenance
    recorded = {"confidence": plan.confidence,
                "slo_headroom": None if says is None else says.slo_headroom,
                "prices": None if says is None else says.prices}
    update = {k: v for k, v in recorded.items()
              if (v is not None or k == "confidence") and v != getattr(inst, k) and getattr(inst, k) == _DEFAULTS[k]}
    warnings = [f"the plan was {_SETTINGS[k]} {_setting(v)} (the instance: {_setting(getattr(inst, k))}); it is "
                f"{doing} at the plan's" for k, v in update.items()]
    return (inst.model_copy(update=update) if update else inst), warnings


#: The instance's settings that ask nothing of a plan: a plan's own is taken (others must match).
_DEFAULTS = {"confidence": None, "slo_headroom": 1.0, "prices": DEFAULT_PRICES}
#: What a plan's run setting says, by instance field.
_SETTINGS = {"confidence": "priced at confidence", "slo_headroom": "planned at slo_headroom",
             "prices": "priced with the price set"}


def _setting(value: float | str | None) -> str:
    return "nominal" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def overlay_name(inst: Instance) -> str | None:
    """How provenance names the instance's calibration overlay: ``<file> sha256:<hex>``, None without one."""
    ov = inst.calibration
    return None if ov is None else f"{ov.source or 'inline'} sha256:{ov.sha256 or 'none'}"


def compare_provenance(ctx: Context, plan: Plan, source: str = "<plan>") -> tuple[list[str], list[str]]:
    """(violations, warnings): the plan's provenance against the one re-derived from ``ctx`` (module docstring).

    Each sentence starts with the field (``provenance.model: …``).

    Raises
    ------
    InputError
        The plan names a model or draft that is neither a catalogue model nor the instance's.
    """
    says = plan.provenance
    if says is None:
        return [], ["provenance: none recorded (a plan written before it was): model and precision not compared"]
    wants = provenance(ctx)
    require_known_models(says, {wants.model, wants.draft_model}, "neither a catalogue model nor the instance's",
                         source)
    violations = [f"provenance.{name}: the plan says {getattr(says, name)!r}, the instance {getattr(wants, name)!r}"
                  + (" (check with the overlay the plan was priced with: --calibration FILE)"
                     if name == "calibration" else "")
                  for name in MATCHED_FIELDS
                  if getattr(says, name) != getattr(wants, name)
                  and not (name in _OPTIONAL_FIELDS and getattr(says, name) is None)]
    warnings = [f"provenance.{name}: {why} ({getattr(says, name)!r}, this one {getattr(wants, name)!r})"
                for name, why in _NOTED_FIELDS.items() if getattr(says, name) != getattr(wants, name)]
    return violations, warnings


def require_known_models(prov: Provenance, also: set[str | None], why: str, source: str | None = None) -> None:
    """Refuse a model or draft in ``prov`` that is neither a catalogue model nor in ``also`` (``why`` says so)."""
    from costmodels.models import load_model_catalog

    catalogue = load_model_catalog()
    for name in ("model", "draft_model"):
        model = getattr(prov, name)
        if model is not None and model not in catalogue and model not in also:
            raise InputError(f"unknown model {model!r}: {why}", file=source, field=f"provenance.{name}")


def read_plan_instance(plan: Plan, plan_path: str | Path, instance_path: str | Path,
                       calibration: str | Path | None = None) -> Instance:
    """The instance at ``instance_path`` (with the overlay ``calibration`` in place of its own, when given),
    refused (naming the plan file) when ``plan`` answers another one.

    Another one: another name, or — when the plan records its provenance — another SHA-256 (the
    instance was edited since the plan was solved).
    """
    from placement.core.instance.loading import load_instance

    inst, _ = as_solved(load_instance(instance_path, calibration), plan)
    if plan.instance != inst.name:
        raise InputError(f"plan is for instance {plan.instance!r}, not {inst.name!r}", file=str(plan_path),
                         field="instance")
    digest = instance_sha256(inst)
    if plan.provenance is not None and plan.provenance.instance_sha256 != digest:
        raise InputError(f"plan was solved for another version of {inst.name!r} (instance SHA-256 "
                         f"{plan.provenance.instance_sha256[:12]}…, this file {digest[:12]}…); re-solve or give the "
                         "matching instance", file=str(plan_path), field="provenance.instance_sha256")
    return inst
