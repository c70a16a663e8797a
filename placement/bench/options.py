"""The options of a benchmark run as one record, and the run they describe.

``placement bench`` builds a :class:`BenchOptions` from its command line and calls
:func:`run_bench`; a script does the same without the CLI. Checking happens when the record
is built, so a bad option fails before any instance is generated or solved.

Examples
--------
>>> BenchOptions(instances=("instances/melange-toy.yaml",), solvers=("highs",)).repeat
1
>>> BenchOptions(instances=("a.yaml",), repeat=0)
Traceback (most recent call last):
...
placement.core.instance.errors.InputError: --repeat: expected --repeat >= 1, got 0
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from placement.bench.runner import BASELINES, PREPARE_LIMIT_S, bench
from placement.core.instance.errors import InputError
from placement.core.instance.schema import MODES

__all__ = ["BenchOptions", "run_bench"]

#: What the scaling plot can put on its x axis (fields of the summary rows).
_PLOT_AXES = ("domains", "groups")


@dataclass(frozen=True)
class BenchOptions:
    """Everything ``placement bench`` takes: what to run (files, or sizes to generate), how, and outputs.

    Generated instances (``sizes``) use ``family``, ``chip_types`` (or the chip names ``chips``),
    ``classes``, ``model``, ``modes`` (empty: all) and ``seed``; they are written to
    ``instances_dir``, by default next to ``json_path``.
    """

    instances: tuple[str, ...] = ()
    sizes: tuple[int, ...] = ()
    solvers: tuple[str, ...] = ("cbc", "highs")
    repeat: int = 1
    time_limit_s: float | None = 60.0
    gap: float | None = None
    threads: int | None = None
    baselines: tuple[str, ...] = ()
    exhaustive_budget_s: float = 60.0
    workers: int = 1
    memory_limit_gb: float | None = 12.0
    prepare_limit_s: float = PREPARE_LIMIT_S
    family: str = "leaf-spine"
    chip_types: int = 8
    chips: tuple[str, ...] = ()
    classes: int = 6
    model: str = "llama-3.1-70b"
    modes: tuple[str, ...] = ()
    seed: int = 0
    instances_dir: Path | None = None
    json_path: Path | None = None
    markdown_path: Path | None = None
    plot_path: Path | None = None
    plot_x: str = "domains"
    title: str | None = None

    def __post_init__(self) -> None:
        if not self.instances and not self.sizes:
            raise InputError("expected instance files or --sizes", field="INSTANCES")
        if not self.solvers:
            raise InputError("expected at least one solver", field="--solvers")
        if self.repeat < 1:
            raise InputError(f"expected --repeat >= 1, got {self.repeat}", field="--repeat")
        if self.time_limit_s is not None and not (math.isfinite(self.time_limit_s) and self.time_limit_s > 0):
            raise InputError(f"expected a finite number of seconds > 0, got {self.time_limit_s:g}",
                             field="--time-limit")
        bad = [b for b in self.baselines if b not in BASELINES]
        if bad:
            raise InputError(f"expected baselines among {', '.join(BASELINES)}, got {bad[0]!r}", field="--baselines")
        bad = [m for m in self.modes if m not in MODES]
        if bad:
            raise InputError(f"expected modes among {', '.join(MODES)}, got {bad[0]!r}", field="--modes")
        if self.plot_x not in _PLOT_AXES:
            raise InputError(f"expected domains or groups, got {self.plot_x!r}", field="--plot-x")


def _generated(options: BenchOptions) -> list[str]:
    """Write the instances of ``options.sizes``; their paths."""
    from placement.bench.generate import generate_sizes

    if not options.sizes:
        return []
    json_dir = options.json_path.parent if options.json_path else None
    out_dir = options.instances_dir or json_dir or Path(tempfile.mkdtemp(prefix="bench-inst-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = generate_sizes(options.sizes, out_dir, family=options.family,
                           chip_types=list(options.chips) or options.chip_types, classes=options.classes,
                           model=options.model, modes=options.modes or MODES, seed=options.seed)
    return [str(p) for p in paths]


def run_bench(options: BenchOptions, *, command: str = "placement bench",
              progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Generate the sized instances, then :func:`~placement.bench.runner.bench` them all.

    Returns the records of :func:`~placement.bench.runner.bench` plus ``command`` (the command
    line that asked for them). Writes nothing but the generated instances: the outputs
    (``json_path``, ``markdown_path``, ``plot_path``) are the caller's.
    """
    paths = [*options.instances, *_generated(options)]
    result = bench(paths, solvers=list(options.solvers), repeat=options.repeat, time_limit_s=options.time_limit_s,
                   gap=options.gap, threads=options.threads, baselines=list(options.baselines),
                   exhaustive_budget_s=options.exhaustive_budget_s, workers=options.workers,
                   memory_limit_gb=options.memory_limit_gb or None, prepare_limit_s=options.prepare_limit_s,
                   progress=progress)
    result["command"] = command
    return result
