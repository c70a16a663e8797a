"""The serving modes' registry finds the modes without core importing them: the built-in modules by name,
then the entry points of the group ``placement.modes`` (a package adds a mode without editing this one),
then run-time registrations — and the disk cache's key names the packages that add modes.

Each registry test runs in a fresh interpreter: the registry fills once per process.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from placement.core.modes.registry import BUILTIN_MODES, ENTRY_POINT_GROUP
from placement.core.replicas import candidate_cache

ROOT = Path(__file__).resolve().parents[1]
BUILTIN_NAMES = ["aggregated", "pd", "pd+draft", "pd-af"]

TOY_PACKAGE = {
    "toy_modes.py": '''
        """Two toy modes another package declares: one stage each, served by one chip per replica."""
        import numpy as np

        from placement.core.modes.base import Grid, PoolKind, ServingMode
        from placement.core.replicas.evaluate import PartLayout, Perf, PoolConfig


        def _evaluate(ctx, cfg, cls, b, lat, memo):
            z = np.zeros(b.shape)
            return Perf(capacity_rps=b * 1.0, ttft_s=z + 1e-3, tpot_s=z + 1e-3, fits=np.ones(b.shape, dtype=bool),
                        pair_bytes_per_s=z, memory_per_chip_bytes=z)


        def _mode(name):
            kind = PoolKind(name, (name, None), _evaluate)

            def grids(ctx, cls, memo, resource=None):
                for res, site in ctx.resources().items():
                    part = PartLayout(chip=site.chip.name, site_resource=res, chips=1, tp=1, ep=1, pp=1)
                    yield Grid(PoolConfig(kind=name, traffic_class=cls.name, main=part, batch=1), "serve",
                               np.array([1.0, 2.0]))

            return ServingMode(name=name, label=name, option=name, stages=("serve",), kinds=(kind,), grids=grids)


        ALPHA = _mode("alpha")
        BETA = _mode("beta")
    ''',
    # Declared beta first: the registry orders entry points by name, not by the order they are found in.
    "toy_modes-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: toy-modes\nVersion: 1.0\n",
    "toy_modes-1.0.dist-info/entry_points.txt": f"[{ENTRY_POINT_GROUP}]\nbeta = toy_modes:BETA\n"
                                                "alpha = toy_modes:ALPHA\n",
}


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    return tmp_path


def _run(code: str, *paths: Path) -> subprocess.CompletedProcess:
    env_path = ":".join([str(ROOT), *map(str, paths)])
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], check=False, cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": env_path}, timeout=300)


def test_core_finds_the_builtin_modes_on_first_lookup_without_importing_them():
    """Importing core's registry imports no mode; the first lookup imports the four built-in modules by name,
    in the order routes and plans follow."""
    out = _run("""
        import sys
        from placement.core.modes import registry
        from placement.core.pipeline import solve  # all of core: the pipeline, the verifier, the schema
        print(sorted(m for m in sys.modules if m == "placement.modes" or m.startswith("placement.modes.")))
        print(list(registry.MODES))
        print(all(m in sys.modules for m in registry.BUILTIN_MODES))
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["[]", str(BUILTIN_NAMES), "True"]


def test_an_entry_point_mode_registers_after_the_builtins_and_reaches_the_problem(tmp_path):
    """A package declaring two modes in the entry-point group: both registered after the built-in ones, in
    order of their names; a mode registered at run time before any lookup still comes after them all; the
    instance schema accepts the package's option and the problem routes the class through its mode."""
    out = _run("""
        from dataclasses import replace

        import toy_modes
        from placement.core.instance.context import Context
        from placement.core.instance.loading import parse_instance
        from placement.core.modes.registry import MODES, register
        from placement.core.pipeline.problem import build_problem

        register(replace(toy_modes.ALPHA, name="late", option="late"))  # the first lookup: the others go first
        print(list(MODES))
        doc = {"name": "toy", "model": "llama-3.1-8b", "modes": ["beta"],
               "workload": {"classes": [{"name": "chat", "rate_rps": 3, "prompt_tokens": 100,
                                         "output_tokens": 10, "ttft_ms": 1000, "tpot_ms": 50}]},
               "hardware": {"domains": [{"name": "g", "chip": "h100", "count": 1}]}}
        problem, _ = build_problem(Context.of(parse_instance(doc)))
        print([(r.name, r.steps) for r in problem.routes])
    """, _package(tmp_path, TOY_PACKAGE))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [str([*BUILTIN_NAMES, "alpha", "beta", "late"]),
                                       str([("chat|beta", ["chat|beta|serve"])])]


def test_a_mode_module_that_asks_the_registry_when_imported_is_refused(tmp_path):
    """A lookup while the registry imports the modes would see half of them: it is an error naming why, and
    the registry is left as it was (the next lookup tries again and says the same)."""
    files = {**TOY_PACKAGE, "toy_modes.py": """
        from placement.core.modes.registry import options

        ALPHA = BETA = options()  # at import: while the registry is filling
    """}
    out = _run("""
        from placement.core.modes.registry import options
        for _ in range(2):
            try:
                options()
            except ImportError as e:
                print(type(e.__cause__).__name__, "looked up while" in str(e), "toy_modes:" in str(e))
    """, _package(tmp_path, files))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["RuntimeError True True"] * 2


def test_the_builtin_list_names_every_mode_module():
    """Every module of placement/modes defining a ``MODE`` is in BUILTIN_MODES, and only those: a new mode
    file that is not declared would never be registered."""
    defining = set()
    for path in sorted((ROOT / "placement" / "modes").glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
                if isinstance(node, ast.AnnAssign) else []
            if any(isinstance(t, ast.Name) and t.id == "MODE" for t in targets):
                defining.add(f"placement.modes.{path.stem}")
    assert defining == set(BUILTIN_MODES)
    assert len(BUILTIN_MODES) == len(set(BUILTIN_MODES))


def test_the_disk_cache_key_names_the_packages_that_add_modes(tmp_path, monkeypatch):
    """The code of an entry-point mode is outside the hashed tree: its package's version and its module's
    bytes are in the code fingerprint, so editing it does not reuse columns from disk."""
    assert candidate_cache.mode_packages() == ""
    monkeypatch.syspath_prepend(str(_package(tmp_path, TOY_PACKAGE)))
    first = candidate_cache.mode_packages()
    assert first.splitlines()[0].startswith("alpha = toy_modes:ALPHA (toy-modes 1.0) ")
    before = candidate_cache.code_fingerprint.__wrapped__()
    (tmp_path / "toy_modes.py").write_text((tmp_path / "toy_modes.py").read_text() + "\n# edited\n")
    assert candidate_cache.mode_packages() != first
    assert candidate_cache.code_fingerprint.__wrapped__() != before
