"""Solver scratch directories: removed after the solve, and after a SIGKILL by the next solve.

Issue 15: killing ``placement`` left CBC's model files in TMPDIR. SIGTERM/SIGINT/SIGHUP are
tests/test_signals.py (real processes); SIGKILL cannot be caught, so its directory is removed by the
next scratch directory made, once the kernel has dropped the dead process's lock.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from solvers.backends.scratch import remove_abandoned, scratch_dir


def _hold_in_child(parent: Path) -> tuple[int, Path]:
    """A forked child that makes a scratch directory under ``parent`` and waits in it."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            with scratch_dir(str(parent)) as tmp:
                Path(tmp, "model.mps").write_text("NAME x\n")
                os.write(w, tmp.encode() + b"\n")
                signal.pause()
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as fh:
        return pid, Path(fh.readline().strip())


def test_a_running_solve_keeps_its_directory_and_a_killed_one_loses_it(tmp_path):
    pid, held = _hold_in_child(tmp_path)
    try:
        assert remove_abandoned(str(tmp_path)) == [] and (held / "model.mps").exists()
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert held.exists()  # SIGKILL: nothing ran to remove it
    with scratch_dir(str(tmp_path)) as tmp:
        assert not held.exists()
        assert [p.name for p in tmp_path.iterdir()] == [Path(tmp).name]
    assert list(tmp_path.iterdir()) == []


def test_a_directory_without_its_lock_file_is_left_alone(tmp_path):
    other = tmp_path / "placement-solve-elsewhere"
    other.mkdir()
    assert remove_abandoned(str(tmp_path)) == [] and other.exists()
