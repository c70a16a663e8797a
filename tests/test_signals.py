"""A signal to ``placement`` ends its solver and leaves nothing behind.

A real ``placement solve`` (CBC, a 10-domain fleet on which CBC needs about a minute) is started
with a private TMPDIR; once its CBC child is running, the test sends SIGTERM, SIGINT or SIGHUP and
checks: exit code 128 + the signal, no CBC process left (its pid is gone, and no process
of that session remains), and TMPDIR empty (PuLP's model files removed). In-process HiGHS is
checked by interrupting a solve of a hard MILP (market split) from the test itself.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pulp
import pytest

from solvers.backends import SolveOptions
from solvers.backends.highs import HighsBackend

ROOT = Path(__file__).resolve().parent.parent
#: A fleet whose CBC solve runs for minutes (the 100-domain all-modes one; the 10-domain one now ends ~0.5 s
#: after its last CBC starts, so a signal could land after the command finished and its handlers were gone).
SLOW = ROOT / "benchmarks/instances/bench-leaf-spine-d100-k8-c6-s0-agg.pd.yaml"
PLACEMENT = Path(sys.executable).parent / "placement"
#: Generous: candidate generation on a loaded machine; the test fails (not hangs) if CBC never starts.
START_TIMEOUT_S = 300.0


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:  # a zombie is dead: only its parent's wait() is missing
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _outlives(pid: int, grace_s: float = 5.0) -> bool:
    """Whether ``pid`` is still alive ``grace_s`` after its parent ended. A signal that lands before the
    parent waits on CBC leaves CBC to the kernel's parent-death SIGKILL, which a loaded machine delivers
    some milliseconds after the parent is gone."""
    deadline = time.monotonic() + grace_s
    while _alive(pid):
        if time.monotonic() > deadline:
            return True
        time.sleep(0.02)
    return False


def _wait_for_cbc(proc: subprocess.Popen) -> int:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"placement ended before CBC started: {proc.communicate()}"
        for child in _children(proc.pid):
            if "/cbc" in _cmdline(child) and ".mps" in _cmdline(child):
                return child
        time.sleep(0.02)
    raise AssertionError(f"no CBC child within {START_TIMEOUT_S} s")


@contextmanager
def _sigint_as_in_a_terminal() -> Iterator[None]:
    """Children started in the block get SIGINT as a foreground command in a terminal does (default; a
    handled signal is reset at exec): a test run started as a background job (``make test &``) ignores
    SIGINT, its children inherit that, and an ignored Ctrl-C is no test of it."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_ends_cbc_and_removes_its_files(tmp_path, signum):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {**os.environ, "TMPDIR": str(tmpdir), "PYTHONFAULTHANDLER": "1"}
    with _sigint_as_in_a_terminal():
        proc = subprocess.Popen([str(PLACEMENT), "solve", str(SLOW), "--solver", "cbc", "--time-limit", "120", "-q"],
                                env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    try:
        cbc = _wait_for_cbc(proc)
        assert any(tmpdir.iterdir()), "CBC runs without its model files in TMPDIR?"
        proc.send_signal(signum)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:  # hung: SIGABRT makes faulthandler print where every thread waits
            proc.send_signal(signal.SIGABRT)
            _, err = proc.communicate(timeout=60)
            raise AssertionError(f"placement still running 60 s after {signal.Signals(signum).name}:\n"
                                 f"{err.decode(errors='replace')[-6000:]}") from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signum, err
    assert b"Traceback" not in err, err
    assert not _outlives(cbc), f"CBC {cbc} still running after {signal.Signals(signum).name}"
    assert list(tmpdir.iterdir()) == [], list(tmpdir.iterdir())


def _market_split(m: int = 4, n: int = 36, seed: int = 1) -> pulp.LpProblem:
    """Cornuéjols–Dawande market split: a few equality rows over binaries, notoriously slow to branch on."""
    rng = random.Random(seed)
    prob = pulp.LpProblem("market_split")
    x = [prob.add_variable(f"x{j}", 0, 1, pulp.LpInteger) for j in range(n)]
    s = [prob.add_variable(f"s{i}", 0, None) for i in range(m)]
    t = [prob.add_variable(f"t{i}", 0, None) for i in range(m)]
    for i in range(m):
        a = [rng.randint(0, 99) for _ in range(n)]
        prob.addConstraint(pulp.lpSum(a[j] * x[j] for j in range(n)) + s[i] - t[i] == sum(a) // 2, f"r{i}")
    prob.setObjective(pulp.lpSum(s) + pulp.lpSum(t))
    return prob


def test_a_keyboard_interrupt_cancels_an_in_process_highs_solve():
    main = threading.main_thread().ident

    def interrupt_when_solving():
        while not any(t.name == "highs-solve" for t in threading.enumerate()):
            time.sleep(0.01)
        time.sleep(0.2)
        signal.pthread_kill(main, signal.SIGINT)

    helper = threading.Thread(target=interrupt_when_solving, daemon=True)
    helper.start()
    with pytest.raises(KeyboardInterrupt):
        HighsBackend().solve(_market_split(), SolveOptions())
    helper.join()
    for t in threading.enumerate():
        if t.name == "highs-solve":  # it has signalled its end; let it return
            t.join(timeout=30)
            assert not t.is_alive(), "HiGHS still solving after the interrupt"
