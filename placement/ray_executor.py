"""The Ray branch of :func:`placement.executor.run_map`: the same jobs, on a Ray cluster.

Ray is an optional extra (``pip install 'placement[ray]'``). Each item becomes
one Ray task (1 CPU) running the same wrapper as the local process pool
(:func:`placement.executor._call`), so a job that raises comes back as a
failed :class:`~placement.executor.Outcome` with the same error text, and a
task that dies with its worker comes back as failed too — never dropped.
Outcomes are returned in input order, so results do not depend on which node
ran what, or when.

Connection
----------
* If Ray is already initialised in this process (a test session, a notebook),
  that cluster is used and left running.
* Otherwise ``address`` is passed to ``ray.init``: ``"auto"`` or
  ``"HOST:6379"`` joins an existing cluster from one of its nodes,
  ``"ray://HOST:10001"`` connects through Ray Client; ``None`` starts a
  private local Ray with ``workers`` CPUs (default: all). A Ray this function
  started is shut down when it returns.
* When joining an existing cluster, the ``placement``, ``solvers``,
  ``costmodels`` and ``topology`` packages (with their catalogues) are shipped
  to the workers as ``py_modules``, so the cluster needs only the third-party
  dependencies (PuLP, highspy, pydantic, numpy, networkx, PyYAML) installed.

``workers`` bounds the tasks in flight (default: unbounded; Ray schedules
them on the CPUs it has).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from placement.errors import InputError, SolverError
from placement.executor import Outcome, _call

__all__ = ["ray_available", "run_map_ray"]

#: Packages shipped to an existing cluster's workers.
_PACKAGES = ("placement", "solvers", "costmodels", "topology")


def ray_available() -> bool:
    """Whether Ray can be imported here."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def _import_ray():
    try:
        import ray
    except ImportError:
        raise InputError("Ray is not installed; install the optional extra: pip install 'placement[ray]' "
                         "(or use --executor local)", field="--executor") from None
    return ray


def _runtime_env() -> dict:
    import importlib

    return {"py_modules": [importlib.import_module(p) for p in _PACKAGES]}


def run_map_ray(
    fn: Callable[[Any], Any],
    items: Sequence[Any],
    *,
    address: str | None = None,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Outcome]:
    """Apply ``fn`` to every item as Ray tasks; outcomes in input order.

    Raises
    ------
    InputError
        Ray is not installed, or ``workers`` < 1.
    SolverError
        The cluster at ``address`` cannot be reached.
    """
    ray = _import_ray()
    if workers is not None and workers < 1:
        raise InputError(f"expected workers >= 1, got {workers}", field="--workers")
    n = len(items)
    results: list[Outcome | None] = [None] * n
    if n == 0:
        return []
    started = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": "ERROR"}
        if address is None:
            kwargs["num_cpus"] = workers
        else:
            kwargs["address"] = address
            kwargs["runtime_env"] = _runtime_env()
        try:
            ray.init(**kwargs)
        except Exception as e:  # noqa: BLE001 - any failure to connect is reported, not a traceback
            raise SolverError(f"cannot start or reach Ray at {address or 'a new local cluster'}: {e}") from None
        started = True
    try:
        task = ray.remote(num_cpus=1, max_retries=0)(_call)
        fn_ref = ray.put(fn)
        limit = workers or n
        pending: dict[Any, int] = {}
        next_item = 0
        done = 0

        def submit() -> None:
            nonlocal next_item
            while next_item < n and len(pending) < limit:
                pending[task.remote(fn_ref, next_item, items[next_item])] = next_item
                next_item += 1

        submit()
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                i = pending.pop(ref)
                try:
                    results[i] = ray.get(ref)
                except Exception as e:  # noqa: BLE001 - a lost task or worker is a failed point
                    results[i] = Outcome(i, error=f"{type(e).__name__}: {e}")
                done += 1
                if progress:
                    progress(done, n)
            submit()
    finally:
        if started:
            ray.shutdown()
    return results  # type: ignore[return-value]
