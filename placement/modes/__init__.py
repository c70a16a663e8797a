"""Serving modes, one module each.

A serving mode is a way to serve a traffic class: a route of stages (steps
the solver must cover at the class's rate), the kinds of replica that run
them, the candidate configurations of those replicas on a fleet, what
crosses the network between two steps, and the label and colour that tables
and charts show (:class:`~placement.core.modes.base.ServingMode`). Each module
here defines one as ``MODE``; the registry (:mod:`placement.core.modes.registry`)
imports them by name on its first lookup, so generation
(:mod:`placement.core.replicas.candidates`), the SLO floors of a diagnosis
(:func:`placement.core.pipeline.diagnose.slo_floor`), evaluation
(:func:`placement.core.replicas.evaluate.evaluate`), the plan's stages and the
studies' labels read them without importing this package. The modes import
core (the evaluator, the queues, the physical floors); core imports none of them.

==============  =========  =====================  ===================================
mode            option     route stages           replica kinds (stages of their parts)
==============  =========  =====================  ===================================
``aggregated``  aggregated serve                  aggregated, measured
``pd``          pd         prefill → decode (KV)  prefill, decode
``pd+draft``    pd         prefill → decode (KV)  prefill, decode-spec (decode, draft)
``pd-af``       pd-af      prefill → decode (KV)  prefill, decode-af (decode-attention, decode-ffn)
==============  =========  =====================  ===================================

The *option* is the entry of an instance's ``modes`` list that allows the
mode (``pd+draft`` needs ``pd`` and a draft model). Modes are tried in the
order registered: routes, and the steps a shared configuration serves (one
prefill column serves the prefill step of every mode that prefills apart),
follow it.

A new built-in mode is one module here defining its
:class:`~placement.core.modes.base.ServingMode` as ``MODE``, and its module's name in
:data:`~placement.core.modes.registry.BUILTIN_MODES` (after the modes it should follow); the
instance schema then accepts its option::

    # placement/modes/kv_tier.py
    MODE = ServingMode(name="kv-tier", label="KV tier", option="kv-tier",
                       stages=("prefill", "decode"), kinds=(PREFILL, TIERED_DECODE),
                       grids=_grids, transfers=kv_transfer)

Another package declares its mode as an entry point instead, and no file of this one changes::

    # its pyproject.toml
    [project.entry-points."placement.modes"]
    kv-tier = "my_package.kv_tier:MODE"

The names below are re-exported from :mod:`placement.core.modes` (records, ids, registry, and what the
enabled modes offer): import them from here or from there.

Examples
--------
>>> from placement.modes import MODES, get_mode, options
>>> list(MODES), options()
(['aggregated', 'pd', 'pd+draft', 'pd-af'], ('aggregated', 'pd', 'pd-af'))
>>> [str(s) for s in get_mode("pd-af").steps("chat")]
['chat|pd-af|prefill', 'chat|pd-af|decode']
>>> STAGE_OF_KIND["decode-af"]
('decode-attention', 'decode-ffn')
"""

from __future__ import annotations

from placement.core.modes.base import (
    Grid,
    GridSet,
    PoolKind,
    ServingMode,
    SharedColumn,
    TransferSpec,
)
from placement.core.modes.enabled import configurations, enabled_modes, transfers
from placement.core.modes.ids import RouteId, StepId
from placement.core.modes.registry import (
    MODES,
    STAGE_OF_KIND,
    check_kind,
    check_option,
    check_stage,
    colors,
    get_mode,
    labels,
    options,
    pool_kind,
    register,
    stages,
    unregister,
)

__all__ = [
    "MODES",
    "STAGE_OF_KIND",
    "Grid",
    "GridSet",
    "PoolKind",
    "RouteId",
    "ServingMode",
    "SharedColumn",
    "StepId",
    "TransferSpec",
    "check_kind",
    "check_option",
    "check_stage",
    "colors",
    "configurations",
    "enabled_modes",
    "get_mode",
    "labels",
    "options",
    "pool_kind",
    "register",
    "stages",
    "transfers",
    "unregister",
]
