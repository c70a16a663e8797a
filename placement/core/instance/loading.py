"""Reading instance files into validated :class:`~placement.core.instance.schema.Instance` records.

Every problem is reported as an :class:`~placement.core.instance.errors.InputError` naming the
file, the field (a dotted path such as ``workload.classes[1].tpot_ms``) and what
was expected: schema errors from pydantic, then cross-references (chips, models,
switches, measured tables) that a schema alone cannot see.

Examples
--------
>>> from placement.core.instance.loading import parse_instance
>>> parse_instance({"name": "x"}, source="x.yaml")
Traceback (most recent call last):
...
placement.core.instance.errors.InputError: x.yaml: model: required field is missing
  and workload: required field is missing
  and hardware: required field is missing
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from costmodels.models import ModelSpec, load_model_catalog
from placement.core.instance.calibration_overlay import CalibrationOverlay, overlay_chips
from placement.core.instance.documents import (
    describe_error,
    input_error_of,
    read_bounded,
    read_document,
    read_record,
    reject_non_finite,
)
from placement.core.instance.errors import InputError
from placement.core.instance.schema import Instance
from topology.chips import ChipSpec, load_chip_catalog
from topology.prices import DEFAULT_PRICES, load_price_sets, priced

__all__ = [
    "chips_of",
    "describe_error",
    "draft_model_of",
    "input_error_of",
    "load_instance",
    "model_aliases",
    "model_of",
    "parse_instance",
    "read_bounded",
    "read_document",
    "read_overlay",
    "with_prices",
]

#: Smallest positive request rate (req/s) of a class or a measured replica: one request in ~30,000
#: years. The verifier counts loads at or below this as not served, and rates near the smallest
#: doubles (1e-320) overflow the cost models' reciprocals.
MIN_RATE_RPS = 1e-12
#: Largest measured requests/s per replica (a class asks for at most 1e7 req/s).
MAX_MEASURED_RPS = 1e9
#: Largest integer size in a model record (layers, hidden size, heads, head dim, vocabulary,
#: experts): the largest published models are ~1e5 wide and have ~1e3 layers.
MAX_MODEL_SIZE = 10_000_000

def load_instance(path: str | Path, calibration: str | Path | None = None) -> Instance:
    """Read, validate and cross-check an instance file; ``calibration`` (an overlay file) replaces the one
    the instance names.

    Raises
    ------
    InputError
        Naming the file, the field and what was expected.

    Examples
    --------
    >>> inst = load_instance("instances/melange-toy.yaml")
    >>> inst.name, [d.name for d in inst.hardware.domains]
    ('melange-toy', ['a10g-pool', 'a100-pool'])
    >>> load_instance("no-such-file.yaml")
    Traceback (most recent call last):
    ...
    placement.core.instance.errors.InputError: no-such-file.yaml: cannot read file: No such file or directory
    """
    data = read_document(path)
    if calibration is not None and isinstance(data, dict):
        data = {**data, "calibration": read_overlay(calibration).model_dump(mode="json")}
    return parse_instance(data, source=str(path))


def read_overlay(path: str | Path) -> CalibrationOverlay:
    """Read a calibration overlay file (:mod:`placement.core.instance.calibration_overlay`), its name and SHA-256 kept.

    Raises
    ------
    InputError
        Naming the file and the field.
    """
    p = Path(path)
    return read_record(p, CalibrationOverlay, "a calibration overlay (a mapping with placement_calibration: 1 and "
                       "chips)", extra=lambda raw: {"source": p.name, "sha256": hashlib.sha256(raw).hexdigest()})


def _with_overlay(data: dict, source: str) -> dict:
    """``data`` with a ``calibration`` given as a path (relative to the instance file) replaced by the overlay."""
    ref = data.get("calibration")
    if not isinstance(ref, str):
        return data
    path = _relative_to(source, ref)
    try:
        overlay = read_overlay(path)
    except InputError as e:
        raise InputError(f"calibration: {e.detail}", file=e.file or source, field="calibration") from None
    return {**data, "calibration": overlay.model_dump(mode="json")}


def _relative_to(source: str, ref: str) -> Path:
    base = Path(source).parent if source and not source.startswith("<") else Path.cwd()
    return Path(ref) if Path(ref).is_absolute() else base / ref


def _with_model_config(data: dict, source: str) -> dict:
    """``data`` with a ``model: {config: PATH}`` replaced by the record read from that Hugging Face config."""
    from costmodels.hf_config import HFConfigError, read_hf_config
    from placement.core.instance.schema import ModelConfig

    ref = data.get("model")
    if not (isinstance(ref, dict) and "config" in ref):
        return data
    try:
        want = ModelConfig.model_validate(ref)
    except ValidationError as e:
        err = input_error_of(e, source)
        raise InputError(err.detail, file=source, field=f"model.{err.field}" if err.field else "model") from None
    path = _relative_to(source, want.config)
    try:
        spec, _ = read_hf_config(path, name=want.name)
    except HFConfigError as e:
        raise InputError(f"{e} (the model.config of {source})", file=str(path), field=e.key or None) from None
    return {**data, "model": spec.model_dump(mode="json", exclude_defaults=True)}


def parse_instance(data: Any, source: str = "<instance>") -> Instance:
    """Validate an already-parsed document (dict) as an instance."""
    if data is None:
        raise InputError("the document is empty; expected a mapping of instance fields "
                         "(name, model, workload, hardware)", file=source)
    if not isinstance(data, dict):
        raise InputError(f"expected a mapping of instance fields at the top level, got {type(data).__name__}", file=source)
    data = _with_model_config(_with_overlay(data, source), source)
    reject_non_finite(data, source, "", [0])
    try:
        inst = Instance.model_validate(data)
    except ValidationError as e:
        err = input_error_of(e, source)
        more = "".join(f"\n  and {f}: {why}" for f, why in _catalogue_errors(data) if f"{f}:" not in err.detail)
        raise InputError(err.detail + more, file=source, field=err.field) from None
    cross_check(inst, source)
    return inst


def _catalogue_errors(data: dict) -> Iterator[tuple[str, str]]:
    """(field, problem) for the references to the catalogue a document that failed its schema still shows —
    unknown chips, an unknown model, undeclared switches — so one run reports them with the schema's errors."""
    hw = data.get("hardware") if isinstance(data.get("hardware"), dict) else {}
    # Names are read only where they are strings: anything else is the schema's error already.
    own = {c.get("name") for c in hw.get("chips") or [] if isinstance(c, dict) and isinstance(c.get("name"), str)}
    known = set(load_chip_catalog()) | own
    listed = hw.get("switches") if isinstance(hw.get("switches"), list) else []
    switches = {s for s in listed if isinstance(s, str)}
    for i, d in enumerate(hw.get("domains") or []):
        if not isinstance(d, dict):
            continue
        if isinstance(d.get("chip"), str) and d["chip"] not in known:
            yield f"hardware.domains[{i}].chip", f"unknown chip {d['chip']!r} (placement catalog chips lists them)"
        if isinstance(d.get("switch"), str) and d["switch"] not in switches:
            yield f"hardware.domains[{i}].switch", f"switch {d['switch']!r} is not declared in hardware.switches"
    model = data.get("model")
    if isinstance(model, str) and model.strip().lower() not in model_aliases():
        yield "model", f"unknown model {model!r} (placement catalog models lists them)"


def with_prices(inst: Instance, prices: str | None) -> Instance:
    """``inst`` priced with the chip price set ``prices`` (``--prices``; None: as it is).

    Examples
    --------
    >>> inst = load_instance("instances/melange-toy.yaml")
    >>> with_prices(inst, "on-demand").prices, with_prices(inst, None) is inst
    ('on-demand', True)
    >>> with_prices(inst, "spot")
    Traceback (most recent call last):
    ...
    placement.core.instance.errors.InputError: --prices: unknown price set 'spot'; expected one of tco, on-demand (topology/catalog/prices.yaml)
    """
    if prices is None or prices == inst.prices:
        return inst
    prices = str(prices)  # the CLI's enum member, as the plain name the instance keeps
    sets = load_price_sets()
    if prices not in sets:
        raise InputError(f"unknown price set {prices!r}; expected one of {', '.join(sets)} "
                         "(topology/catalog/prices.yaml)", field="--prices")
    return inst.model_copy(update={"prices": prices})


def chips_of(inst: Instance) -> dict[str, ChipSpec]:
    """Catalogue chips at the instance's price set (``prices``), plus the instance's own (which override
    same-named ones), then the calibration overlay's factors on the chips it lists.

    Raises
    ------
    InputError
        A domain group runs a catalogue chip the price set does not price, at no price of its own.
    """
    chips = priced(load_chip_catalog(), inst.prices)
    own = {c.name for c in inst.hardware.chips}
    table = load_price_sets()[inst.prices]
    for i, d in enumerate(inst.hardware.domains):
        if table.prices and d.chip not in own and d.usd_per_hour_per_chip is None and table.price(d.chip) is None:
            raise InputError(f"price set {inst.prices!r} has no price for chip {d.chip!r} "
                             "(topology/catalog/prices.yaml); give the group usd_per_hour_per_chip or use the "
                             f"default set {DEFAULT_PRICES!r}", field=f"hardware.domains[{i}].chip")
    chips.update({c.name: c for c in inst.hardware.chips})
    return overlay_chips(chips, inst.calibration)


def model_aliases() -> dict[str, str]:
    """Lower-cased catalogue names, Hugging Face ids and their repository names (without the publisher and the
    ``-instruct``/``-it`` and precision suffixes) -> catalogue name.

    Examples
    --------
    >>> model_aliases()["meta-llama/llama-3.1-70b-instruct"], model_aliases()["llama-3.1-70b"]
    ('llama-3.1-70b', 'llama-3.1-70b')
    >>> model_aliases()["llama-3.3-70b"]  # served by the Llama-3.1-70B record (same architecture)
    'llama-3.1-70b'
    """
    out = {}
    models = load_model_catalog()
    for name in models:
        out[name.lower()] = name
    for name, spec in models.items():
        for hf in spec.hf_ids:
            out.setdefault(hf.lower(), name)
            repo = hf.split("/")[-1].lower()
            out.setdefault(repo, name)
            while (short := re.sub(r"-(instruct|it|fp8|nvfp4|fp4|bf16)$", "", repo)) != repo:
                out.setdefault(short, name)
                repo = short
    return out


def _resolve_model(ref: str | ModelSpec, source: str, field: str) -> ModelSpec:
    """A catalogue model by name or Hugging Face id, case-insensitive, or the instance's own record."""
    if isinstance(ref, ModelSpec):
        return ref
    models = load_model_catalog()
    name = model_aliases().get(ref.strip().lower())
    if name is None:
        guess = difflib.get_close_matches(ref.lower(), list(model_aliases()), n=1, cutoff=0.6)
        hint = f"did you mean {guess[0]!r}? " if guess else ""
        raise InputError(f"unknown model {ref!r}; {hint}expected one of {', '.join(sorted(models))}, a Hugging "
                         "Face id of one (placement catalog models) or a full model record",
                         file=source, field=field)
    return models[name]


def model_of(inst: Instance, source: str = "<instance>") -> ModelSpec:
    return _resolve_model(inst.model, source, "model")


def draft_model_of(inst: Instance, source: str = "<instance>") -> ModelSpec | None:
    return None if inst.draft is None else _resolve_model(inst.draft.model, source, "draft.model")


def _in_size_chain(chips: int, domain: int) -> bool:
    """Whether a replica of ``chips`` chips is one of the sizes candidates use on ``domain``-chip domains.

    Those sizes (powers of two dividing the domain, the domain, then the domain doubling, see
    :func:`placement.modes.layouts.replica_sizes`) form a divisibility chain, which the solver
    needs to pack replicas exactly; any other size breaks it.
    """
    def power_of_two(n: int) -> bool:
        return n >= 1 and n & (n - 1) == 0

    if chips <= domain:
        return chips == domain or (domain % chips == 0 and power_of_two(chips))
    return chips % domain == 0 and power_of_two(chips // domain)


def _check_model_sizes(model: ModelSpec, source: str, field: str) -> Iterator[InputError]:
    """Model sizes the cost models can multiply without overflow, and sliding-window layers within the layers."""
    def walk(node: Any, path: str) -> Iterator[InputError]:
        if isinstance(node, bool):
            return
        if isinstance(node, int) and node > MAX_MODEL_SIZE:
            shown = f"{node:,}" if node < 10**20 else f"an integer of {len(str(node)):,} digits"
            yield InputError(f"{shown} is not a plausible model size; expected at most {MAX_MODEL_SIZE:,}",
                             file=source, field=path)
        if isinstance(node, dict):
            for k, v in node.items():
                yield from walk(v, f"{path}.{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                yield from walk(v, f"{path}[{i}]")

    yield from walk(model.model_dump(exclude={"sources", "estimates", "published_total_params"}), field)
    if model.attention.sliding_window_layers > model.attention_layers:
        yield InputError(f"{model.attention.sliding_window_layers} sliding-window layers in a model of "
                         f"{model.attention_layers} {'attention ' if model.linear_mixer else ''}layers; expected at "
                         f"most {model.attention_layers}",
                         file=source,
                         field=f"{field}.attention.sliding_window_layers")


def _check_rates(inst: Instance, source: str) -> Iterator[InputError]:
    """Rates far enough from the smallest and largest doubles for the cost models and the verifier."""
    for i, c in enumerate(inst.workload.classes):
        if c.rate_rps < MIN_RATE_RPS:
            yield InputError(f"rate {c.rate_rps:.3g} req/s is below {MIN_RATE_RPS:g} req/s (one request in "
                             "~30,000 years); expected at least that", file=source,
                             field=f"workload.classes[{i}].rate_rps")
    seen: dict[tuple[str, str, int], tuple[int, float]] = {}
    for i, m in enumerate(inst.measured_capacity):
        f = f"measured_capacity[{i}].max_rps_per_replica"
        if not MIN_RATE_RPS <= m.max_rps_per_replica <= MAX_MEASURED_RPS:
            yield InputError(f"{m.max_rps_per_replica:.3g} req/s per replica; expected {MIN_RATE_RPS:g} to "
                             f"{MAX_MEASURED_RPS:g}", file=source, field=f)
        if m.chips > MAX_MODEL_SIZE:
            yield InputError(f"{m.chips if m.chips < 10**20 else 'over 10^20'} chips per replica; expected at most "
                             f"{MAX_MODEL_SIZE:,}", file=source, field=f"measured_capacity[{i}].chips")
        key = (m.chip, m.traffic_class, m.chips)
        if key in seen and seen[key][1] != m.max_rps_per_replica:
            j, other = seen[key]
            yield InputError(f"{m.max_rps_per_replica:g} req/s conflicts with {other:g} req/s in "
                             f"measured_capacity[{j}] for the same chip, class and chips; expected one value",
                             file=source, field=f)
        seen.setdefault(key, (i, m.max_rps_per_replica))


def cross_check(inst: Instance, source: str) -> None:
    """Checks that need the catalogue or several fields at once, every problem found reported at once: the
    first is the error's field and message, the others follow on their own lines (as for the schema's)."""
    errors = list(_cross_errors(inst, source))
    if errors:
        first = errors[0]
        msg = first.detail + "".join(f"\n  and {e.field or '(top level)'}: {e.detail}" for e in errors[1:])
        raise InputError(msg, file=source, field=first.field)


def _resolved(resolve: Callable[[], Any], errors: list[InputError]) -> Any:
    """``resolve()``, or None with its InputError kept in ``errors``."""
    try:
        return resolve()
    except InputError as e:
        errors.append(e)
        return None


def _cross_errors(inst: Instance, source: str) -> Iterator[InputError]:
    chips = chips_of(inst)
    found: list[InputError] = []
    model = _resolved(lambda: model_of(inst, source), found)
    draft = _resolved(lambda: draft_model_of(inst, source), found)
    yield from found
    if model is not None:
        yield from _check_model_sizes(model, source, "model")
    if draft is not None:
        yield from _check_model_sizes(draft, source, "draft.model")
    yield from _check_rates(inst, source)
    if inst.calibration is not None:
        for name in sorted(set(inst.calibration.chips) - set(chips)):
            yield InputError(f"the overlay {inst.calibration.source!r} calibrates chip {name!r}, which is neither in "
                             "the catalogue nor under hardware.chips", file=source, field=f"calibration.chips.{name}")
    hw = inst.hardware
    switches = set(hw.switches)
    if len(switches) != len(hw.switches):
        yield InputError("duplicate switch name", file=source, field="hardware.switches")
    clash = switches & {d.name for d in hw.domains}
    if clash:
        yield InputError(f"name {min(clash)!r} is both a switch and a domain group; names must be unique",
                         file=source, field="hardware.switches")
    for i, d in enumerate(hw.domains):
        f = f"hardware.domains[{i}]"
        if d.switch is not None and d.switch not in switches:
            yield InputError(f"switch {d.switch!r} is not declared in hardware.switches", file=source,
                             field=f"{f}.switch")
        if d.chip not in chips:
            yield InputError(f"unknown chip {d.chip!r}; expected one of {', '.join(sorted(chips))} "
                             "or a record under hardware.chips", file=source, field=f"{f}.chip")
            continue
        if not inst.only_measured and not chips[d.chip].runs(inst.precision.weights):
            yield InputError(f"chip {d.chip!r} has no {inst.precision.weights} rate (its flops_per_s lists "
                             f"{', '.join(sorted(chips[d.chip].flops_per_s))}); set precision.weights to one of "
                             "those or give the chip that rate", file=source, field=f"{f}.chip")
        limit = chips[d.chip].scale_up_domain_chips
        if d.chips_per_domain is not None and d.chips_per_domain > limit:
            yield InputError(f"{d.chips_per_domain} chips per domain exceeds the largest {d.chip} scale-up "
                             f"domain ({limit})", file=source, field=f"{f}.chips_per_domain")
    for i, link in enumerate(hw.links):
        for end in ("source", "target"):
            name = getattr(link, end)
            if name not in switches:
                yield InputError(f"link end {name!r} is not a declared switch (links join switches; "
                                 "domain groups attach with their 'switch' field)", file=source,
                                 field=f"hardware.links[{i}].{end}")
        if link.source == link.target:
            yield InputError("a link must join two different switches", file=source, field=f"hardware.links[{i}]")
    classes = {c.name for c in inst.workload.classes}
    fleet_chips = {d.chip for d in hw.domains}
    for i, m in enumerate(inst.measured_capacity):
        f = f"measured_capacity[{i}]"
        if m.traffic_class not in classes:
            yield InputError(f"unknown class {m.traffic_class!r}; expected one of {', '.join(sorted(classes))}",
                             file=source, field=f"{f}.class")
        if m.chip not in fleet_chips:
            yield InputError(f"chip {m.chip!r} has no domain group in hardware.domains", file=source,
                             field=f"{f}.chip")
        for d in hw.domains:
            if d.chip != m.chip or d.chip not in chips:
                continue
            size = d.chips_per_domain or chips[d.chip].scale_up_domain_chips
            if not _in_size_chain(m.chips, size):
                yield InputError(
                    f"{m.chips} chips per replica do not pack into {m.chip} domains of {size} chips "
                    f"(domain group {d.name!r}); expected a power of two dividing {size}, or {size} times a "
                    "power of two", file=source, field=f"{f}.chips")
    seen_tables: dict[tuple, int] = {}
    for i, m in enumerate(inst.measured_step_time):
        f = f"measured_step_time[{i}]"
        if m.chip not in fleet_chips:
            yield InputError(f"chip {m.chip!r} has no domain group in hardware.domains", file=source,
                             field=f"{f}.chip")
        if m.model is not None and model is not None and m.model != model.name:
            yield InputError(f"measured with model {m.model!r}, but the instance serves {model.name!r}; "
                             "a step table holds for the model it was measured with", file=source, field=f"{f}.model")
        key = (m.chip, m.stage, m.tp, m.ep, m.pp)
        if key in seen_tables:
            yield InputError(f"a second {m.stage} table for {m.chip} at tp={m.tp} ep={m.ep} pp={m.pp} (the first is "
                             f"measured_step_time[{seen_tables[key]}]); expected one table per chip, stage and layout",
                             file=source, field=f)
        seen_tables[key] = i
    if inst.only_measured and not inst.measured_capacity:
        yield InputError("only_measured is true but measured_capacity is empty", file=source,
                         field="only_measured")
