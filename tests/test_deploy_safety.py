"""``placement deploy`` cannot be injected: names read from a plan are validated, shell words quoted, Kubernetes
names and label values valid and distinct, the folder written whole, ``--chips-per-node`` checked.

The shell tests run what deploy generates — ``bench.sh`` and a LeaderWorkerSet's ``sh -c`` — with the programs
they start (aiperf, python3, ray, vllm) replaced by scripts that only log their arguments, in a temporary folder:
a payload such as ``$(touch$IFS./MARK)`` (no space, so no quoting rule that looks for spaces catches it) must
arrive as one literal argument and create nothing.
"""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from placement.cli.app import app
from placement.core.instance.errors import InputError
from placement.core.instance.loading import load_instance
from placement.core.plans.plan import Plan
from placement.deploy import build
from placement.deploy.bench import bench_script
from placement.deploy.engines import engine_args
from placement.deploy.k8s import unit_objects
from placement.deploy.units import units_of

runner = CliRunner()
BERTHA = "instances/bertha-lpddr.yaml"
PAYLOAD = "$(touch$IFS./MARK)"
DNS_1123 = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")


@cache
def _solved(name: str) -> str:
    from placement.core.pipeline.solve import solve

    plan = solve(load_instance(f"instances/{name}.yaml"))
    assert plan.status == "optimal" and plan.verified
    return plan.model_dump_json()


def plan_doc(name: str = "bertha-lpddr") -> dict:
    return json.loads(_solved(name))


def plan_of(doc: dict) -> Plan:
    return Plan.model_validate(doc)


def fake_programs(folder: Path, *names: str) -> dict[str, str]:
    """An environment whose PATH starts with scripts ``names`` that log their arguments (NUL-ended) and succeed."""
    folder.mkdir()
    for name in names:
        script = folder / name
        script.write_text(f'#!/bin/sh\nfor a in "$@"; do printf "%s\\0" "$a"; done >> "{folder}/{name}.log"\n')
        script.chmod(0o755)
    return {**os.environ, "PATH": f"{folder}:{os.environ['PATH']}"}


def logged(folder: Path, name: str) -> list[str]:
    """The arguments program ``name`` of :func:`fake_programs` was called with, every call in turn."""
    return (folder / f"{name}.log").read_text().split("\0")[:-1]


# ---- names read from a plan ------------------------------------------------------------------------------------

NAME_FIELDS = [
    (("classes", 0, "name"), "chat\ntouch x", "classes.0.name"),
    (("instance",), "$(touch x)", "instance"),
    (("pools", 0, "id"), "pool-01;id", "pools.0.id"),
    (("pools", 0, "chip"), "h100\n", "pools.0.chip"),
    (("pools", 0, "traffic_class"), "a b", "pools.0.traffic_class"),
    (("pools", 0, "sites", 0, "site"), "h100-hgx\nx", "pools.0.sites.0.site"),
    (("provenance", "model"), PAYLOAD, "provenance.model"),
    (("provenance", "draft_model"), "x`id`", "provenance.draft_model"),
]


@pytest.mark.parametrize(("path", "value", "field"), NAME_FIELDS, ids=[f for _, _, f in NAME_FIELDS])
def test_a_name_outside_the_instance_rule_is_refused_when_the_plan_is_read(tmp_path, path, value, field):
    doc = plan_doc()
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(doc))
    out = tmp_path / "deploy"
    r = runner.invoke(app, ["deploy", str(plan_path), "--format", "k8s", "--out", str(out)])
    assert r.exit_code == 2, r.output
    assert f"{plan_path}: {field}: string should match pattern" in r.output and "Traceback" not in r.output
    assert not out.exists()


# ---- shell lines ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", [PAYLOAD, "chat\ntouch MARK", "a'b\"c;touch MARK"])
def test_bench_script_keeps_a_hostile_class_name_one_literal_word(tmp_path, name):
    """Below plan validation, the script itself quotes: run it with aiperf and python3 replaced by loggers."""
    plan = plan_of(plan_doc())
    hostile = plan.model_copy(update={"classes": [plan.classes[0].model_copy(update={"name": name})]})
    script = bench_script(hostile, "meta-llama/Llama-3.1-70B-Instruct", {name: (100, 10)}, {})
    assert subprocess.run(["bash", "-n"], input=script, text=True, check=False).returncode == 0
    (tmp_path / "bench.sh").write_text(script)
    env = fake_programs(tmp_path / "bin", "aiperf", "python3")
    r = subprocess.run(["bash", "bench.sh"], cwd=tmp_path, env={**env, "OUT": "art"}, capture_output=True,
                       text=True, check=False)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench.sh", "bin"]  # no MARK, nothing else
    aiperf = logged(tmp_path / "bin", "aiperf")
    assert aiperf[aiperf.index("--artifact-dir") + 1] == f"art/{name}"
    assert logged(tmp_path / "bin", "python3")[:3] == ["-", name, f"art/{name}"]  # check's arguments


def test_the_leader_sh_c_command_of_a_multi_node_replica_runs_the_model_name_as_one_word(tmp_path):
    plan = plan_of(plan_doc())
    unit = next(u for u in units_of(plan, "vllm", kv="fp8", chips_per_node={"h100": 1})
                if u.layout is not None and u.nodes > 1)
    lws, _service = unit_objects(unit, plan.instance, "vllm", engine_args("vllm", unit.layout, PAYLOAD), None)
    command = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    assert command["command"] == ["sh"] and command["args"][0] == "-c"
    line = command["args"][1]
    assert subprocess.run(["sh", "-n", "-c", line], check=False).returncode == 0
    env = fake_programs(tmp_path / "bin", "ray", "vllm")
    r = subprocess.run(["sh", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "MARK").exists()
    assert logged(tmp_path / "bin", "vllm")[:2] == ["serve", PAYLOAD]


# ---- Kubernetes names and labels --------------------------------------------------------------------------------

def _all_docs(files: dict[str, str]) -> list[dict]:
    return [d for rel, text in files.items() if rel.endswith(".yaml") for d in yaml.safe_load_all(text)]


def _label_values(node) -> list[str]:
    """Every label value, node-selector value and affinity value in a document."""
    out: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("labels", "matchLabels", "nodeSelector") and isinstance(value, dict):
                out += [v for v in value.values() if isinstance(v, str)]
            elif key == "matchExpressions":
                out += [v for term in value for v in term["values"]]
            elif key == "acceleratorTypes":
                out += value["labelValues"]
            else:
                out += _label_values(value)
    elif isinstance(node, list):
        for v in node:
            out += _label_values(v)
    return out


def test_names_that_normalise_alike_stay_distinct_objects_and_files():
    doc = plan_doc()
    ids = ("a10g_pool", "a10g-pool", "A10G.pool")
    h100 = [p for p in doc["pools"] if p["chip"] == "h100"][:len(ids)]
    assert len(h100) == len(ids)
    for pool, new in zip(h100, ids, strict=True):
        pool["id"] = new
    plan = plan_of(doc)
    docs = _all_docs(build(plan, fmt="k8s", engine="vllm"))
    names = [d["metadata"]["name"] for d in docs if d["kind"] in ("Deployment", "PlacementPool")]
    assert len(names) == len(set(names)) == len(plan.pools), names
    kinds_names = [(d["kind"], d["metadata"]["name"]) for d in docs]   # a Service shares its Deployment's name
    assert len(kinds_names) == len(set(kinds_names)), kinds_names
    llmd = [rel for rel in build(plan, fmt="llm-d", engine="vllm") if rel.startswith("llm-d/")]
    assert len(llmd) == len({p.id for p in plan.pools if p.chip == "h100"}), llmd  # one release per H100 pool
    assert sum("a10g-pool" in rel for rel in llmd) == len(ids), llmd


def test_names_that_still_collide_are_a_clear_error():
    doc = plan_doc()
    a, b = (p for p in doc["pools"] if p["id"] in ("pool-01", "pool-02"))
    a["id"], a["sites"][0]["site"], a["domains"] = "p-a", "b-c", ["b-c"]
    b["id"], b["sites"][0]["site"], b["domains"] = "p-a-b", "c", ["c"]
    with pytest.raises(InputError, match=r"pools: pool p-a in b-c and pool p-a-b in c would both be the object name"):
        build(plan_of(doc), fmt="k8s", engine="vllm")


def test_long_names_give_valid_and_distinct_names_and_labels():
    doc = plan_doc()
    doc["instance"] = "F" + "x" * 61 + "_y"  # 64 characters: cut at 63 it would end in '_'
    for i, pool in enumerate(doc["pools"]):
        pool["id"] = f"pool-{i}-" + "a" * 100
    plan = plan_of(doc)
    for fmt in ("k8s", "dynamo", "llm-d"):
        docs = _all_docs(build(plan, fmt=fmt, engine="vllm"))
        names = [(d["kind"], d["metadata"]["name"]) for d in docs if "metadata" in d]
        assert len(names) == len(set(names)) and all(len(n) <= 63 and DNS_1123.fullmatch(n) for _, n in names), names
        values = [v for d in docs for v in _label_values(d)]
        assert values and all(len(v) <= 63 and LABEL_VALUE.fullmatch(v) for v in values), values


# ---- the folder -------------------------------------------------------------------------------------------------

def _deploy(tmp_path: Path, out: Path, fmt: str, name: str = "bertha-lpddr", *extra: str):
    plan_path = tmp_path / f"{name}.json"
    plan_path.write_text(_solved(name))
    return runner.invoke(app, ["deploy", str(plan_path), "--format", fmt, "--out", str(out), *extra])


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_second_deploy_replaces_the_folder_leaving_no_stale_file(tmp_path):
    out = tmp_path / "deploy"
    assert _deploy(tmp_path, out, "k8s").exit_code == 0
    assert "k8s.yaml" in _tree(out)
    r = _deploy(tmp_path, out, "llm-d")
    assert r.exit_code == 0, r.output
    files = set(_tree(out))
    assert "k8s.yaml" not in files and {"bench.sh", "README.md", "vendor-neutral.yaml"} <= files
    assert all(f.startswith("llm-d/") for f in files - {"bench.sh", "README.md", "vendor-neutral.yaml", "inference-pools.yaml"})
    assert os.access(out / "bench.sh", os.X_OK)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bertha-lpddr.json", "deploy"]  # no temporary folder


def test_a_folder_with_files_deploy_did_not_write_is_refused_untouched(tmp_path):
    out = tmp_path / "deploy"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    r = _deploy(tmp_path, out, "k8s")
    assert r.exit_code == 2 and "--out" in r.output and "'notes.txt'" in r.output, r.output
    assert _tree(out) == {"notes.txt": b"mine"}


def test_a_full_disk_leaves_the_previous_folder_as_it_was(tmp_path, monkeypatch):
    out = tmp_path / "deploy"
    assert _deploy(tmp_path, out, "k8s").exit_code == 0
    before = _tree(out)
    real, calls = os.fsync, []

    def full(fd):
        calls.append(fd)
        if len(calls) >= 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd)

    monkeypatch.setattr(os, "fsync", full)
    r = _deploy(tmp_path, out, "dynamo")
    assert r.exit_code == 2 and "No space left on device" in r.output, r.output
    assert _tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bertha-lpddr.json", "deploy"]


def test_chips_per_node_must_divide_a_replica_wider_than_a_node(tmp_path):
    plan = json.loads(_solved("trainium-cerebras"))
    widths = [p["chips_per_replica"] for p in plan["pools"] if p["chip"] == "trainium3"]
    assert 4 in widths and set(widths) <= {2, 4}  # the plan's Trainium3 replicas: 3 divides none of them
    r = _deploy(tmp_path, tmp_path / "three", "k8s", "trainium-cerebras", "--chips-per-node", "trainium3=3")
    assert r.exit_code == 2, r.output
    assert "--chips-per-node: trainium3: 3 chips per node do not divide a replica" in r.output
    assert not (tmp_path / "three").exists()
    r = _deploy(tmp_path, tmp_path / "two", "k8s", "trainium-cerebras", "--chips-per-node", "trainium3=2")
    assert r.exit_code == 0, r.output
    sizes = [d["spec"]["leaderWorkerTemplate"]["size"] for d in yaml.safe_load_all((tmp_path / "two/k8s.yaml")
                                                                                   .read_text())
             if d["kind"] == "LeaderWorkerSet"]
    assert sizes == [2] * widths.count(4)  # a 4-chip replica spans two 2-chip nodes; a 2-chip one fits one


def test_an_image_that_is_not_an_image_reference_is_refused(tmp_path):
    r = _deploy(tmp_path, tmp_path / "out", "k8s", "bertha-lpddr", "--image", "vllm/vllm-openai:latest\nx: y")
    assert r.exit_code == 2 and "--image" in r.output, r.output
