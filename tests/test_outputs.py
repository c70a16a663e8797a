"""Outputs never replace what they write to: stdout for ``-``, devices and pipes in place, links kept."""

from __future__ import annotations

import os
import threading

from typer.testing import CliRunner

from placement.cli.app import app
from placement.core.output import check_writable, write_atomic


def test_dash_is_stdout(capsys):
    write_atomic("-", '{"a": 1}\n')
    assert capsys.readouterr().out == '{"a": 1}\n'


def test_solve_json_dash_prints_the_plan():
    r = CliRunner().invoke(app, ["solve", "instances/melange-toy.yaml", "--json", "-", "-q"])
    assert r.exit_code == 0, r.output
    assert '"cost_usd_per_hour": 6.7' in r.output
    assert not os.path.exists("-")


def test_a_device_is_written_in_place_not_replaced():
    write_atomic("/dev/null", "x" * 100)
    assert not os.path.isfile("/dev/null") and os.path.exists("/dev/null")


def test_a_link_to_a_file_keeps_its_link(tmp_path):
    target = tmp_path / "plan.json"
    target.write_text("old")
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    write_atomic(link, "new")
    assert link.is_symlink() and target.read_text() == "new"


def test_a_fifo_is_written_in_place(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    check_writable(fifo)
    write_atomic(fifo, "through the pipe")
    reader.join(timeout=10)
    assert got == ["through the pipe"]
    assert not fifo.is_file()
