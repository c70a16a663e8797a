"""The Ray branch of :func:`placement.studies.executor.run_map`: the same jobs, on a Ray cluster.

Ray is an optional extra (``pip install 'placement[ray]'``). Each item becomes
one Ray task (1 CPU) running the same wrapper as the local process pool
(:func:`placement.studies.jobs.call`), so a job that raises comes back as a
failed :class:`~placement.studies.jobs.Outcome` with the same error text, and a
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
* Ray ≥ 2.5x clusters started with ``ray start`` use token authentication by
  default, but a driver joining one only sends its token when
  ``RAY_AUTH_MODE=token`` is set. When joining an existing cluster with
  ``RAY_AUTH_MODE`` unset and a token at hand (``RAY_AUTH_TOKEN``,
  ``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``), token mode is switched
  on for this process (:func:`_token_auth_env`); without it the connection
  fails with "InvalidAuthToken".
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

from placement.core.instance.errors import InputError, SolverError, redact
from placement.studies.jobs import Outcome, call

__all__ = ["CONNECT_TIMEOUT_S", "generation_mapper", "probe_address", "ray_available", "run_map_ray"]

#: Packages shipped to an existing cluster's workers.
_PACKAGES = ("placement", "solvers", "costmodels", "topology")
#: Seconds to wait for a TCP connection to ``--address`` before giving up: ``ray.init`` itself retries an
#: address that does not answer for minutes.
CONNECT_TIMEOUT_S = 10.0


def probe_address(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Raise :class:`SolverError` unless ``HOST:PORT`` (or ``ray://HOST:PORT``) accepts a TCP connection in time.

    ``auto`` and addresses without a port are left to Ray.

    Examples
    --------
    >>> probe_address("auto")
    >>> probe_address("ray://user:secret@127.0.0.1:1", timeout_s=1)
    Traceback (most recent call last):
    ...
    placement.core.instance.errors.SolverError: Ray at ray://***@127.0.0.1:1 does not answer: no TCP connection to 127.0.0.1:1 within 1 s (Connection refused)
    """
    import socket

    rest = address.split("://", 1)[-1].rsplit("@", 1)[-1]
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit() or not host:
        return
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return
    except OSError as e:
        why = "timed out" if isinstance(e, TimeoutError) else (e.strerror or type(e).__name__)
        raise SolverError(redact(f"Ray at {address} does not answer: no TCP connection to {host}:{port} within "
                                 f"{timeout_s:g} s ({why})")) from None


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


def _token_auth_env(environ: dict | None = None, home: str | None = None) -> bool:
    """Set ``RAY_AUTH_MODE=token`` when it is unset and a Ray auth token is available; whether it was set.

    Examples
    --------
    >>> env = {"RAY_AUTH_TOKEN": "abc"}
    >>> _token_auth_env(env, home="/nonexistent"), env["RAY_AUTH_MODE"]
    (True, 'token')
    >>> env = {"RAY_AUTH_MODE": "disabled", "RAY_AUTH_TOKEN": "abc"}
    >>> _token_auth_env(env, home="/nonexistent"), env["RAY_AUTH_MODE"]
    (False, 'disabled')
    >>> _token_auth_env({}, home="/nonexistent")
    False
    """
    import os

    env = os.environ if environ is None else environ
    if "RAY_AUTH_MODE" in env:
        return False
    home = os.path.expanduser("~") if home is None else home
    paths = [env.get("RAY_AUTH_TOKEN_PATH") or "", os.path.join(home, ".ray", "auth_token")]
    if env.get("RAY_AUTH_TOKEN") or any(p and os.path.isfile(p) for p in paths):
        env["RAY_AUTH_MODE"] = "token"
        return True
    return False


def _ray_initialized() -> bool:
    import sys

    ray = sys.modules.get("ray")
    return bool(ray is not None and ray.is_initialized())


def _join_with_token() -> None:
    """Switch token mode on before joining a cluster (see Connection in the module docstring).

    Ray reads ``RAY_AUTH_MODE`` into its config when it is imported; if it
    already was, the config is refreshed the way Ray itself does it.
    """
    import sys

    if _token_auth_env() and "ray" in sys.modules:
        try:
            from ray._private.authentication.authentication_token_setup import _enable_token_auth
        except ImportError:  # pragma: no cover - other Ray versions read the variable at init
            return
        _enable_token_auth()


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
    if address is not None and not _ray_initialized():
        _join_with_token()
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
            probe_address(address)
            kwargs["address"] = address
            kwargs["runtime_env"] = _runtime_env()
        try:
            ray.init(**kwargs)
        except Exception as e:  # noqa: BLE001 - any failure to connect is reported, not a traceback
            hint = ("" if address is None else " (a cluster with token authentication needs its token in "
                    "RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token)")
            where = redact(address) if address else "a new local cluster"
            raise SolverError(redact(f"cannot start or reach Ray at {where}: {e}{hint}")) from None
        started = True
    try:
        task = ray.remote(num_cpus=1, max_retries=0)(call)
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


def generation_mapper(address: str | None) -> Callable[[Callable[[Any], Any], list, int | None], list]:
    """A job mapper for candidate generation (:data:`placement.core.replicas.parallel_generation.JobMapper`): the jobs
    as Ray tasks on ``address``, their values in order; a failed job stops generation."""
    def run(fn: Callable[[Any], Any], items: list, workers: int | None) -> list:
        outcomes = run_map_ray(fn, items, address=address, workers=workers)
        for o in outcomes:
            if not o.ok:
                raise SolverError(f"candidate generation job {items[o.index]} failed on Ray: {o.error}")
        return [o.value for o in outcomes]

    return run
