"""A plan's provenance is verified: ``check`` compares its model, draft, precisions and framework with the instance
(exit 5 naming the field), refuses invalid values (exit 2 naming the field) and warns of another tool version;
``deploy`` and ``report`` refuse an ``--instance`` the plan does not answer."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from placement.cli.app import app
from placement.core.instance.loading import load_instance

runner = CliRunner()
BERTHA = "instances/bertha-lpddr.yaml"  # llama-3.1-70b, no draft, FP8 weights and KV, BF16 activations, pooled


@cache
def _solved() -> str:
    from placement.core.pipeline.solve import solve

    plan = solve(load_instance(BERTHA))
    assert plan.status == "optimal" and plan.verified and plan.provenance is not None
    return plan.model_dump_json()


def write_plan(tmp_path: Path, **provenance) -> Path:
    """The bertha plan with its provenance fields set to ``provenance``."""
    doc = json.loads(_solved())
    doc["provenance"].update(provenance)
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc))
    return path


#: (field, value, what the error says was expected)
INVALID = [("model", "$(touch x)", "should match pattern"),
           ("model", "no-such-model", "neither a catalogue model nor the instance's"),
           ("draft_model", "no-such-draft", "neither a catalogue model nor the instance's"),
           ("precision_weights", "fp3", "input should be 'fp4', 'mxfp4', 'fp8' or 'bf16'"),
           ("precision_kv", "int4", "input should be 'fp4', 'fp8' or 'bf16'"),
           ("precision_activations", "fp4", "input should be 'fp8' or 'bf16'"),
           ("schema_version", "9", "input should be '1', '2' or '3'"),
           ("tool_version", "0.1.0; rm -rf ~", "should match pattern"), ("tool_version", "", "should match pattern"),
           ("framework", "tgi", "unknown serving framework 'tgi'")]
MISMATCHED = [("model", "llama-3.1-8b"), ("draft_model", "llama-3.2-1b"), ("precision_weights", "bf16"),
              ("precision_attention", "fp4"), ("precision_kv", "bf16"), ("precision_activations", "fp8"),
              ("framework", "vllm")]


@pytest.mark.parametrize(("field", "value", "expected"), INVALID, ids=[f"{f}={v}" for f, v, _ in INVALID])
def test_an_invalid_provenance_value_is_an_input_error_naming_the_field(tmp_path, field, value, expected):
    plan = write_plan(tmp_path, **{field: value})
    r = runner.invoke(app, ["check", BERTHA, str(plan)])
    assert r.exit_code == 2, r.output
    assert f"{plan}: provenance.{field}: " in r.output and expected in r.output and "Traceback" not in r.output


@pytest.mark.parametrize(("field", "value"), MISMATCHED, ids=[f"{f}={v}" for f, v in MISMATCHED])
def test_a_provenance_that_is_not_the_instances_fails_verification_naming_the_field(tmp_path, field, value):
    r = runner.invoke(app, ["check", BERTHA, str(write_plan(tmp_path, **{field: value}))])
    assert r.exit_code == 5, r.output
    assert f"violation: provenance.{field}: the plan says {value!r}, the instance " in r.output


def test_another_tool_version_is_a_warning_when_the_plan_re_verifies(tmp_path):
    r = runner.invoke(app, ["check", BERTHA, str(write_plan(tmp_path, tool_version="0.0.9.dev3"))])
    assert r.exit_code == 0, r.output
    assert "warning: provenance.tool_version: written by another placement version ('0.0.9.dev3'" in r.output


def test_deploy_with_its_instance_refuses_a_plan_whose_model_was_edited(tmp_path):
    out = tmp_path / "deploy"
    r = runner.invoke(app, ["deploy", str(write_plan(tmp_path, model="llama-3.1-8b")), "--format", "k8s",
                            "--out", str(out), "--instance", BERTHA])
    assert r.exit_code == 5, r.output
    assert "does not verify against" in r.output and "provenance.model" in r.output
    assert not out.exists()


def test_deploy_with_its_instance_refuses_a_plan_that_does_not_verify(tmp_path):
    doc = json.loads(_solved())
    doc["pools"][0]["replicas"] += 1
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(doc))
    out = tmp_path / "deploy"
    r = runner.invoke(app, ["deploy", str(plan), "--format", "k8s", "--out", str(out), "--instance", BERTHA])
    assert r.exit_code == 5 and "pool pool-01" in r.output, r.output
    assert not out.exists()


def test_deploy_without_an_instance_serves_only_a_catalogue_model(tmp_path):
    out = tmp_path / "deploy"
    r = runner.invoke(app, ["deploy", str(write_plan(tmp_path, model="my-own-model")), "--format", "k8s",
                            "--out", str(out)])
    assert r.exit_code == 2 and "provenance.model" in r.output and "--instance" in r.output, r.output
    assert not out.exists()


def _edited_instance(tmp_path: Path) -> Path:
    doc = yaml.safe_load(Path(BERTHA).read_text())
    doc["workload"]["classes"][0]["rate_rps"] *= 2
    path = tmp_path / "bertha-lpddr.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_report_refuses_an_instance_the_plan_was_not_solved_for(tmp_path):
    html = tmp_path / "plan.html"
    r = runner.invoke(app, ["report", str(write_plan(tmp_path)), "--html", str(html),
                            "--instance", str(_edited_instance(tmp_path))])
    assert r.exit_code == 2, r.output
    assert "provenance.instance_sha256: plan was solved for another version" in r.output
    assert not html.exists()
