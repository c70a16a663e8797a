"""The command line piped: tables are not cut to 80 columns, no progress bar is drawn, and compare says why each
infeasible row is infeasible."""

import copy
import json

import yaml
from typer.testing import CliRunner

from placement.cli.app import app
from tests.toy_fixture import TOY

runner = CliRunner()


def test_a_wide_table_is_not_cut_when_piped():
    r = runner.invoke(app, ["catalog", "chips"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert max(map(len, lines)) > 120 and "…" not in r.output
    header = next(line for line in lines if "name" in line and "kind" in line)
    assert "held-out TPOT" in header  # the last column, whole, on the header's one line


def test_compare_gives_the_reason_for_each_infeasible_row(tmp_path):
    """Two A10G domains cannot carry the toy's demand alone (48 req/s of long-in-short-out at 5 per replica)."""
    doc = copy.deepcopy(TOY)
    doc["hardware"]["domains"][0]["count"] = 2
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = tmp_path / "rows.json"
    r = runner.invoke(app, ["compare", str(path), "--solver", "highs", "--json", str(out)])
    assert r.exit_code == 0, r.output
    rows = {row["label"]: row for row in json.loads(out.read_text())}
    assert rows["only a10g"]["status"] == "infeasible" and rows["only a10g"]["reason"]
    assert rows["only a100-80gb"]["reason"] is None
    assert f"only a10g: infeasible: {rows['only a10g']['reason']}" in r.output
    assert "compare toy" not in r.output  # no progress bar on a pipe


def test_catalogue_errors_are_reported_all_at_once():
    """An unknown model, an unknown chip and an undeclared switch: one error naming the three fields."""
    import pytest

    from placement.core.instance.errors import InputError
    from placement.core.instance.loading import parse_instance

    doc = copy.deepcopy(TOY)
    doc["model"] = "llama-9-999b"
    doc["hardware"]["domains"][0]["chip"] = "h1000"
    doc["hardware"]["domains"][1]["switch"] = "nowhere"
    doc["measured_capacity"][0]["class"] = "no-such-class"
    with pytest.raises(InputError) as e:
        parse_instance(doc, source="bad.yaml")
    assert e.value.field == "model" and "unknown model 'llama-9-999b'" in str(e.value)
    for phrase in ("\n  and hardware.domains[0].chip: unknown chip 'h1000'",
                   "\n  and hardware.domains[1].switch: switch 'nowhere' is not declared",
                   "\n  and measured_capacity[0].class: unknown class 'no-such-class'"):
        assert phrase in str(e.value)
