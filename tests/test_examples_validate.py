"""``placement examples`` (the shipped instances for wheel users) and ``validate`` reporting every error at once."""

from __future__ import annotations

from typer.testing import CliRunner

from placement.cli.app import app
from placement.cli.examples import SHIPPED, shipped_files

runner = CliRunner()


def test_examples_lists_every_shipped_instance():
    r = runner.invoke(app, ["examples"], terminal_width=250)
    assert r.exit_code == 0, r.output
    for p in SHIPPED.glob("*.yaml"):
        assert p.name in r.output
    assert "measured/agg_gptoss_1k1k.json" in r.output


def test_examples_copy_writes_all_or_nothing(tmp_path):
    r = runner.invoke(app, ["examples", "--copy", str(tmp_path / "ex")])
    assert r.exit_code == 0, r.output
    for rel in shipped_files():
        assert (tmp_path / "ex" / rel).read_bytes() == (SHIPPED / rel).read_bytes()
    r = runner.invoke(app, ["solve", str(tmp_path / "ex" / "melange-toy.yaml"), "-q"])
    assert r.exit_code == 0, r.output
    (tmp_path / "ex" / "melange-toy.yaml").write_text("mine")
    r = runner.invoke(app, ["examples", "--copy", str(tmp_path / "ex")])
    assert r.exit_code == 2 and "exists" in r.output
    assert (tmp_path / "ex" / "melange-toy.yaml").read_text() == "mine"  # never overwritten


BAD = """name: bad
model: llama-3.1-8b
workload:
  classes:
    - {name: c, rate_rps: RATE, prompt_tokens: 100, output_tokens: 10, ttft_ms: 1000, tpot_ms: 50EXTRA}
hardware:
  domains:
    - {name: a, chip: h1000, count: 1, switch: nowhere}
    - {name: b, chip: h100, count: 1, switch: elsewhere}
"""


def test_validate_reports_an_unknown_chip_and_the_switches_together(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text(BAD.replace("RATE", "1").replace("EXTRA", ""))
    r = runner.invoke(app, ["validate", str(f)], terminal_width=250)
    assert r.exit_code == 2
    for what in ("unknown chip 'h1000'", "'nowhere' is not declared", "'elsewhere' is not declared"):
        assert what in r.output, r.output


def test_validate_reports_catalogue_errors_beside_schema_errors(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text(BAD.replace("RATE", "-1").replace("EXTRA", ", speed: 3"))
    r = runner.invoke(app, ["validate", str(f)], terminal_width=250)
    assert r.exit_code == 2
    for what in ("speed", "greater than 0", "unknown chip 'h1000'", "'nowhere'", "'elsewhere'"):
        assert what in r.output, r.output
