"""Outputs never replace what they write to: stdout for ``-``, devices and pipes in place, links kept."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from typer.testing import CliRunner

from placement.cli.app import app
from placement.core.plans.output import check_writable, write_atomic


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


# ---- an output never overwrites an input of the same run ------------------------------------------


def _instance_copy(tmp_path):
    inst = tmp_path / "x.yaml"
    inst.write_bytes(Path("instances/melange-toy.yaml").read_bytes())
    return inst


def test_solve_refuses_to_write_its_plan_over_the_instance(tmp_path):
    inst = _instance_copy(tmp_path)
    before = inst.read_bytes()
    link = tmp_path / "alias.yaml"
    link.symlink_to(inst)
    hard = tmp_path / "hard.yaml"
    os.link(inst, hard)
    for target in (inst, tmp_path / "." / "x.yaml", link, hard):
        r = CliRunner().invoke(app, ["solve", str(inst), "--json", str(target), "-q"])
        assert r.exit_code == 2, r.output
        assert "--json" in r.output and "refusing to overwrite" in r.output, r.output
    assert inst.read_bytes() == before


def test_other_commands_refuse_to_overwrite_the_instance(tmp_path):
    inst = _instance_copy(tmp_path)
    before = inst.read_bytes()
    for args, option in ((["compare", str(inst), "--json", str(inst)], "--json"),
                         (["export", str(inst), "--lp", str(inst)], "--lp"),
                         (["sweep", str(inst), "--set", "workload.classes.0.rate_rps=1:2:2", "--csv", str(inst)],
                          "--csv")):
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 2, (args, r.output)
        assert option in r.output and "refusing to overwrite" in r.output, r.output
    assert inst.read_bytes() == before


# ---- inputs are read with a bounded reader ----------------------------------------------------------


def test_a_device_input_is_refused_at_the_cap_not_read_to_exhaustion():
    for args in (["validate", "/dev/zero"], ["check", "instances/melange-toy.yaml", "/dev/zero"]):
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 2, r.output
        assert "/dev/zero" in r.output and "expected at most 20000000" in r.output, r.output


def test_an_empty_device_is_an_empty_document():
    r = CliRunner().invoke(app, ["validate", "/dev/null"])
    assert r.exit_code == 2 and "/dev/null" in r.output and "empty" in r.output, r.output


# ---- credentials are never printed ------------------------------------------------------------------


def test_a_ray_address_with_credentials_is_redacted_in_errors(monkeypatch):
    import placement.studies.ray_executor as rx

    class FakeRay:
        @staticmethod
        def is_initialized():
            return False

        @staticmethod
        def init(**kwargs):
            raise ConnectionError(f"could not connect to {kwargs['address']}")

    monkeypatch.setattr(rx, "_import_ray", lambda: FakeRay)
    monkeypatch.setattr(rx, "_join_with_token", lambda: None)
    r = CliRunner().invoke(app, ["sweep", "instances/melange-toy.yaml", "--set", "workload.classes.0.rate_rps=1:2:2",
                                 "--executor", "ray", "--address", "ray://admin:S3CR3T-TOKEN@head:10001", "-q"])
    assert r.exit_code == 4, r.output
    assert "S3CR3T" not in r.output and "admin" not in r.output, r.output
    assert "ray://***@head:10001" in r.output, r.output
