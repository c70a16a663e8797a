"""Field types of the instance format: names, serving modes, precisions, frameworks, price sets and finite
numbers (the records that use them are :mod:`placement.core.instance.schema`'s and :mod:`placement.core.plans.plan`'s).

Examples
--------
>>> from pydantic import TypeAdapter
>>> TypeAdapter(PriceSetName).validate_python("on-demand"), TypeAdapter(Whole).validate_python(3)
('on-demand', 3)
>>> try:
...     TypeAdapter(Whole).validate_python(True)
... except ValueError as e:
...     print(e.errors()[0]["msg"])
Value error, expected a number, got the boolean true
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field

from placement.core.modes.registry import check_option, options
from topology.prices import load_price_sets

__all__ = ["NAME_PATTERN", "NAME_RULE", "ActivationPrecision", "DerivedName", "Framework", "Mode", "Name",
           "NonNegFinite", "PositiveFinite", "PriceSetName", "StoragePrecision", "WeightPrecision", "Whole"]

#: An entry of ``modes``: the option of a registered serving mode.
Mode = Annotated[str, AfterValidator(check_option)]


def __getattr__(name: str) -> Any:
    """``MODES``: the serving modes an instance may allow (:func:`~placement.core.modes.registry.options`),
    read when asked, not when this module is imported: the registry fills itself by importing the modes,
    which import the rooms above this one."""
    if name == "MODES":
        return options()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

#: The rule every name follows (classes, domain groups, switches, the instance; a plan's names too): it may
#: become a file name, a Kubernetes name or label, a YAML scalar or a word of a shell line.
NAME_RULE = r"[A-Za-z0-9][A-Za-z0-9_.\-]*"
NAME_PATTERN = f"^{NAME_RULE}$"
Name = Annotated[str, Field(pattern=NAME_PATTERN, max_length=64)]
#: A name built from names by the tool (a session class's outcome ``chat.kv-host``): the same rule, longer.
DerivedName = Annotated[str, Field(pattern=NAME_PATTERN, max_length=128)]
#: Precisions of the KV cache, of weights (also OCP MXFP4: gpt-oss's experts) and of the activations exchanged
#: between ranks and pools (bytes per value: topology.chips.BYTES_PER_VALUE).
StoragePrecision = Literal["fp4", "fp8", "bf16"]
WeightPrecision = Literal["fp4", "mxfp4", "fp8", "bf16"]
ActivationPrecision = Literal["fp8", "bf16"]


def _known_framework(name: str) -> str:
    from costmodels.frameworks import framework_entry

    try:
        framework_entry(name)
    except KeyError as e:
        raise ValueError(e.args[0]) from None
    return name


#: An entry of ``costmodels/catalog/frameworks.yaml`` (:mod:`costmodels.frameworks`).
Framework = Annotated[str, AfterValidator(_known_framework)]


def _not_a_bool(value: Any) -> Any:
    """``true``/``false`` are not numbers (pydantic would read them as 1 and 0)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got the boolean {str(value).lower()}")  # noqa: TRY004 - pydantic turns only ValueError into a validation error
    return value


PositiveFinite = Annotated[float, BeforeValidator(_not_a_bool), Field(gt=0, allow_inf_nan=False)]
NonNegFinite = Annotated[float, BeforeValidator(_not_a_bool), Field(ge=0, allow_inf_nan=False)]
#: A whole number that is not a boolean.
Whole = Annotated[int, BeforeValidator(_not_a_bool)]


def _known_price_set(name: str) -> str:
    sets = load_price_sets()
    if name not in sets:
        raise ValueError(f"unknown price set {name!r}; expected one of {', '.join(sets)} "
                         "(topology/catalog/prices.yaml)")
    return name


#: A set of ``topology/catalog/prices.yaml`` (:mod:`topology.prices`).
PriceSetName = Annotated[str, AfterValidator(_known_price_set)]
