"""The parallel executor: input order, failures reported, identical results on every executor.

Ray is an optional extra; when it is installed one local Ray (2 CPUs, no
dashboard) is started for the whole test session and shut down at the end.
"""

from __future__ import annotations

import pytest

from placement.errors import InputError
from placement.executor import run_map
from placement.loading import load_instance
from placement.pareto import run_pareto
from placement.sweep import run_sweep
from tests.toy_fixture import toy_instance

ITEMS = ["3", "x", "-7", "10", "1e3", "4"]  # int() fails on "x" and "1e3"
EXPECTED_ERRORS = {1: "ValueError: invalid literal for int() with base 10: 'x'",
                   4: "ValueError: invalid literal for int() with base 10: '1e3'"}


def _check(outcomes):
    assert [o.index for o in outcomes] == list(range(len(ITEMS)))
    assert [o.value for o in outcomes] == [3, None, -7, 10, None, 4]
    assert {o.index: o.error for o in outcomes if not o.ok} == EXPECTED_ERRORS


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_local_outcomes_in_input_order_with_failures(workers):
    seen = []
    _check(run_map(int, ITEMS, workers=workers, progress=lambda d, n: seen.append((d, n))))
    assert seen[-1] == (len(ITEMS), len(ITEMS)) and [d for d, _ in seen] == list(range(1, len(ITEMS) + 1))


def test_bad_executor_and_workers():
    with pytest.raises(InputError, match="--executor"):
        run_map(int, ITEMS, executor="dask")
    with pytest.raises(InputError, match="workers >= 1"):
        run_map(int, ITEMS, workers=-1)


def test_local_sweep_identical_for_any_worker_count():
    inst = toy_instance()
    spec = ["workload.classes.long-in-long-out.rate_rps=2:40:6"]
    one = run_sweep(inst, spec, workers=1).canonical_json()
    two = run_sweep(inst, spec, workers=2).canonical_json()
    assert one == two


# ---- Ray --------------------------------------------------------------------------------------

try:
    import ray
except ImportError:  # pragma: no cover - the test extra installs it
    ray = None

needs_ray = pytest.mark.skipif(ray is None, reason="Ray is not installed: it is an optional extra "
                                                   "(pip install 'placement[ray]'); the Ray executor tests need it")


@pytest.fixture(scope="session")
def ray_cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield
    ray.shutdown()


@needs_ray
def test_ray_outcomes_match_local(ray_cluster):
    seen = []
    _check(run_map(int, ITEMS, executor="ray", progress=lambda d, n: seen.append(d)))
    assert seen == list(range(1, len(ITEMS) + 1))
    _check(run_map(int, ITEMS, executor="ray", workers=1))  # one task in flight at a time


@needs_ray
def test_ray_sweep_and_pareto_identical_to_local(ray_cluster):
    toy = toy_instance()
    spec = ["workload.classes.long-in-long-out.rate_rps=2:40:6", "hardware.domains.a100-pool.count=1,16"]
    local = run_sweep(toy, spec, workers=2)
    remote = run_sweep(toy, spec, executor="ray")
    assert remote.canonical_json() == local.canonical_json()
    assert sum(p.ok for p in local.points) >= 10

    bertha = load_instance("instances/bertha-lpddr.yaml")
    local = run_pareto(bertha, ["tpot_ms=20:150:3"], variants=False, workers=2)
    remote = run_pareto(bertha, ["tpot_ms=20:150:3"], variants=False, executor="ray")
    assert remote.canonical_json() == local.canonical_json()
    assert any(p.envelope for p in remote.points)


@needs_ray
def test_ray_failed_point_is_reported(ray_cluster):
    inst = toy_instance()
    res = run_sweep(inst, ["workload.classes.long-in-long-out.rate_rps=6,12"], backend="no-such-solver",
                    executor="ray")
    assert [p.status for p in res.points] == ["error", "error"]
