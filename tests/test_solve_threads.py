"""Solves side by side in threads (:mod:`solvers.backends.threads`): results in order, and every solve
stopped — HiGHS cancelled, CBC's process group killed — when the waiting thread is interrupted."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import pytest

from solvers.backends import SolveOptions
from solvers.backends.highs import HighsBackend
from solvers.backends.threads import Cancelled, cancellable, threaded_map
from solvers.backends.watchdog import run_watched
from tests.test_signals import _market_split


def _interrupt_main_when(ready) -> threading.Thread:
    """A thread that sends SIGINT to the main thread once ``ready()`` holds (then 0.2 s later)."""
    main = threading.main_thread().ident

    def go():
        while not ready():
            time.sleep(0.01)
        time.sleep(0.2)
        signal.pthread_kill(main, signal.SIGINT)

    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t


def test_results_come_back_in_order_whatever_finishes_first():
    def slow_first(x):
        time.sleep(0.05 * (3 - x))
        return x * 10

    assert threaded_map(slow_first, [0, 1, 2], workers=3) == [0, 10, 20]


def test_a_map_inside_a_worker_runs_in_that_worker():
    def inner_threads(_):
        return set(threaded_map(lambda _: threading.get_ident(), [0, 1, 2], workers=3))

    assert all(len(ids) == 1 for ids in threaded_map(inner_threads, [0, 1], workers=2))


def test_a_failing_item_raises_and_stops_the_others():
    stopped = threading.Event()

    def work(x):
        if x == 0:
            time.sleep(0.1)
            raise ValueError("part 0 failed")
        with cancellable(stopped.set):  # stands for a solve that ends only when stopped
            stopped.wait(30)
        return x

    began = time.monotonic()
    with pytest.raises(ValueError, match="part 0 failed"):
        threaded_map(work, [0, 1], workers=2)
    assert time.monotonic() - began < 30


def test_a_solve_started_after_the_stop_is_refused():
    refused = []
    running = threading.Event()

    def work(x):
        if x == 0:
            running.wait(5)
            raise RuntimeError("stop")
        running.set()
        time.sleep(0.3)  # the map is stopping by now
        try:
            with cancellable(lambda: None):
                pass
        except Cancelled:
            refused.append(x)
        return x

    with pytest.raises(RuntimeError):
        threaded_map(work, [0, 1], workers=2)
    assert refused == [1]


def test_an_interrupt_cancels_every_highs_solve():
    solving = lambda: sum(t.name == "highs-solve" for t in threading.enumerate()) >= 2
    helper = _interrupt_main_when(solving)
    began = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        threaded_map(lambda seed: HighsBackend().solve(_market_split(seed=seed), SolveOptions()), [1, 2], workers=2)
    helper.join()
    # Both market-split MILPs take minutes; cancelled, the call returns at once and no solve is left running.
    assert time.monotonic() - began < 60
    deadline = time.monotonic() + 30
    while any(t.name == "highs-solve" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(t.name == "highs-solve" for t in threading.enumerate())


def test_an_interrupt_kills_every_watched_process():
    pids: list[int] = []
    real_popen = subprocess.Popen

    def recording_popen(*args, **kwargs):
        proc = real_popen(*args, **kwargs)
        pids.append(proc.pid)
        return proc

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    subprocess.Popen = recording_popen
    try:
        helper = _interrupt_main_when(lambda: len(pids) >= 2)
        with pytest.raises(KeyboardInterrupt):
            threaded_map(lambda _: run_watched(["sleep", "60"], None, deadline_s=None), [0, 1], workers=2)
        helper.join()
    finally:
        subprocess.Popen = real_popen
        signal.signal(signal.SIGINT, previous)
    for pid in pids:  # killed and reaped: no such process
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


class _TakenThenInterrupted:
    """Popen's wait lock, whose first non-blocking acquire takes it and then raises KeyboardInterrupt: what a
    signal handled just after ``Popen._wait``'s ``acquire`` (before its ``try``) does. The lock stays held."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sprung = False

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        taken = self.lock.acquire(blocking, timeout)
        if taken and not self.sprung:
            self.sprung = True
            raise KeyboardInterrupt
        return taken

    def release(self) -> None:
        self.lock.release()

    __enter__ = acquire

    def __exit__(self, *exc) -> None:
        self.release()


def test_a_signal_that_leaves_popens_lock_held_does_not_hang_the_watchdog(monkeypatch):
    procs: list[subprocess.Popen] = []
    real_popen = subprocess.Popen

    def trapped_popen(*args, **kwargs):
        proc = real_popen(*args, **kwargs)
        proc._waitpid_lock = _TakenThenInterrupted()
        procs.append(proc)
        return proc

    monkeypatch.setattr(subprocess, "Popen", trapped_popen)
    raised = []

    def watch():
        try:
            run_watched(["sleep", "60"], None, deadline_s=None)
        except KeyboardInterrupt:
            raised.append(True)

    t = threading.Thread(target=watch, daemon=True)  # on a thread: a hang fails the test instead of the run
    t.start()
    t.join(30)
    assert not t.is_alive(), "run_watched hung on Popen's abandoned lock"
    assert raised == [True]
    assert procs[0].returncode == -signal.SIGKILL
    with pytest.raises(ProcessLookupError):
        os.kill(procs[0].pid, 0)
