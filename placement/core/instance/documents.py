"""Reading YAML and JSON documents safely, and saying what is wrong with them.

Every input file (instances, calibration overlays, measurements, profiles) is read here:
bounded in size before parsing, YAML 1.2 core scalars with duplicate keys refused, JSON
with duplicate keys and absurd integers refused, nothing executed. A pydantic validation
error becomes one :class:`~placement.core.instance.errors.InputError` naming the file, the field
(a dotted path such as ``workload.classes[1].tpot_ms``) and what was expected.

Examples
--------
>>> read_bounded("/dev/null", 10)
b''
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import ValidationError

from placement.core.instance.errors import InputError

__all__ = ["MAX_FILE_BYTES", "describe_error", "input_error_of", "parse_document", "read_bounded", "read_document",
           "read_record", "read_text", "reject_non_finite"]

M = TypeVar("M")

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
    placement.core.instance.errors.InputError: /dev/zero: file is larger than 1000 bytes; expected at most 1000
    """
    try:
        with open(path, "rb") as f:
            data = f.read(cap_bytes + 1)
    except OSError as e:
        raise InputError(f"cannot read file: {e.strerror or e}", file=str(path)) from None
    if len(data) > cap_bytes:
        raise InputError(f"file is larger than {cap_bytes} bytes; expected at most {cap_bytes}", file=str(path))
    return data


def read_text(path: str | Path) -> tuple[str, bytes]:
    """(UTF-8 text, raw bytes) of a file, bounded by :data:`MAX_FILE_BYTES`; a directory or bad UTF-8 is an
    input error naming the file."""
    p = Path(path)
    if p.is_dir():
        raise InputError("expected a file, got a directory", file=str(p))
    data = read_bounded(p, MAX_FILE_BYTES)
    try:
        return data.decode("utf-8"), data
    except UnicodeDecodeError as e:
        raise InputError(f"cannot read file as UTF-8 text: {e}", file=str(p)) from None


def read_document(path: str | Path) -> Any:
    """Parse a YAML or JSON file (by suffix; YAML otherwise) with clear errors."""
    return parse_document(read_text(path)[0], path)


def parse_document(text: str, path: str | Path) -> Any:
    """Parse ``text`` as the file ``path`` names it: JSON by its suffix, YAML otherwise."""
    p = Path(path)
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


def read_record(path: str | Path, record: type[M], expected: str, *, marker: str | None = None,
                extra: Callable[[bytes], dict] | None = None) -> M:
    """A file of one ``record``: parsed, its numbers finite, validated with errors naming the file and field.

    ``expected`` says what the file should be (the error when it is not a mapping, or lacks the ``marker``
    key); ``extra(raw bytes)`` adds fields the file itself does not hold (its name, its hash).
    """
    text, raw = read_text(path)
    doc = parse_document(text, path)
    if not isinstance(doc, dict) or (marker is not None and marker not in doc):
        raise InputError(f"expected {expected}", file=str(path))
    reject_non_finite(doc, str(path), "", [0])
    try:
        return record.model_validate({**doc, **(extra(raw) if extra else {})})
    except ValidationError as e:
        raise input_error_of(e, str(path)) from None


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


def reject_non_finite(node: Any, source: str, path: str, count: list[int], depth: int = 0) -> None:
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
            reject_non_finite(v, source, f"{path}.{k}" if path else str(k), count, depth + 1)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            reject_non_finite(v, source, f"{path}[{i}]", count, depth + 1)


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


def input_error_of(e: ValidationError, source: str) -> InputError:
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
