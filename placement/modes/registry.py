"""The registry of serving modes and their replica kinds, and the validators that read it.

The built-in modes are registered by :mod:`placement.modes` (importing this module runs that package
first); anything that needs only the names — the instance schema's ``modes``, a configuration's
``kind``, a plan pool's ``stage``, the evaluation of a configuration by its kind — reads them here.

Examples
--------
>>> from placement.modes.registry import MODES, STAGE_OF_KIND, options
>>> list(MODES), options()
(['aggregated', 'pd', 'pd+draft', 'pd-af'], ('aggregated', 'pd', 'pd-af'))
>>> STAGE_OF_KIND["decode-af"]
('decode-attention', 'decode-ffn')
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from pydantic_core import PydanticCustomError

from placement.modes.base import PoolKind, ServingMode
from placement.modes.ids import SEPARATOR

__all__ = ["MODES", "STAGE_OF_KIND", "check_kind", "check_option", "check_stage", "colors", "get_mode", "labels",
           "one_of", "options", "pool_kind", "register", "stages"]

#: Every registered mode by name, in registration order.
MODES: dict[str, ServingMode] = {}


def register(mode: ServingMode) -> ServingMode:
    """Add ``mode`` to the registry (after the modes already there) and return it.

    Its name must be new and free of ``|``; a replica kind it shares with a
    registered mode must be the same kind.
    """
    if not mode.name or SEPARATOR in mode.name:
        raise ValueError(f"mode name {mode.name!r} must be non-empty and free of {SEPARATOR!r}")
    if mode.name in MODES:
        raise ValueError(f"mode {mode.name!r} is already registered")
    known = _kinds()
    for kind in mode.kinds:
        if kind.name in known and known[kind.name] is not kind:
            raise ValueError(f"mode {mode.name!r} redefines the replica kind {kind.name!r}")
    MODES[mode.name] = mode
    return mode


def get_mode(name: str) -> ServingMode:
    """The registered mode called ``name``."""
    try:
        return MODES[name]
    except KeyError:
        raise KeyError(f"unknown serving mode {name!r}; expected one of {', '.join(MODES)}") from None


def options() -> tuple[str, ...]:
    """The entries an instance's ``modes`` may list, in registration order."""
    return tuple(dict.fromkeys(m.option for m in MODES.values()))


#: The kinds of the registered modes, and the modes they were read from (the registry may change).
_KINDS: list = [(), {}]


def _kinds() -> dict[str, PoolKind]:
    """Replica kind name -> kind, over the registered modes (read again when the registry changed:
    every configuration record and every evaluation asks, millions of times in a large generation)."""
    modes = tuple(MODES.values())
    if modes != _KINDS[0]:
        _KINDS[:] = [modes, {k.name: k for m in modes for k in m.kinds}]
    return _KINDS[1]


def pool_kind(name: str) -> PoolKind:
    """The replica kind called ``name``, from the mode that defines it."""
    try:
        return _kinds()[name]
    except KeyError:
        raise KeyError(f"unknown replica kind {name!r}; expected one of {', '.join(_kinds())}") from None


def stages() -> tuple[str, ...]:
    """Every stage a part of a replica may run, in registration order."""
    return tuple(dict.fromkeys(s for k in _kinds().values() for s in k.stages if s is not None))


class _StageOfKind(Mapping):
    """Replica kind -> (stage of its main part, stage of its partner part or ``None``), read live."""

    def __getitem__(self, kind: str) -> tuple[str, str | None]:
        return _kinds()[kind].stages

    def __iter__(self) -> Iterator[str]:
        return iter(_kinds())

    def __len__(self) -> int:
        return len(_kinds())


#: The stage each part of a replica kind runs: (main part, partner part).
STAGE_OF_KIND: Mapping[str, tuple[str, str | None]] = _StageOfKind()


def labels() -> dict[str, str]:
    """Mode name -> label shown in tables and charts."""
    return {m.name: m.label for m in MODES.values()}


def colors() -> dict[str, str]:
    """Mode label -> matplotlib colour of its series in charts."""
    return {m.label: m.color for m in MODES.values()}


def one_of(value: str, allowed: tuple[str, ...]) -> str:
    """``value`` if allowed, else pydantic's error for a literal, naming what is allowed."""
    if value in allowed:
        return value
    quoted = [repr(a) for a in allowed]
    expected = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
    raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})


def check_option(value: str) -> str:
    """Validator of an instance's ``modes`` entry."""
    return one_of(value, options())


def check_kind(value: str) -> str:
    """Validator of a pool configuration's ``kind``."""
    return one_of(value, tuple(_kinds()))


def check_stage(value: str) -> str:
    """Validator of a plan pool's ``stage``."""
    return one_of(value, stages())
