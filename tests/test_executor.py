"""The parallel executor: input order, failures reported, identical results on every executor.

Ray is an optional extra; when it is installed one local Ray (2 CPUs, no
dashboard) is started for the whole test session and shut down at the end.
"""

from __future__ import annotations

import pytest

from placement.core.instance.errors import InputError
from placement.core.instance.loading import load_instance
from placement.core.replicas.candidates import generate
from placement.studies.executor import generation_executor, run_map, set_generation_executor
from placement.studies.pareto import run_pareto
from placement.studies.sweep import run_sweep
from tests.test_parallel_generation import one_process, same_candidates, small_context
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
def test_ray_generation_gives_the_columns_of_one_process(ray_cluster):
    """Every (class, chip type) generation job as a Ray task: the columns of one local process, in order."""
    ctx = small_context()
    with generation_executor("ray"):
        remote = generate(ctx)  # the small instance would stay in one process locally: Ray was asked for
    same_candidates(one_process(), remote)


@needs_ray
def test_cli_solve_generates_on_ray(ray_cluster, tmp_path, monkeypatch):
    """``placement solve --executor ray`` sends generation jobs to Ray and writes the local plan."""
    import json

    from typer.testing import CliRunner

    import placement.studies.ray_executor as rx
    from placement.cli.app import app
    from placement.core.replicas import candidate_cache

    calls = []
    real = rx.run_map_ray
    monkeypatch.setattr(rx, "run_map_ray", lambda fn, items, **kw: calls.append(len(items)) or real(fn, items, **kw))
    plans = {}
    try:
        for name, extra in {"local": [], "ray": ["--executor", "ray"]}.items():
            candidate_cache.clear()  # each solve generates its candidates
            out = tmp_path / f"{name}.json"
            r = CliRunner().invoke(app, ["solve", "instances/melange-toy.yaml", "-q", "--json", str(out), *extra])
            assert r.exit_code == 0, r.output
            plans[name] = json.loads(out.read_text())
    finally:
        set_generation_executor()
    assert calls == [8]  # 4 classes x 2 chip types, once, on Ray
    assert plans["ray"]["pools"] == plans["local"]["pools"]
    assert plans["ray"]["cost_usd_per_hour"] == plans["local"]["cost_usd_per_hour"]
    bad = CliRunner().invoke(app, ["solve", "instances/melange-toy.yaml", "--executor", "dask"])
    assert bad.exit_code == 2


@needs_ray
def test_ray_failed_point_is_reported(ray_cluster):
    inst = toy_instance()
    res = run_sweep(inst, ["workload.classes.long-in-long-out.rate_rps=6,12"], backend="no-such-solver",
                    executor="ray")
    assert [p.status for p in res.points] == ["error", "error"]


# ---- Ray: an existing cluster, joined with --address --------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def external_ray(tmp_path_factory):
    """A separate Ray head (2 CPUs, token authentication on, as Ray recommends), started with
    ``ray start --block`` in a private HOME holding its token; yields (address, environment)."""
    import os
    import shutil
    import signal
    import socket
    import subprocess
    import sys
    import tempfile
    import time
    from pathlib import Path

    home = tmp_path_factory.mktemp("ray-home")
    ray_bin = str(Path(sys.executable).parent / "ray")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")} | {"HOME": str(home)}
    subprocess.run([ray_bin, "get-auth-token", "--generate"], env=env, check=True, capture_output=True,
                   timeout=120)
    assert (home / ".ray" / "auth_token").is_file()
    port = _free_port()
    # A short path: Ray's session sockets must fit AF_UNIX's 107 bytes (pytest's tmp paths may not).
    ray_tmp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    head = subprocess.Popen(
        [ray_bin, "start", "--head", "--block", "--num-cpus", "2", "--port", str(port), "--node-ip-address",
         "127.0.0.1", "--include-dashboard=false", "--disable-usage-stats",
         "--temp-dir", ray_tmp],
        env=env | {"RAY_AUTH_MODE": "token"}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert head.poll() is None and time.monotonic() < deadline, "ray start --head did not come up"
            time.sleep(0.5)
        yield f"127.0.0.1:{port}", env
    finally:
        # The head and every Ray process it started share its session: kill them together (a
        # graceful `ray stop` takes ~30 s, and would also stop any other Ray on this machine).
        os.killpg(head.pid, signal.SIGKILL)
        head.wait(timeout=60)
        shutil.rmtree(ray_tmp, ignore_errors=True)


@needs_ray
def test_cli_sweep_on_existing_cluster_identical_to_local(external_ray, tmp_path):
    """``placement sweep --executor ray --address HOST:PORT`` joins a running token-authenticated
    cluster (RAY_AUTH_MODE unset on the client: the token in ~/.ray is found) and writes the same
    JSON as the local executor; without the token the connection fails with a clear message."""
    import subprocess
    import sys
    from pathlib import Path

    address, env = external_ray
    exe = str(Path(sys.executable).parent / "placement")
    args = [exe, "sweep", "instances/melange-toy.yaml", "--set",
            "workload.classes.short-in-short-out.rate_rps=1:8:4"]
    outs = {}
    for name, extra in {"ray": ["--executor", "ray", "--address", address], "local": ["--workers", "2"]}.items():
        out = tmp_path / f"{name}.json"
        done = subprocess.run([*args, *extra, "--json", str(out)], env=env, capture_output=True, text=True,
                              timeout=300, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        outs[name] = out.read_bytes()
    assert outs["ray"] == outs["local"]
    assert b'"status": "optimal"' in outs["ray"]

    # A client without the token: a clean error naming where the token goes, exit code non-zero.
    bare = env | {"HOME": str(tmp_path), "RAY_AUTH_MODE": "token"}
    done = subprocess.run([*args, "--executor", "ray", "--address", address], env=bare, capture_output=True, check=False,
                          text=True, timeout=300)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "cannot start or reach Ray" in done.stdout + done.stderr and "auth_token" in done.stdout + done.stderr
