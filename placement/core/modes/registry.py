"""The registry of serving modes and their replica kinds, and the validators that read it.

Anything that needs the modes by name — the instance schema's ``modes``, a configuration's ``kind``, a
plan pool's ``stage``, the evaluation of a configuration by its kind — reads them here. The registry
fills itself on its first lookup, in this order (the order routes follow and plans show):

1. the built-in modes, :data:`BUILTIN_MODES` in order: each module is imported by name
   (:func:`importlib.import_module`) and its ``MODE`` registered — aggregated, pd, pd+draft, pd-af;
2. the modes installed packages declare in the entry-point group :data:`ENTRY_POINT_GROUP`
   (``[project.entry-points."placement.modes"]`` ``kv-tier = "my_package.kv_tier:MODE"``), each entry
   point naming a :class:`~placement.core.modes.base.ServingMode`, in order of the entry points' names
   (then values): the order packages are found in depends on the environment, their names do not;
3. modes registered at run time by :func:`register`, after those.

So a third-party package registers a mode without touching this package, and core names no mode module
in an import (the modes import core; ``tests/test_architecture.py`` checks the arrows).

Examples
--------
>>> from placement.core.modes.registry import MODES, STAGE_OF_KIND, options
>>> list(MODES), options()
(['aggregated', 'pd', 'pd+draft', 'pd-af'], ('aggregated', 'pd', 'pd-af'))
>>> STAGE_OF_KIND["decode-af"]
('decode-attention', 'decode-ffn')
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterator, Mapping
from importlib.metadata import entry_points

from pydantic_core import PydanticCustomError

from placement.core.modes.base import PoolKind, ServingMode
from placement.core.modes.ids import SEPARATOR

__all__ = ["BUILTIN_MODES", "ENTRY_POINT_GROUP", "MODES", "STAGE_OF_KIND", "check_kind", "check_option",
           "check_stage", "colors", "get_mode", "labels", "one_of", "options", "pool_kind", "register", "stages",
           "unregister"]

#: The built-in modes' modules, each defining ``MODE``, registered first and in this order.
BUILTIN_MODES = ("placement.modes.aggregated", "placement.modes.pd", "placement.modes.pd_draft",
                 "placement.modes.pd_af")
#: The entry-point group through which an installed package declares a serving mode (``name = module:MODE``).
ENTRY_POINT_GROUP = "placement.modes"

#: Every registered mode by name, in registration order (read through :data:`MODES`).
_MODES: dict[str, ServingMode] = {}
#: [filled, filling]: the built-in and entry-point modes registered; being registered (by this thread,
#: which holds :data:`_FILL_LOCK`; another thread waits for the lock).
_STATE = [False, False]
_FILL_LOCK = threading.RLock()
#: [version of the registry, replica kind name -> kind at that version] (:func:`_kinds`).
_VERSION = [0]
_KINDS: list = [-1, {}]


def _fill() -> None:
    """Register the built-in modes, then the entry points' (once per process, on the first lookup)."""
    if _STATE[0]:
        return
    with _FILL_LOCK:
        if _STATE[0]:
            return
        if _STATE[1]:
            raise RuntimeError("the serving modes were looked up while their modules were being imported: a "
                               "module a mode imports asks the registry at import time; ask when called instead")
        _STATE[1] = True
        try:
            for name in BUILTIN_MODES:
                _add(importlib.import_module(name).MODE)
            for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: (p.name, p.value)):
                mode = _entry_point_mode(point)
                if _MODES.get(mode.name) is not mode:  # its module may have registered it on import
                    _add(mode)
        except BaseException:
            _MODES.clear()  # register() fills first, so nothing was here before: the next lookup tries again
            _VERSION[0] += 1
            raise
        finally:
            _STATE[1] = False
        _STATE[0] = True


def _entry_point_mode(point) -> ServingMode:
    try:
        mode = point.load()
    except Exception as e:
        raise ImportError(f"serving mode entry point {point.name} = {point.value} (group {ENTRY_POINT_GROUP!r}) "
                          f"failed to load: {e}") from e
    if not isinstance(mode, ServingMode):
        raise TypeError(f"serving mode entry point {point.name} = {point.value} names a {type(mode).__name__}, "
                        "not a ServingMode")
    return mode


def _add(mode: ServingMode) -> None:
    if not mode.name or SEPARATOR in mode.name:
        raise ValueError(f"mode name {mode.name!r} must be non-empty and free of {SEPARATOR!r}")
    if mode.name in _MODES:
        raise ValueError(f"mode {mode.name!r} is already registered")
    known = _kind_table()
    for kind in mode.kinds:
        if kind.name in known and known[kind.name] is not kind:
            raise ValueError(f"mode {mode.name!r} redefines the replica kind {kind.name!r}")
    _MODES[mode.name] = mode
    _VERSION[0] += 1


def register(mode: ServingMode) -> ServingMode:
    """Add ``mode`` to the registry (after the modes already there, the built-in ones first) and return it.

    Its name must be new and free of ``|``; a replica kind it shares with a
    registered mode must be the same kind. A module the registry imports while it fills (an entry point's)
    may register its mode itself.
    """
    with _FILL_LOCK:
        if not _STATE[1]:
            _fill()
        _add(mode)
    return mode


def unregister(name: str) -> ServingMode:
    """Remove the mode called ``name`` from the registry and return it (a test's toy mode, say)."""
    mode = get_mode(name)
    del _MODES[name]
    _VERSION[0] += 1
    return mode


class _Registered(Mapping):
    """Mode name -> registered mode, in registration order, filled on first read; ``del`` unregisters."""

    def __getitem__(self, name: str) -> ServingMode:
        _fill()
        return _MODES[name]

    def __iter__(self) -> Iterator[str]:
        _fill()
        return iter(list(_MODES))

    def __len__(self) -> int:
        _fill()
        return len(_MODES)

    def __delitem__(self, name: str) -> None:
        unregister(name)

    def __repr__(self) -> str:
        return f"MODES({list(self)})"


#: Every registered mode by name, in registration order (read-only but for ``del``; :func:`register` adds).
MODES: Mapping[str, ServingMode] = _Registered()


def get_mode(name: str) -> ServingMode:
    """The registered mode called ``name``."""
    _fill()
    try:
        return _MODES[name]
    except KeyError:
        raise KeyError(f"unknown serving mode {name!r}; expected one of {', '.join(_MODES)}") from None


def options() -> tuple[str, ...]:
    """The entries an instance's ``modes`` may list, in registration order."""
    _fill()
    return tuple(dict.fromkeys(m.option for m in _MODES.values()))


def _kinds() -> dict[str, PoolKind]:
    """Replica kind name -> kind, over the registered modes (every configuration record and every evaluation
    asks, millions of times in a large generation: one test once filled)."""
    if not _STATE[0]:
        _fill()
    return _kind_table()


def _kind_table() -> dict[str, PoolKind]:
    """Replica kind name -> kind over the modes registered so far (built again when the registry changed)."""
    if _KINDS[0] != _VERSION[0]:
        _KINDS[:] = [_VERSION[0], {k.name: k for m in _MODES.values() for k in m.kinds}]
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
