"""A fleet whose domain groups cannot reach each other: validate warns, naming the chips and the missing link,
and an infeasibility diagnosis says the same."""

import copy

import yaml
from typer.testing import CliRunner

from placement.cli.app import app
from tests.toy_fixture import TOY

runner = CliRunner()


def _split(tmp_path, rate_factor=1):
    """The toy fleet with its A100 group moved to a switch of its own, unlinked."""
    doc = copy.deepcopy(TOY)
    doc["hardware"]["switches"] = ["tor", "tor-b"]
    doc["hardware"]["domains"][1]["switch"] = "tor-b"
    for c in doc["workload"]["classes"]:
        c["rate_rps"] *= rate_factor
    path = tmp_path / "split.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_validate_warns_naming_the_chips_and_the_missing_link(tmp_path):
    r = runner.invoke(app, ["validate", _split(tmp_path)])
    assert r.exit_code == 0, r.output
    assert ("warning: domain group a100-pool (a100-80gb) cannot reach domain group a10g-pool (a10g): no chain of "
            "links joins switch tor-b to switch tor (add a link between them to hardware.links)") in r.output


def test_a_connected_fleet_gives_no_warning(tmp_path):
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(TOY))
    r = runner.invoke(app, ["validate", str(path)])
    assert r.exit_code == 0 and "warning" not in r.output, r.output


def test_the_infeasibility_diagnosis_names_the_split(tmp_path):
    r = runner.invoke(app, ["solve", _split(tmp_path, rate_factor=100), "--solver", "highs"])
    assert r.exit_code == 3, r.output
    assert "a100-pool (a100-80gb) cannot reach domain group a10g-pool (a10g)" in r.output.replace("\n", " ")
