"""Reading instance files into validated :class:`~placement.core.schema.Instance` records.

Every problem is reported as an :class:`~placement.core.errors.InputError` naming the
file, the field (a dotted path such as ``workload.classes[1].tpot_ms``) and what
was expected: schema errors from pydantic, then cross-references (chips, models,
switches, measured tables) that a schema alone cannot see.

Examples
--------
>>> from placement.core.loading import parse_instance
>>> parse_instance({"name": "x"}, source="x.yaml")
Traceback (most recent call last):
...
placement.core.errors.InputError: x.yaml: model: required field is missing
  and workload: required field is missing
  and hardware: required field is missing
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from costmodels.models import ModelSpec, load_model_catalog
from placement.core.errors import InputError
from placement.core.schema import Instance
from topology.chips import ChipSpec, load_chip_catalog

__all__ = ["chips_of", "describe_error", "draft_model_of", "load_instance", "model_aliases", "model_of",
           "parse_instance", "read_bounded", "read_document"]

#: Instance files larger than this are refused before parsing (absurd sizes).
MAX_FILE_BYTES = 20_000_000
#: Values (scalars, lists, mappings) a document may expand to: YAML aliases can make a small
#: file expand exponentially ("billion laughs"); a real instance has a few thousand.
MAX_VALUES = 250_000
#: Deepest nesting accepted (an instance nests about 6 levels).
MAX_DEPTH = 64
#: Longest integer literal read as a number: Python refuses to convert longer ones at all, with a
#: ValueError that names no field; they are reported with their field instead. (Shorter ones meet
#: the fields' own bounds.)
MAX_INT_DIGITS = 4_300
#: Smallest positive request rate (req/s) of a class or a measured replica: one request in ~30,000
#: years. The verifier counts loads at or below this as not served, and rates near the smallest
#: doubles (1e-320) overflow the cost models' reciprocals.
MIN_RATE_RPS = 1e-12
#: Largest measured requests/s per replica (a class asks for at most 1e7 req/s).
MAX_MEASURED_RPS = 1e9
#: Largest integer size in a model record (layers, hidden size, heads, head dim, vocabulary,
#: experts): the largest published models are ~1e5 wide and have ~1e3 layers.
MAX_MODEL_SIZE = 10_000_000


class _LongInt:
    """An integer literal of more than :data:`MAX_INT_DIGITS` digits, reported with its field by
    :func:`_reject_non_finite` instead of being converted."""

    def __init__(self, text: str) -> None:
        self.digits = sum(ch.isdigit() for ch in text)


def _int_literal(text: str):
    return _LongInt(text) if len(text.lstrip("+-")) > MAX_INT_DIGITS else int(text)


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key repeated in one mapping (PyYAML keeps the last)."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # "<<: *base" may legitimately be overridden
                key = self.construct_object(key_node, deep=deep)
                try:
                    duplicate = key in seen
                    seen.add(key)
                except TypeError:
                    continue  # unhashable keys: the base class reports them
                if duplicate:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r}; each key may appear once in a mapping",
                        key_node.start_mark)
        return yaml.constructor.SafeConstructor.construct_mapping(self, node, deep=deep)


# YAML 1.2 core-schema scalars: PyYAML resolves YAML 1.1, where ``1:30`` is the
# integer 90 (base 60), ``yes``/``on`` are booleans and ``1_000`` is a number.
# Here only true/false are booleans and numbers are written plainly; anything
# else stays a string, which the schema then refuses where it wants a number.
_CORE_RESOLVERS = {
    "tag:yaml.org,2002:bool": (re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), "tTfF"),
    "tag:yaml.org,2002:int": (re.compile(r"^(?:[-+]?[0-9]+|0x[0-9a-fA-F]+)$"), "-+0123456789"),
    "tag:yaml.org,2002:float": (
        re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
        "-+.0123456789"),
}
_UniqueKeyLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in _CORE_RESOLVERS]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
for _tag, (_rx, _first) in _CORE_RESOLVERS.items():
    _UniqueKeyLoader.add_implicit_resolver(_tag, _rx, list(_first))


def _construct_int(loader: yaml.SafeLoader, node: yaml.Node):
    text = loader.construct_scalar(node).replace("_", "")
    if len(text.lstrip("+-")) > MAX_INT_DIGITS and not text.lstrip("+-").startswith("0x"):
        return _LongInt(text)
    return yaml.SafeLoader.construct_yaml_int(loader, node)


_UniqueKeyLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


class _FastUniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """:class:`_UniqueKeyLoader` on libyaml's parser (~6× faster on a 10,000-domain instance). Its error
    messages say less (a tab is "a character that cannot start any token"), so a document it refuses is
    read again by :class:`_UniqueKeyLoader`, whose verdict and message stand."""

    construct_mapping = _UniqueKeyLoader.construct_mapping
    yaml_implicit_resolvers = _UniqueKeyLoader.yaml_implicit_resolvers
    yaml_constructors = _UniqueKeyLoader.yaml_constructors


class _DuplicateJSONKey(ValueError):
    pass


def _unique_json_object(pairs: list) -> dict:
    out = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateJSONKey(f"duplicate key {k!r}; each key may appear once in an object")
        out[k] = v
    return out


def read_bounded(path: str | Path, cap_bytes: int) -> bytes:
    """The bytes of ``path``, refusing more than ``cap_bytes``.

    It reads at most ``cap_bytes + 1`` bytes whatever the file is: a device
    (``/dev/zero``), a pipe or ``/proc`` file reports a size of 0, so the size
    must be counted, not asked for.

    Examples
    --------
    >>> len(read_bounded("/dev/null", 10))
    0
    >>> read_bounded("/dev/zero", 1000)
    Traceback (most recent call last):
    ...
    placement.core.errors.InputError: /dev/zero: file is larger than 1000 bytes; expected at most 1000
    """
    try:
        with open(path, "rb") as f:
            data = f.read(cap_bytes + 1)
    except OSError as e:
        raise InputError(f"cannot read file: {e.strerror or e}", file=str(path)) from None
    if len(data) > cap_bytes:
        raise InputError(f"file is larger than {cap_bytes} bytes; expected at most {cap_bytes}", file=str(path))
    return data


def read_document(path: str | Path) -> Any:
    """Parse a YAML or JSON file (by suffix; YAML otherwise) with clear errors."""
    p = Path(path)
    if p.is_dir():
        raise InputError("expected a file, got a directory", file=str(p))
    data = read_bounded(p, MAX_FILE_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"cannot read file as UTF-8 text: {e}", file=str(p)) from None
    try:
        if p.suffix.lower() == ".json":
            return json.loads(text, object_pairs_hook=_unique_json_object, parse_int=_int_literal)
        return _parse_yaml(text)
    except RecursionError:
        raise InputError(f"nesting is too deep to be an instance (expected at most {MAX_DEPTH} levels)",
                         file=str(p)) from None
    except _DuplicateJSONKey as e:
        raise InputError(f"invalid JSON: {e}", file=str(p)) from None
    except json.JSONDecodeError as e:
        raise InputError(f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}", file=str(p)) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e)
        raise InputError(f"invalid YAML{where}: {problem}", file=str(p)) from None


def _parse_yaml(text: str) -> Any:
    """The document of ``text`` by :class:`_FastUniqueKeyLoader`, or, if it refuses it, by
    :class:`_UniqueKeyLoader` (which raises the error users read, or reads what libyaml would not).

    Examples
    --------
    >>> _parse_yaml("a: 1:30\\nb: yes\\n")  # YAML 1.2 core scalars
    {'a': '1:30', 'b': 'yes'}
    """
    try:
        return yaml.load(text, Loader=_FastUniqueKeyLoader)
    except yaml.YAMLError:
        return yaml.load(text, Loader=_UniqueKeyLoader)


def load_instance(path: str | Path) -> Instance:
    """Read, validate and cross-check an instance file.

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
    placement.core.errors.InputError: no-such-file.yaml: cannot read file: No such file or directory
    """
    return parse_instance(read_document(path), source=str(path))


def parse_instance(data: Any, source: str = "<instance>") -> Instance:
    """Validate an already-parsed document (dict) as an instance."""
    if data is None:
        raise InputError("the document is empty; expected a mapping of instance fields "
                         "(name, model, workload, hardware)", file=source)
    if not isinstance(data, dict):
        raise InputError(f"expected a mapping of instance fields at the top level, got {type(data).__name__}", file=source)
    _reject_non_finite(data, source, "", [0])
    try:
        inst = Instance.model_validate(data)
    except ValidationError as e:
        raise _input_error(e, source) from None
    cross_check(inst, source)
    return inst


def _reject_non_finite(node: Any, source: str, path: str, count: list[int], depth: int = 0) -> None:
    # YAML reads .nan/.inf as floats; no field of an instance accepts them. The walk also bounds
    # the document's expanded size and depth (YAML aliases, absurd nesting) before pydantic sees it.
    count[0] += 1
    if count[0] > MAX_VALUES:
        raise InputError(f"the document expands to more than {MAX_VALUES:,} values (YAML aliases?); "
                         "expected an instance of plausible size", file=source)
    if depth > MAX_DEPTH:
        raise InputError(f"nesting is too deep to be an instance (expected at most {MAX_DEPTH} levels)",
                         file=source, field=path or None)
    if isinstance(node, float) and not math.isfinite(node):
        raise InputError(f"expected a finite number, got {node}", file=source, field=path or None)
    if isinstance(node, _LongInt):
        raise InputError(f"an integer of {node.digits:,} digits; no field takes more than a few",
                         file=source, field=path or None)
    if isinstance(node, dict):
        for k, v in node.items():
            _reject_non_finite(v, source, f"{path}.{k}" if path else str(k), count, depth + 1)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _reject_non_finite(v, source, f"{path}[{i}]", count, depth + 1)


def _field_path(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("str", "ModelSpec", "function-after[_every_number_has_a_source(), ChipSpec]"):
            continue  # union branch labels add nothing a user can act on
        else:
            out += f".{part}" if out else str(part)
    return out


_FRIENDLY = {
    "missing": "required field is missing",
    "extra_forbidden": "unknown field (misspelt?); remove it or check the spelling",
}


def describe_error(err: dict, errors: list[dict]) -> str:
    """One pydantic error as a sentence: what is wrong and what was given."""
    msg = _FRIENDLY.get(err["type"])
    if err["type"] == "extra_forbidden":
        parent = tuple(err["loc"][:-1])
        missing = [str(other["loc"][-1]) for other in errors
                   if other["type"] == "missing" and tuple(other["loc"][:-1]) == parent]
        guess = difflib.get_close_matches(str(err["loc"][-1]), missing, n=1, cutoff=0.5)
        if guess:
            msg = f"unknown field (misspelt?); did you mean {guess[0]!r}, which is missing?"
    if msg is None:
        got = err.get("input")
        got_s = repr(got) if not isinstance(got, (dict, list)) else type(got).__name__
        text = err["msg"][:1].lower() + err["msg"][1:]  # lower-case the sentence, not a quoted pattern
        text = text.removeprefix("value error, ")
        # A validator's own sentence, or a length bound, already says what it got.
        msg = text if err["type"] in ("value_error", "too_short", "too_long") else f"{text}; got {got_s}"
    return msg


def _input_error(e: ValidationError, source: str) -> InputError:
    """Every problem pydantic found, the most useful first (its field is the error's), the others on their own
    lines, each with its field."""
    errors = e.errors(include_url=False)
    # A str-or-record union reports both branches; the string branch's complaint is the useful one.
    first = errors[0]
    for err in errors:
        if err["type"] in _FRIENDLY or "str" not in err["loc"]:
            first = err
            break
    # A misspelt key shows up as an unknown field plus a missing one: the unknown one is the cause.
    for err in errors:
        if err["type"] == "extra_forbidden":
            first = err
            break
    field = _field_path(tuple(first["loc"]))
    msg = describe_error(first, errors)
    seen = {field}
    explained = {tuple(err["loc"][:-1]) for err in errors if err["type"] == "extra_forbidden"}
    for err in errors:
        where = _field_path(tuple(err["loc"]))
        if err is first or where in seen:
            continue  # the other branches of a union, at a field already reported
        if err["type"] == "missing" and tuple(err["loc"][:-1]) in explained:
            continue  # the misspelt key's missing twin
        seen.add(where)
        msg += f"\n  and {where or '(top level)'}: {describe_error(err, errors)}"
    return InputError(msg, file=source, field=field or None)


def chips_of(inst: Instance) -> dict[str, ChipSpec]:
    """Catalogue chips plus the instance's own (which override same-named ones)."""
    chips = load_chip_catalog()
    chips.update({c.name: c for c in inst.hardware.chips})
    return chips


def model_aliases() -> dict[str, str]:
    """Lower-cased catalogue names and Hugging Face ids -> catalogue name.

    Examples
    --------
    >>> model_aliases()["meta-llama/llama-3.1-70b-instruct"], model_aliases()["llama-3.1-70b"]
    ('llama-3.1-70b', 'llama-3.1-70b')
    """
    out = {}
    for name, spec in load_model_catalog().items():
        out[name.lower()] = name
        for hf in spec.hf_ids:
            out.setdefault(hf.lower(), name)
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
    if model.attention.sliding_window_layers > model.layers:
        yield InputError(f"{model.attention.sliding_window_layers} sliding-window layers in a model of "
                         f"{model.layers} layers; expected at most {model.layers}", file=source,
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
        if d.switch is not None and d.switch not in switches:
            yield InputError(f"switch {d.switch!r} is not declared in hardware.switches", file=source,
                             field=f"{f}.switch")
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
