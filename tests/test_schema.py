"""JSON Schemas of the instance and plan formats: shipped files up to date, every shipped instance and a solved
plan valid against them, the generated format reference up to date, the plan self-describing."""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from placement.cli.app import app
from placement.core.instance.loading import load_instance, read_document
from placement.core.plans.json_schema import instance_markdown, schema_json, shipped_instances
from placement.core.plans.provenance import instance_sha256

runner = CliRunner()
ROOT = Path(__file__).parents[1]
REGENERATE = ("placement schema instance --out schemas/instance.schema.json; "
              "placement schema plan --out schemas/plan.schema.json; "
              "placement schema instance --markdown --out docs/instance-format.md")


@cache
def validator(kind: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((ROOT / "schemas" / f"{kind}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@cache
def toy_plan() -> dict:
    from placement.core.pipeline.solve import solve

    plan = solve(load_instance(ROOT / "instances/melange-toy.yaml"), backend="highs")
    assert plan.status == "optimal"
    return json.loads(plan.model_dump_json())


@pytest.mark.parametrize("kind", ["instance", "plan"])
def test_shipped_schema_is_what_the_command_prints(kind):
    shipped = (ROOT / "schemas" / f"{kind}.schema.json").read_text()
    assert shipped == schema_json(kind), f"schemas/{kind}.schema.json is out of date; regenerate: {REGENERATE}"
    r = runner.invoke(app, ["schema", kind])
    assert r.exit_code == 0, r.output
    assert r.stdout == shipped


def test_instance_reference_is_up_to_date():
    shipped = (ROOT / "docs/instance-format.md").read_text()
    assert shipped == instance_markdown(), f"docs/instance-format.md is out of date; regenerate: {REGENERATE}"


def test_reference_gives_every_field_a_unit_column_default_bounds_and_example():
    rows = [ln for ln in instance_markdown().splitlines() if ln.startswith("| `")]
    assert len(rows) > 100
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert len(cells) >= 6 and all(cells[:6]), row  # field, type, unit, default, bounds, example
    assert "| `ttft_ms` | number | ms | required | ≥ 0.01, ≤ 1e+08 |" in instance_markdown()


@pytest.mark.parametrize("path", shipped_instances(), ids=lambda p: p.stem)
def test_every_shipped_instance_validates_against_the_schema(path):
    errors = sorted(validator("instance").iter_errors(read_document(path)), key=str)
    assert not errors, [e.message for e in errors]


def test_the_schema_refuses_what_validate_refuses():
    doc = read_document(ROOT / "instances/melange-toy.yaml")
    for path, value in ((("workload", "classes", 0, "tpot_ms"), -1), (("hardware", "domains", 0, "count"), 0),
                        (("objective",), "speed"), (("workload", "classes", 0, "rate_rps"), True)):
        bad = copy.deepcopy(doc)
        node = bad
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        assert list(validator("instance").iter_errors(bad)), path
    bad = copy.deepcopy(doc)
    bad["hardware"]["domains"][0]["chips_per_domian"] = 4
    assert any("chips_per_domian" in e.message for e in validator("instance").iter_errors(bad))


def test_a_solved_plan_validates_and_describes_itself():
    plan = toy_plan()
    errors = list(validator("plan").iter_errors(plan))
    assert not errors, [e.message for e in errors]
    prov = plan["provenance"]
    inst = load_instance(ROOT / "instances/melange-toy.yaml")
    assert prov["instance_sha256"] == instance_sha256(inst)
    assert (prov["model"], prov["precision_weights"], prov["precision_kv"]) == ("llama-2-7b", "bf16", "bf16")
    assert prov["schema_version"] == validator("plan").schema["x-plan-schema-version"]
    assert prov["tool_version"] not in ("", None)


def test_the_instance_hash_follows_content_not_formatting(tmp_path):
    inst = load_instance(ROOT / "instances/melange-toy.yaml")
    as_json = tmp_path / "toy.json"
    as_json.write_text(json.dumps(read_document(ROOT / "instances/melange-toy.yaml"), indent=4))
    assert instance_sha256(load_instance(as_json)) == instance_sha256(inst)
    other = inst.model_copy(update={"objective": "power"})
    assert instance_sha256(other) != instance_sha256(inst)


def test_canonical_json_leaves_provenance_out():
    from placement.core.plans.plan import Plan

    plan = Plan.model_validate(toy_plan())
    assert "provenance" not in json.loads(plan.canonical_json())
    assert plan.provenance is not None


def test_schema_out_and_markdown_options(tmp_path):
    out = tmp_path / "plan.schema.json"
    assert runner.invoke(app, ["schema", "plan", "--out", str(out)]).exit_code == 0
    assert out.read_text() == schema_json("plan")
    r = runner.invoke(app, ["schema", "plan", "--markdown"])
    assert r.exit_code == 2 and "--markdown" in r.output
    r = runner.invoke(app, ["schema", "chips"])
    assert r.exit_code == 2
